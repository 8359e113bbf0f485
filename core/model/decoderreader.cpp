// No header of its own: defines readDecoder, one of the family readers of shapefields.h.
// Decoder-only language models: the GPT-2 backbone of the Model Zoo (gpt2/3, llama, mistral,
// mixtral, starcoder, santacoder, jais, btlm, bloom, gemma2, mpt), its GPT-J backbone (gptj,
// gpt-neox, falcon: attention and FFN in parallel), and DPO over any of them.
#include "core/model/shapefields.h"

namespace waferscope::core {

namespace {

using F = ModelConfig::Family;

bool isGptJBackbone(F family)
{
    return family == F::GptJ || family == F::Falcon;
}

void readPositions(const YamlFields& fields, const YamlSection& model, ModelConfig& config)
{
    using P = ModelConfig::Positions;
    const std::string fallback = isGptJBackbone(config.family) ? "rotary" : "learned";
    const std::string positions = fields
                                      .choice(model, "position_embedding_type",
                                          { "learned", "fixed", "relative", "rotary", "alibi", "none", "longrope" })
                                      .value_or(fallback);
    config.positions = positions == "fixed" ? P::Fixed
        : positions == "relative"           ? P::Relative
        : positions == "rotary"             ? P::Rotary
        : positions == "longrope"           ? P::Rotary
        : positions == "alibi"              ? P::Alibi
        : positions == "none"               ? P::None
                                            : P::Learned;
    if (fields.boolean(model, "use_position_embedding") == false)
        config.positions = P::None;
    config.trainableAlibiSlopes = config.positions == P::Alibi
        && !isGptJBackbone(config.family) // GPTJModel never passes the flag on
        && fields.boolean(model, "alibi_trainable_slopes").value_or(false);
}

void readAttention(const YamlFields& fields, const YamlSection& model, ModelConfig& config)
{
    config.projectionBiasInAttention = fields.boolean(model, "use_projection_bias_in_attention").value_or(true);
    config.ffnBiasInAttention = fields.boolean(model, "use_ffn_bias_in_attention").value_or(true);
    config.slidingWindow = fields.integer(model, "attention_sliding_window_length", 1, kMaxPositions).value_or(0);
    config.attentionSinkTokens = fields.integer(model, "attention_sink_tokens", 0, kMaxPositions).value_or(0);
    if (config.attentionSinkTokens > 0 && config.slidingWindow == 0) {
        const YAML::Mark mark = fields.valueMark(model, "attention_sink_tokens");
        config.warnings.push_back({ mark.line + 1, mark.column + 1,
            "attention_sink_tokens without attention_sliding_window_length: every key is visible anyway, the sinks "
            "change nothing" });
    }
    config.alternateSlidingWindow = fields.boolean(model, "sliding_window_every_other_decoder_layer").value_or(false);
    config.slidingWindowFirst = fields
                                    .choice(model, "sliding_window_every_other_decoder_layer_pattern",
                                        { "sliding_window_first", "full_attention_first" })
                                    .value_or("full_attention_first")
        == "sliding_window_first";
    if (config.alternateSlidingWindow && config.slidingWindow == 0)
        fields.fail(fields.valueMark(model, "sliding_window_every_other_decoder_layer"),
            "sliding_window_every_other_decoder_layer needs attention_sliding_window_length");
    config.attentionLogitSoftcap = fields.number(model, "attention_logit_softcapping", 0.0, 1e9).value_or(0.0);
    config.finalLogitSoftcap = fields.number(model, "final_logit_softcapping", 0.0, 1e9).value_or(0.0);
    config.attentionSinkParameter = fields.boolean(model, "use_sink_token").value_or(false);

    const std::string module
        = fields.choice(model, "attention_module", { "aiayn_attention", "multiquery_attention" }).value_or("");
    const YamlSection extra = fields.section(model, "extra_attention_params");
    if (std::optional<std::int64_t> groups = fields.integer(extra, "num_kv_groups", 1, kMaxHidden)) {
        if (config.numHeads % *groups != 0)
            fields.fail(fields.valueMark(extra, "num_kv_groups"),
                "num_kv_groups must divide num_heads (got " + std::to_string(config.numHeads) + " heads and "
                    + std::to_string(*groups) + " kv groups)");
        config.numKvGroups = *groups;
    } else if (module == "multiquery_attention") {
        config.numKvGroups = 1; // multi-query attention without groups: one shared k/v head
    }
    if (fields.value(model, "attention_qk_norm_layer"))
        config.qkNormWidth = config.attentionInnerDim / config.numHeads;
}

void readExperts(const YamlFields& fields, const YamlSection& model, ModelConfig& config)
{
    const YamlSection moe
        = fields.value(model, "moe") ? fields.section(model, "moe") : fields.section(model, "moe_params");
    if (!moe.present())
        return;
    config.numExperts = fields.requiredInteger(moe, "num_experts", 1, 4096);
    config.topK = fields.integer(moe, "top_k", 1, 4096).value_or(1);
    config.numSharedExperts = fields.integer(moe, "num_shared_experts", 0, 4096).value_or(0);
    config.routerBias = fields.boolean(moe, "router_use_bias").value_or(false);
    if (config.topK > config.numExperts)
        fields.fail(fields.valueMark(moe, "top_k"),
            "top_k must not exceed num_experts (got top_k " + std::to_string(config.topK) + " and "
                + std::to_string(config.numExperts) + " experts)");
}

// DPO: the policy is a complete model of its own family (trainer schema: `policy_model`; older
// files give its keys flat, with `model_name`), and the reference a frozen copy of it.
void readDpo(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const YamlSection& model = sections.model;
    const bool nested = fields.value(model, "policy_model").has_value();
    const ParamsSections policySections
        = withModelSection(sections, nested ? fields.section(model, "policy_model") : model);
    ModelConfig policy;
    policy.fileName = config.fileName;
    policy.schema = config.schema;
    const std::string nameKey = nested ? "name" : "model_name";
    const std::optional<std::string> name = fields.text(policySections.model, nameKey);
    if (!name)
        fields.fail(policySections.model.keyMark,
            "missing key '" + policySections.model.path + "." + nameKey + "' (the policy model's family)");
    const std::optional<F> family = familyFromName(*name);
    if (!family || !isDecoderLanguageModel(*family))
        fields.fail(fields.valueMark(policySections.model, nameKey),
            "DPO's policy must be a decoder-only language model, got '" + *name + "'");
    policy.family = *family;
    policy.name = *name;
    readDecoder(fields, policySections, policy);
    takeWarnings(config, policy);
    const YamlSection dpo = fields.section(model, "dpo");
    config.frozenReference = !fields.boolean(dpo, "reference_free").value_or(false);
    // The whole shape is the policy's; the parts say how it is assembled.
    const std::string configName = config.name;
    std::vector<ModelConfig::Warning> warnings = std::move(config.warnings);
    const std::string fileName = config.fileName;
    const ModelConfig::Schema schema = config.schema;
    const bool reference = config.frozenReference;
    config = policy;
    config.family = F::Dpo;
    config.name = configName;
    config.fileName = fileName;
    config.schema = schema;
    config.warnings = std::move(warnings);
    config.frozenReference = reference;
    config.parts.push_back({ "policy", { policy } });
    if (nested)
        fields.warnUnknownKeys(model, { "name", "dpo", "policy_model", "compute_eval_metrics" }, config.warnings);
}

} // namespace

void readDecoder(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    if (config.family == F::Dpo) {
        readDpo(fields, sections, config);
        return;
    }
    const YamlSection& model = sections.model;
    readTransformerSizes(fields, sections, config);
    readPositions(fields, model, config);
    config.shareEmbeddingWeights = fields.boolean(model, "share_embedding_weights").value_or(true);
    config.norm = parseNorm(fields, model, ModelConfig::Norm::LayerNorm);
    config.activation = parseActivation(fields.choice(model, "nonlinearity", { WS_ACTIVATIONS }).value_or("gelu"));
    // GPTJModel's default has no FFN biases; GPT2LMHeadModel's has them.
    config.ffnBias = fields.boolean(model, "use_ffn_bias").value_or(!isGptJBackbone(config.family));
    config.biasInOutput = fields.boolean(model, "use_bias_in_output").value_or(false);
    readAttention(fields, model, config);
    readExperts(fields, model, config);
    config.parallelAttention = isGptJBackbone(config.family);
    config.untiedParallelNorms
        = config.parallelAttention && fields.boolean(model, "use_untied_layer_norm").value_or(false);
    config.embeddingLayerNorm
        = !config.parallelAttention && fields.boolean(model, "embedding_layer_norm").value_or(false);
    config.sandwichNorms = !config.parallelAttention && fields.boolean(model, "norm_first_sandwich").value_or(false);
    fields.warnUnknownKeys(model,
        { WS_NEUTRAL_MODEL_KEYS, "use_bias_in_output", "moe", "moe_params", "attention_sink_tokens",
            "sliding_window_every_other_decoder_layer", "sliding_window_every_other_decoder_layer_pattern",
            "attention_logit_softcapping", "final_logit_softcapping", "use_sink_token", "attention_qk_norm_layer",
            "alibi_trainable_slopes", "use_untied_layer_norm", "embedding_layer_norm", "norm_first_sandwich" },
        config.warnings);
}

} // namespace waferscope::core
