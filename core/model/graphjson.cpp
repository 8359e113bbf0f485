#include "core/model/graphjson.h"

#include "core/common/diagnostic.h"

#include <nlohmann/json.hpp>

namespace waferscope::core {

std::vector<std::string> formatWarnings(const ModelConfig& config)
{
    std::vector<std::string> lines;
    for (const ModelConfig::Warning& warning : config.warnings)
        lines.push_back(
            Diagnostic { config.fileName, warning.line, warning.column, warning.message }.format("warning"));
    return lines;
}

std::string precisionName(const ModelConfig& config)
{
    return config.mixedPrecision ? config.fp16Type : "float32";
}

std::string modelGraphToJson(const ModelGraph& graph)
{
    using Json = nlohmann::ordered_json;
    const ModelConfig& config = graph.config;
    Json layers = Json::array();
    for (const Op& op : graph.ops) {
        layers.push_back(Json {
            { "name", op.name },
            { "kind", toString(op.kind) },
            { "params", op.params },
            { "fwd_flops_per_token", op.fwdFlopsPerToken },
            { "weight_bytes", op.weightBytes },
            { "layer", op.layer },
            { "stack", toString(op.stack) },
            { "nonzero_params", op.nonzeroParams },
            { "bwd_flops_per_token", op.bwdFlopsPerToken },
            { "tokens_per_sample", op.tokensPerSample },
            { "activation_bytes_per_token", op.activationBytesPerToken },
            { "optimizer_state_bytes", op.optimizerStateBytes },
            { "frozen", op.frozen },
        });
    }
    const Json document {
        { "name", config.name },
        { "family", toString(config.family) },
        { "schema", toString(config.schema) },
        { "total_params", graph.totalParams },
        { "trainable_params", graph.trainableParams },
        { "frozen_params", graph.frozenParams },
        { "nonzero_params", graph.nonzeroParams },
        { "num_layers", config.numLayers },
        { "hidden_size", config.hiddenSize },
        { "seq_len", config.sequenceLength },
        { "batch_size", config.batchSize },
        { "micro_batch_size", config.microBatchSize > 0 ? Json(config.microBatchSize) : Json(nullptr) },
        { "precision", precisionName(config) },
        { "flops_per_token_fwd", graph.fwdFlopsPerToken },
        { "flops_per_token_bwd", graph.bwdFlopsPerToken },
        { "weight_bytes", graph.weightBytes },
        { "optimizer_state_bytes", graph.optimizerStateBytes },
        { "sparsity", config.sparsity },
        { "num_csx", config.numCsx },
        { "max_steps", config.maxSteps },
        { "layers", layers },
        { "warnings", formatWarnings(config) },
    };
    return document.dump(2);
}

} // namespace waferscope::core
