#include "core/engine/sensitivity.h"

#include <nlohmann/json.hpp>

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <optional>

namespace waferscope::core::engine {

namespace {

using Setter = std::function<void(SystemSpec&, double)>;

// The preset facts the engine reads that a range may vary, by their dotted path.
const std::map<std::string, Setter>& factSetters()
{
    static const std::map<std::string, Setter> setters {
        { "wafer.clock_hz", [](SystemSpec& s, double v) { s.wafer.clockHz = v; } },
        { "wafer.hop_latency_cycles",
            [](SystemSpec& s, double v) { s.wafer.hopLatencyCycles = std::max(1, int(std::lround(v))); } },
        { "wafer.fmac_per_pe_per_cycle",
            [](SystemSpec& s, double v) { s.wafer.fmacPerPePerCycle = std::max(1, int(std::lround(v))); } },
        { "system.io_bytes_per_s", [](SystemSpec& s, double v) { s.ioBytesPerS = v; } },
        { "system.inter_system_latency_s", [](SystemSpec& s, double v) { s.interSystemLatencyS = v; } },
        { "memoryx.bandwidth_bytes_per_s", [](SystemSpec& s, double v) { s.memoryx.bandwidthBytesPerS = v; } },
        { "memoryx.dram_bandwidth_bytes_per_s", [](SystemSpec& s, double v) { s.memoryx.dramBandwidthBytesPerS = v; } },
        { "memoryx.flash_bandwidth_bytes_per_s",
            [](SystemSpec& s, double v) { s.memoryx.flashBandwidthBytesPerS = v; } },
        { "memoryx.optimizer_params_per_s", [](SystemSpec& s, double v) { s.memoryx.optimizerParamsPerS = v; } },
        { "memoryx.bytes_per_param", [](SystemSpec& s, double v) { s.memoryx.bytesPerParam = v; } },
        { "swarmx.fan_out", [](SystemSpec& s, double v) { s.swarmx.fanOut = std::max(2, int(std::lround(v))); } },
        { "swarmx.link_bytes_per_s", [](SystemSpec& s, double v) { s.swarmx.linkBytesPerS = v; } },
        { "swarmx.level_latency_s", [](SystemSpec& s, double v) { s.swarmx.levelLatencyS = v; } },
    };
    return setters;
}

double* calibrationField(Calibration& calibration, const std::string& name)
{
    if (name == "reduce_add_cycles")
        return &calibration.reduceAddCycles;
    if (name == "stream_marker_cycles")
        return &calibration.streamMarkerCycles;
    if (name == "region_launch_cycles")
        return &calibration.regionLaunchCycles;
    return nullptr;
}

} // namespace

std::vector<Factor> rangedFactors(const SystemSpec& system, const Calibration& calibration)
{
    std::vector<Factor> factors;
    for (const auto& [path, provenance] : system.provenance) {
        const auto setter = factSetters().find(path);
        if (!provenance.hasRange || setter == factSetters().end() || provenance.rangeLow == provenance.rangeHigh)
            continue;
        Factor factor;
        factor.name = system.name + "." + path;
        factor.reason = provenance.rangeReason;
        factor.low = provenance.rangeLow;
        factor.high = provenance.rangeHigh;
        factor.apply = [set = setter->second](SystemSpec& s, Calibration&, double v) { set(s, v); };
        factors.push_back(std::move(factor));
    }
    // The current values, from the fields the setters write.
    for (Factor& factor : factors) {
        const std::string path = factor.name.substr(system.name.size() + 1);
        const SystemSpec& s = system;
        const std::map<std::string, double> values {
            { "wafer.clock_hz", s.wafer.clockHz },
            { "wafer.hop_latency_cycles", double(s.wafer.hopLatencyCycles) },
            { "wafer.fmac_per_pe_per_cycle", double(s.wafer.fmacPerPePerCycle) },
            { "system.io_bytes_per_s", s.ioBytesPerS },
            { "system.inter_system_latency_s", s.interSystemLatencyS },
            { "memoryx.bandwidth_bytes_per_s", s.memoryx.bandwidthBytesPerS },
            { "memoryx.dram_bandwidth_bytes_per_s", s.memoryx.dramBandwidthBytesPerS },
            { "memoryx.flash_bandwidth_bytes_per_s", s.memoryx.flashBandwidthBytesPerS },
            { "memoryx.optimizer_params_per_s", s.memoryx.optimizerParamsPerS },
            { "memoryx.bytes_per_param", s.memoryx.bytesPerParam },
            { "swarmx.fan_out", double(s.swarmx.fanOut) },
            { "swarmx.link_bytes_per_s", s.swarmx.linkBytesPerS },
            { "swarmx.level_latency_s", s.swarmx.levelLatencyS },
        };
        factor.value = values.at(path);
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
    const bool inference = run.mode == RunKind::Inference;
    const FigureFunction figure = [&](const SystemSpec& varied, const Calibration& constants) -> Expected<double> {
        Expected<ExecutionPlan> plan = core::compile(graph, varied, compile);
        if (!plan)
            return plan.error();
        Expected<RunResult> result = engine::run(*plan, graph, varied, run, constants);
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

} // namespace waferscope::core::engine
