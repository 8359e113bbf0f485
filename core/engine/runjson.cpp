// `waferscope-cli run --json` and `scale --json`: the contracts of issue 6.
#include "core/engine/engine.h"
#include "core/engine/scaling.h"

#include <nlohmann/json.hpp>

namespace waferscope::core::engine {

namespace {

nlohmann::json number(double value)
{
    return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

} // namespace

std::string metricsToJson(const Metrics& m, int indent)
{
    nlohmann::json json;
    json["mode"] = toString(m.mode);
    json["execution"] = toString(m.execution);
    json["system"] = m.system;
    json["num_csx"] = m.numCsx;
    json["num_systems"] = m.numSystems;
    json["step_time_s"] = number(m.stepTimeS);
    json["samples_per_s"] = number(m.samplesPerS);
    json["tokens_per_step"] = number(m.tokensPerStep);
    json["tokens_per_s"] = number(m.tokensPerS);
    json["time_to_first_token_s"]
        = m.mode == RunKind::Inference ? number(m.timeToFirstTokenS) : nlohmann::json(nullptr);
    json["mfu"] = number(m.mfu);
    json["utilization"] = { { "compute", number(m.utilization.compute) }, { "fabric", number(m.utilization.fabric) },
        { "io", number(m.utilization.io) }, { "memoryx", number(m.utilization.memoryx) },
        { "swarmx", number(m.utilization.swarmx) } };
    json["bottleneck"] = toString(m.bottleneck);
    nlohmann::json layers = nlohmann::json::array();
    for (const LayerMetrics& layer : m.layers)
        layers.push_back({ { "name", layer.name }, { "kind", layer.kind }, { "params", layer.params },
            { "flops", number(layer.flops) }, { "time_s", number(layer.timeS) },
            { "utilization", number(layer.utilization) }, { "bound", toString(layer.bound) } });
    json["layers"] = std::move(layers);
    // Beyond the contract: what a reader needs to check the figures.
    json["model_flops_per_step"] = number(m.modelFlopsPerStep);
    json["hardware_flops_per_step"] = number(m.hardwareFlopsPerStep);
    json["peak_flops_per_s"] = number(m.peakFlopsPerS);
    json["streamed_bytes_per_step"] = number(m.streamedBytesPerStep);
    json["checkpoint_strategy"]
        = m.checkpointStrategy.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.checkpointStrategy);
    json["checkpoint_every"]
        = m.checkpointStrategy.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.checkpointEvery);
    json["recompute_flops_per_step"] = number(m.recomputeFlopsPerStep);
    json["checkpoint_bytes_per_step"] = number(m.checkpointBytesPerStep);
    json["stream_bytes_per_s"] = number(m.linkBytesPerS);
    json["stream_bound"] = toString(m.linkBound);
    json["step_times_s"] = m.stepTimesS;
    if (m.mode == RunKind::Inference) {
        json["users"] = m.users;
        json["prompt_tokens"] = m.promptTokens;
        json["aggregate_tokens_per_s"] = number(m.aggregateTokensPerS);
    } else {
        json["batch_per_system"] = m.batchPerSystem;
        json["micro_batch_size"] = m.microBatch;
        json["micro_batches_per_step"] = m.microBatchesPerStep;
    }
    json["notes"] = m.notes;
    return json.dump(indent);
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

} // namespace waferscope::core::engine
