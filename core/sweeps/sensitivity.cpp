#include "core/sweeps/sensitivity.h"

#include <nlohmann/json.hpp>

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <optional>
#include <type_traits>

namespace waferscope::core::sweeps {

using engine::Calibration;
using engine::CompiledRun;
using engine::RunOptions;
using engine::RunResult;

namespace {

// A preset fact the engine reads, by its dotted path: read it, or set it on a copy.
struct Knob {
    std::function<double(const SystemSpec&)> get;
    std::function<void(SystemSpec&, double)> set;
};

// `field(spec)` names the member for a const or a mutable spec; counts are rounded and kept at
// `minimum` or above.
template <typename Field>
Knob knob(Field field, int minimum = 1)
{
    return { [field](const SystemSpec& s) { return double(field(s)); },
        [field, minimum](SystemSpec& s, double v) {
            auto& member = field(s);
            using T = std::remove_reference_t<decltype(member)>;
            if constexpr (std::is_integral_v<T>) {
                member = std::max(T(minimum), T(std::lround(v)));
            } else {
                (void)minimum; // counts only
                member = v;
            }
        } };
}

const std::map<std::string, Knob>& factKnobs()
{
    static const std::map<std::string, Knob> knobs {
        { "wafer.clock_hz", knob([](auto& s) -> auto& { return s.wafer.clockHz; }) },
        { "wafer.hop_latency_cycles", knob([](auto& s) -> auto& { return s.wafer.hopLatencyCycles; }) },
        { "wafer.fmac_per_pe_per_cycle", knob([](auto& s) -> auto& { return s.wafer.fmacPerPePerCycle; }) },
        { "system.io_bytes_per_s", knob([](auto& s) -> auto& { return s.ioBytesPerS; }) },
        { "system.inter_system_latency_s", knob([](auto& s) -> auto& { return s.interSystemLatencyS; }) },
        { "memoryx.bandwidth_bytes_per_s", knob([](auto& s) -> auto& { return s.memoryx.bandwidthBytesPerS; }) },
        { "memoryx.dram_bandwidth_bytes_per_s",
            knob([](auto& s) -> auto& { return s.memoryx.dramBandwidthBytesPerS; }) },
        { "memoryx.flash_bandwidth_bytes_per_s",
            knob([](auto& s) -> auto& { return s.memoryx.flashBandwidthBytesPerS; }) },
        { "memoryx.optimizer_params_per_s", knob([](auto& s) -> auto& { return s.memoryx.optimizerParamsPerS; }) },
        { "memoryx.bytes_per_param", knob([](auto& s) -> auto& { return s.memoryx.bytesPerParam; }) },
        { "swarmx.fan_out",
            knob(
                [](auto& s) -> auto& { return s.swarmx.fanOut; }, 2) },
        { "swarmx.link_bytes_per_s", knob([](auto& s) -> auto& { return s.swarmx.linkBytesPerS; }) },
        { "swarmx.level_latency_s", knob([](auto& s) -> auto& { return s.swarmx.levelLatencyS; }) },
    };
    return knobs;
}

double* calibrationField(Calibration& calibration, const std::string& name)
{
    if (name == "reduce_add_cycles")
        return &calibration.reduceAddCycles;
    if (name == "stream_marker_cycles")
        return &calibration.streamMarkerCycles;
    if (name == "region_launch_cycles")
        return &calibration.regionLaunchCycles;
    if (name == "acceptance_rate")
        return &calibration.speculation.acceptanceRate;
    return nullptr;
}

} // namespace

std::vector<Factor> rangedFactors(const SystemSpec& system, const Calibration& calibration)
{
    std::vector<Factor> factors;
    for (const auto& [path, provenance] : system.provenance) {
        const auto knob = factKnobs().find(path);
        if (!provenance.hasRange || knob == factKnobs().end() || provenance.rangeLow == provenance.rangeHigh)
            continue;
        Factor factor;
        factor.name = system.name + "." + path;
        factor.reason = provenance.rangeReason;
        factor.value = knob->second.get(system);
        factor.low = provenance.rangeLow;
        factor.high = provenance.rangeHigh;
        factor.apply = [set = knob->second.set](SystemSpec& s, Calibration&, double v) { set(s, v); };
        factors.push_back(std::move(factor));
    }
    for (const auto& [name, range] : calibration.ranges) {
        Calibration copy = calibration;
        double* field = calibrationField(copy, name);
        if (!field || range.low == range.high)
            continue;
        Factor factor;
        factor.name = "calibration." + name;
        factor.reason = range.reason;
        factor.value = *field;
        factor.low = range.low;
        factor.high = range.high;
        factor.apply = [key = name](SystemSpec&, Calibration& c, double v) { *calibrationField(c, key) = v; };
        factors.push_back(std::move(factor));
    }
    return factors;
}

Expected<Sensitivity> sweep(const std::string& figureName, const FigureFunction& figure, const SystemSpec& system,
    const Calibration& calibration, const SweepOptions& options)
{
    Expected<double> baseline = figure(system, calibration);
    if (!baseline)
        return baseline.error();
    const std::vector<Factor> factors = rangedFactors(system, calibration);
    const int runs = int(factors.size()) * 2;
    std::vector<double> values(static_cast<std::size_t>(runs), 0.0);
    std::vector<std::optional<Diagnostic>> errors(static_cast<std::size_t>(runs));
    std::atomic<int> done { 0 };
    std::atomic<bool> stop { false };
    tbb::parallel_for(0, runs, [&](int run) {
        if (stop.load() || (options.cancelled && options.cancelled())) {
            stop = true;
            return;
        }
        const Factor& factor = factors[std::size_t(run / 2)];
        SystemSpec varied = system;
        Calibration constants = calibration;
        factor.apply(varied, constants, run % 2 == 0 ? factor.low : factor.high);
        Expected<double> value = figure(varied, constants);
        if (value)
            values[std::size_t(run)] = *value;
        else
            errors[std::size_t(run)] = value.error();
        const int finished = ++done;
        if (options.progress)
            options.progress(finished, runs);
    });
    if (stop.load())
        return Diagnostic { "sensitivity", 0, 0, "cancelled" };
    Sensitivity result;
    result.figure = figureName;
    result.baseline = result.low = result.high = *baseline;
    for (std::size_t i = 0; i < factors.size(); ++i) {
        for (std::size_t side = 0; side < 2; ++side)
            if (errors[2 * i + side]) {
                Diagnostic error = *errors[2 * i + side];
                error.message = factors[i].name + " at its " + (side == 0 ? "low" : "high") + ": " + error.message;
                return error;
            }
        const Factor& factor = factors[i];
        FactorEffect effect { factor.name, factor.reason, factor.value, factor.low, factor.high, values[2 * i],
            values[2 * i + 1] };
        result.low = std::min({ result.low, effect.figureAtLow, effect.figureAtHigh });
        result.high = std::max({ result.high, effect.figureAtLow, effect.figureAtHigh });
        result.factors.push_back(std::move(effect));
    }
    std::stable_sort(result.factors.begin(), result.factors.end(),
        [](const FactorEffect& a, const FactorEffect& b) { return a.impact() > b.impact(); });
    return result;
}

Expected<Sensitivity> runSensitivity(const ModelGraph& graph, const SystemSpec& system, const CompileOptions& compile,
    const RunOptions& run, const Calibration& calibration, const SweepOptions& options)
{
    const bool inference = run.mode == RunMode::Inference;
    // The plan (and a draft beside it) as the baseline compiles it; each factor varies the run on it.
    const Expected<CompiledRun> compiled = engine::compileRun(graph, system, compile, run, calibration);
    if (!compiled)
        return compiled.error();
    const FigureFunction figure = [&](const SystemSpec& varied, const Calibration& constants) -> Expected<double> {
        Expected<RunResult> result = engine::run(compiled->plan, graph, varied, compiled->options, constants);
        if (!result)
            return result.error();
        return inference ? result->metrics.tokensPerS : result->metrics.samplesPerS;
    };
    return sweep(inference ? "tokens_per_s" : "samples_per_s", figure, system, calibration, options);
}

std::string sensitivityToJson(const Sensitivity& result)
{
    nlohmann::ordered_json json;
    json["figure"] = result.figure;
    json["baseline"] = result.baseline;
    json["low"] = result.low;
    json["high"] = result.high;
    nlohmann::ordered_json factors = nlohmann::ordered_json::array();
    for (const FactorEffect& f : result.factors)
        factors.push_back({ { "name", f.name }, { "reason", f.reason }, { "value", f.value },
            { "low_value", f.lowValue }, { "high_value", f.highValue }, { "figure_at_low", f.figureAtLow },
            { "figure_at_high", f.figureAtHigh } });
    json["factors"] = std::move(factors);
    return json.dump(2);
}

} // namespace waferscope::core::sweeps
