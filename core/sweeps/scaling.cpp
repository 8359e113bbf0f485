#include "core/sweeps/scaling.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace waferscope::core::sweeps {

using engine::RunOptions;
using engine::RunResult;

namespace {

nlohmann::json number(double value)
{
    return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

} // namespace

Expected<ScalingSweep> scale(const ModelGraph& graph, const SystemSpec& system, const ScalingOptions& options,
    const engine::Calibration& calibration)
{
    if (options.numCsx.empty())
        return Diagnostic { "--num_csx", 0, 0, "give at least one system count (1,2,4,...)" };
    if (options.mode == RunMode::Inference)
        return Diagnostic { "--mode", 0, 0, "the scaling sweep is for training and eval runs" };
    const int limit = system.swarmx.supported ? system.swarmx.maxSystems : 1;
    for (int count : options.numCsx)
        if (count < 1 || count > limit)
            return Diagnostic { "--num_csx", 0, 0,
                "each system count must be between 1 and " + std::to_string(limit) + " for " + system.displayName
                    + ", got " + std::to_string(count)
                    + (system.swarmx.supported ? " (SwarmX joins at most " + std::to_string(limit) + " systems)"
                                               : " (it has no SwarmX, so it trains on one system only)") };
    const auto runAt = [&](int count) -> Expected<RunResult> {
        CompileOptions compileOptions;
        compileOptions.mode = RunMode::Train;
        compileOptions.execution = options.execution;
        compileOptions.numSystems = count;
        Expected<ExecutionPlan> plan = compile(graph, system, compileOptions);
        if (!plan)
            return plan.error();
        if (options.cancelled && options.cancelled())
            return Diagnostic { "<sweep>", 0, 0, "cancelled", Diagnostic::Kind::Internal };
        RunOptions runOptions;
        runOptions.mode = options.mode;
        runOptions.globalBatch = options.globalBatch;
        runOptions.cancelled = options.cancelled;
        return engine::run(*plan, graph, system, runOptions, calibration);
    };
    const bool baselineListed = std::find(options.numCsx.begin(), options.numCsx.end(), 1) != options.numCsx.end();
    const int jobs = int(options.numCsx.size()) + (baselineListed ? 0 : 1);
    int done = 0;
    const auto advance = [&] {
        if (options.progress)
            options.progress(++done, jobs);
    };
    ScalingSweep sweep;
    sweep.system = system.name;
    Expected<RunResult> baseline = runAt(1);
    if (!baseline)
        return baseline.error();
    advance();
    sweep.baselineSamplesPerS = baseline->metrics.samplesPerS;
    sweep.globalBatch = options.globalBatch > 0 ? options.globalBatch : graph.config.batchSize;
    for (int count : options.numCsx) {
        Expected<RunResult> result = count == 1 ? baseline : runAt(count);
        if (!result)
            return result.error();
        if (count != 1)
            advance();
        ScalingPoint point;
        point.numCsx = count;
        point.samplesPerS = result->metrics.samplesPerS;
        point.speedup = point.samplesPerS / sweep.baselineSamplesPerS;
        point.efficiency = point.speedup / count;
        point.stepTimeS = result->metrics.stepTimeS;
        point.bottleneck = result->metrics.bottleneck;
        point.execution = result->metrics.execution;
        point.microBatch = result->metrics.microBatch;
        sweep.points.push_back(point);
    }
    return sweep;
}

std::string scalingToJson(const ScalingSweep& sweep, int indent)
{
    nlohmann::json points = nlohmann::json::array();
    for (const ScalingPoint& point : sweep.points)
        points.push_back({ { "num_csx", point.numCsx }, { "samples_per_s", number(point.samplesPerS) },
            { "speedup", number(point.speedup) }, { "efficiency", number(point.efficiency) },
            { "bottleneck", toString(point.bottleneck) }, { "step_time_s", number(point.stepTimeS) },
            { "execution", toString(point.execution) }, { "micro_batch_size", point.microBatch } });
    nlohmann::json json;
    json["system"] = sweep.system;
    json["global_batch"] = sweep.globalBatch;
    json["baseline_samples_per_s"] = number(sweep.baselineSamplesPerS);
    json["points"] = std::move(points);
    return json.dump(indent);
}

} // namespace waferscope::core::sweeps
