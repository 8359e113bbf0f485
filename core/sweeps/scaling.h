#pragma once

#include "core/common/expected.h"
#include "core/compiler/compiler.h"
#include "core/engine/engine.h"

#include <functional>
#include <string>
#include <vector>

namespace waferscope::core::sweeps {

// A sweep of runs (core/sweeps): the engine's runs of one model, one option or fact varied a run.
// Below core/report, which holds their results, and core/study, whose stages they are.

// Training throughput against the number of systems: each point is compiled and run as its
// own job (the micro-batch and the SwarmX tree change with the count), so where weight
// streaming stops hiding behind compute comes out of the runs, not out of a formula.
struct ScalingPoint {
    int numCsx = 1;
    double samplesPerS = 0.0;
    double speedup = 0.0; // against one system
    double efficiency = 0.0; // speedup / numCsx
    double stepTimeS = 0.0;
    Bound bottleneck = Bound::None;
    ExecutionMode execution = ExecutionMode::Pipelined;
    std::int64_t microBatch = 0;
};

struct ScalingSweep {
    std::string system;
    std::int64_t globalBatch = 0;
    double baselineSamplesPerS = 0.0; // one system
    std::vector<ScalingPoint> points;
};

struct ScalingOptions {
    std::vector<int> numCsx; // ascending, each >= 1
    RunMode mode = RunMode::Train;
    ExecutionChoice execution = ExecutionChoice::Auto;
    std::int64_t globalBatch = 0; // 0: the config's batch_size
    // Called on the caller's thread after each job of the sweep (the baseline counts as one).
    std::function<void(int done, int total)> progress;
    // Asked before each run of the sweep; returning true ends it with the error "cancelled".
    std::function<bool()> cancelled;
};

// Errors: an empty or invalid list, a count beyond the generation's cluster, a model that
// cannot be mapped (the Diagnostic of the compiler).
Expected<ScalingSweep> scale(const ModelGraph& graph, const SystemSpec& system, const ScalingOptions& options,
    const engine::Calibration& calibration = engine::builtinCalibration());

// `waferscope-cli scale --json` (the contract of issue 6).
std::string scalingToJson(const ScalingSweep& sweep, int indent = -1);

} // namespace waferscope::core::sweeps
