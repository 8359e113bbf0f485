#pragma once

// What a result depends on: every hardware value and calibration constant that carries a
// plausible range (optional "range" keys in the presets and the calibration file) varied alone
// across it, and the effect on one headline figure. `waferscope-cli sensitivity`, the validation
// ranges and the GUI's tornado chart use it.
#include "core/common/expected.h"
#include "core/compiler/compiler.h"
#include "core/engine/calibration.h"
#include "core/engine/engine.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"

#include <functional>
#include <string>
#include <vector>

namespace waferscope::core::sweeps {

// A value that can be varied: "cs2.swarmx.level_latency_s", "calibration.region_launch_cycles".
struct Factor {
    std::string name;
    std::string reason; // why it spans its range
    double value = 0.0;
    double low = 0.0;
    double high = 0.0;
    std::function<void(SystemSpec&, engine::Calibration&, double)> apply; // sets it on copies
};

// The ranged factors of `system` (facts the engine reads) and of `calibration`.
std::vector<Factor> rangedFactors(const SystemSpec& system, const engine::Calibration& calibration);

struct FactorEffect {
    std::string name;
    std::string reason;
    double value = 0.0;
    double lowValue = 0.0;
    double highValue = 0.0;
    double figureAtLow = 0.0;
    double figureAtHigh = 0.0;
    double impact() const
    {
        return figureAtHigh > figureAtLow ? figureAtHigh - figureAtLow : figureAtLow - figureAtHigh;
    }
};

struct Sensitivity {
    std::string figure; // "samples_per_s" (training, eval) or "tokens_per_s" (inference, per user)
    double baseline = 0.0;
    std::vector<FactorEffect> factors; // by impact, largest first
    double low = 0.0; // the smallest figure over the sweep (baseline included)
    double high = 0.0;
};

// A figure computed from a system and a calibration (a run's headline, a validation figure).
using FigureFunction = std::function<Expected<double>(const SystemSpec&, const engine::Calibration&)>;

struct SweepOptions {
    std::function<bool()> cancelled; // polled between runs, from the worker threads
    std::function<void(int done, int total)> progress; // after each run, from a worker thread
};

// Each factor alone at its low and its high, in parallel on the thread pool. Errors: the
// baseline's, a failed variant's (named), or "cancelled".
Expected<Sensitivity> sweep(const std::string& figureName, const FigureFunction& figure, const SystemSpec& system,
    const engine::Calibration& calibration, const SweepOptions& options = {});

// The headline figure of compiling and running `graph` with `compile` and `run` options; the plan
// (and a speculative profile's draft) is compiled once, for the baseline, and every factor varies
// the run on it.
Expected<Sensitivity> runSensitivity(const ModelGraph& graph, const SystemSpec& system, const CompileOptions& compile,
    const engine::RunOptions& run, const engine::Calibration& calibration, const SweepOptions& options = {});

// `waferscope-cli sensitivity --json`: {"figure", "baseline", "low", "high", "factors": [{name,
// reason, value, low_value, high_value, figure_at_low, figure_at_high}]}.
std::string sensitivityToJson(const Sensitivity& result);

} // namespace waferscope::core::sweeps
