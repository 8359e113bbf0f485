// No header of its own: defines metricsToJson, declared in engine.h beside the Metrics it prints.
// `waferscope-cli run --json`: the contract of issue 6.
#include "core/engine/engine.h"

#include <nlohmann/json.hpp>

namespace waferscope::core::engine {

namespace {

nlohmann::json number(double value)
{
    return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

} // namespace

std::string metricsToJson(const Metrics& metrics, int indent)
{
    nlohmann::json json;
    json["mode"] = toString(metrics.mode);
    json["execution"] = toString(metrics.execution);
    json["system"] = metrics.system;
    json["num_csx"] = metrics.numCsx;
    json["num_systems"] = metrics.numSystems;
    json["step_time_s"] = number(metrics.stepTimeS);
    json["samples_per_s"] = number(metrics.samplesPerS);
    json["tokens_per_step"] = number(metrics.tokensPerStep);
    json["tokens_per_s"] = number(metrics.tokensPerS);
    json["time_to_first_token_s"]
        = metrics.mode == RunMode::Inference ? number(metrics.timeToFirstTokenS) : nlohmann::json(nullptr);
    json["mfu"] = number(metrics.mfu);
    json["utilization"] = { { "compute", number(metrics.utilization.compute) },
        { "fabric", number(metrics.utilization.fabric) }, { "io", number(metrics.utilization.io) },
        { "memoryx", number(metrics.utilization.memoryx) }, { "swarmx", number(metrics.utilization.swarmx) } };
    json["bottleneck"] = toString(metrics.bottleneck);
    nlohmann::json layers = nlohmann::json::array();
    for (const LayerMetrics& layer : metrics.layers)
        layers.push_back({ { "name", layer.name }, { "kind", toString(layer.kind) }, { "params", layer.params },
            { "flops", number(layer.flops) }, { "time_s", number(layer.timeS) },
            { "utilization", number(layer.utilization) }, { "bound", toString(layer.bound) } });
    json["layers"] = std::move(layers);
    // Beyond the contract: what a reader needs to check the figures.
    json["model_flops_per_step"] = number(metrics.modelFlopsPerStep);
    json["hardware_flops_per_step"] = number(metrics.hardwareFlopsPerStep);
    json["peak_flops_per_s"] = number(metrics.peakFlopsPerS);
    json["streamed_bytes_per_step"] = number(metrics.streamedBytesPerStep);
    json["checkpoint_strategy"]
        = metrics.checkpointStrategy ? nlohmann::json(toString(*metrics.checkpointStrategy)) : nlohmann::json(nullptr);
    json["checkpoint_every"]
        = metrics.checkpointStrategy ? nlohmann::json(metrics.checkpointEvery) : nlohmann::json(nullptr);
    json["recompute_flops_per_step"] = number(metrics.recomputeFlopsPerStep);
    json["checkpoint_bytes_per_step"] = number(metrics.checkpointBytesPerStep);
    json["stream_bytes_per_s"] = number(metrics.linkBytesPerS);
    json["stream_bound"] = toString(metrics.linkBound);
    json["flash_streamed_bytes_per_step"] = number(metrics.flashStreamedBytesPerStep);
    json["flash_stream_bytes_per_s"] = number(metrics.flashLinkBytesPerS);
    json["step_times_s"] = metrics.stepTimesS;
    if (metrics.mode == RunMode::Inference) {
        json["users"] = metrics.users;
        json["prompt_tokens"] = metrics.promptTokens;
        json["aggregate_tokens_per_s"] = number(metrics.aggregateTokensPerS);
        json["token_interval_s"] = number(metrics.tokenIntervalS);
        json["speculative"] = nullptr;
        if (const std::optional<SpeculativeDecode>& s = metrics.speculative)
            json["speculative"] = { { "draft", s->draft }, { "draft_wafers", s->draftWafers },
                { "shares_wafer", s->sharesWafer }, { "wafer", s->wafer }, { "draft_tokens", s->draftTokens },
                { "acceptance_rate", number(s->acceptanceRate) }, { "tokens_per_pass", number(s->tokensPerPass) },
                { "draft_token_s", number(s->draftTokenS) }, { "draft_interval_s", number(s->draftIntervalS) },
                { "pass_s", number(s->passS) }, { "target_tokens_per_s", number(s->targetTokensPerS) } };
    } else {
        json["batch_per_system"] = metrics.batchPerSystem;
        json["micro_batch_size"] = metrics.microBatch;
        json["micro_batches_per_step"] = metrics.microBatchesPerStep;
    }
    json["notes"] = metrics.notes;
    json["calibration_profile"] = metrics.calibrationProfile;
    return json.dump(indent);
}

} // namespace waferscope::core::engine
