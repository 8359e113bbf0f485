// No header of its own: defines readSeq2Seq, one of the family readers of shapefields.h.
// Encoder-decoder models: T5 and the transformer of "Attention Is All You Need" (the Model Zoo
// builds both with its T5 model: relative position buckets for T5, sinusoidal or learned
// positions for the transformer). TensorFlow-era transformer files say hidden_size and
// filter_size for d_model and d_ff.
#include "core/model/shapefields.h"

namespace waferscope::core {

namespace {

std::int64_t requiredEither(
    const YamlFields& fields, const YamlSection& model, const char* key, const char* alias, std::int64_t max)
{
    if (!fields.value(model, key))
        if (std::optional<std::int64_t> value = fields.integer(model, alias, 1, max))
            return *value;
    return fields.requiredInteger(model, key, 1, max);
}

} // namespace

void readSeq2Seq(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const YamlSection& model = sections.model;
    const bool t5 = config.family == ModelConfig::Family::T5;
    // TensorFlow-era files keep extra_ids and the vocabularies with the input pipeline.
    const std::int64_t extraIds
        = fields.integer(model, "extra_ids", 0, 1 << 20)
              .value_or(fields.integer(sections.trainInput, "extra_ids", 0, 1 << 20).value_or(0));
    const std::int64_t source
        = readVocabularySize(fields, sections, "src_vocab_size", { "src_vocab_file", "vocab_file" }, config);
    const bool hasTarget = fields.value(model, "tgt_vocab_size") || fields.value(sections.trainInput, "tgt_vocab_size")
        || fields.value(sections.trainInput, "tgt_vocab_file");
    const std::int64_t target
        = hasTarget ? readVocabularySize(fields, sections, "tgt_vocab_size", { "tgt_vocab_file" }, config) : source;
    config.srcVocabSize = source + extraIds;
    config.tgtVocabSize = target + extraIds;
    config.vocabSize = config.srcVocabSize;
    config.hiddenSize = requiredEither(fields, model, "d_model", "hidden_size", kMaxHidden);
    config.numHeads = fields.requiredInteger(model, "num_heads", 1, kMaxHidden);
    config.numKvGroups = config.numHeads;
    config.dKv = fields.integer(model, "d_kv", 1, kMaxHidden).value_or(config.hiddenSize / config.numHeads);
    if (config.dKv == 0)
        fields.fail(fields.valueMark(model, "num_heads"),
            "num_heads " + std::to_string(config.numHeads) + " exceeds d_model " + std::to_string(config.hiddenSize)
                + " and no d_kv is given");
    config.attentionInnerDim = config.dKv * config.numHeads;
    config.filterSize = requiredEither(fields, model, "d_ff", "filter_size", kMaxFilter);
    config.encoderLayers = fields.requiredInteger(model, "encoder_num_hidden_layers", 1, kMaxLayers);
    config.decoderLayers
        = fields.integer(model, "decoder_num_hidden_layers", 1, kMaxLayers).value_or(config.encoderLayers);
    config.numLayers = config.encoderLayers + config.decoderLayers;
    config.relativeBuckets = fields.integer(model, "relative_attention_num_buckets", 1, 4096).value_or(32);
    config.shareEmbeddingWeights = fields.boolean(model, "share_embedding_weights").value_or(true);
    config.shareEncoderDecoderEmbedding = fields.boolean(model, "share_encoder_decoder_embedding").value_or(true);
    if (config.shareEncoderDecoderEmbedding && config.srcVocabSize != config.tgtVocabSize)
        fields.fail(fields.valueMark(model, "share_encoder_decoder_embedding"),
            "share_encoder_decoder_embedding needs equal source and target vocabularies (got "
                + std::to_string(config.srcVocabSize) + " and " + std::to_string(config.tgtVocabSize) + ")");
    // Releases before 2.x choose the norm with use_t5_layer_norm (T5's RMS norm, or LayerNorm).
    const bool t5Norm = fields.boolean(model, "use_t5_layer_norm").value_or(t5);
    config.norm = parseNorm(fields, model, t5Norm ? ModelConfig::Norm::RmsNorm : ModelConfig::Norm::LayerNorm);
    config.activation
        = parseActivation(fields.choice(model, "encoder_nonlinearity", { WS_ACTIVATIONS }).value_or("relu"));
    config.projectionBiasInAttention = fields.boolean(model, "use_projection_bias_in_attention").value_or(false);
    config.ffnBiasInAttention = false; // the Model Zoo's T5 attention has no output bias
    config.ffnBias = fields.boolean(model, "use_ffn_bias").value_or(false);
    if (config.activation == ModelConfig::Activation::Gelu && config.ffnBias) {
        const YAML::Mark mark = fields.valueMark(model, "use_ffn_bias");
        config.warnings.push_back(
            { mark.line + 1, mark.column + 1, "use_ffn_bias is ignored with a gelu FFN, as the Model Zoo's T5 does" });
        config.ffnBias = false;
    }
    const std::string positions
        = fields.choice(model, "position_embedding_type", { "relative", "fixed", "learned", "learned_absolute" })
              .value_or(t5 ? "relative" : "fixed");
    config.positions = positions == "relative" ? ModelConfig::Positions::Relative
        : positions == "fixed"                 ? ModelConfig::Positions::Fixed
                                               : ModelConfig::Positions::Learned;
    config.maxPositions = fields.integer(model, "src_max_position_embeddings", 1, kMaxPositions)
                              .value_or(fields.integer(model, "max_position_embeddings", 1, kMaxPositions).value_or(0));
    config.positionTableRows
        = fields.integer(model, "tgt_max_position_embeddings", 1, kMaxPositions).value_or(config.maxPositions);
    if (config.positions == ModelConfig::Positions::Learned && config.maxPositions == 0)
        fields.fail(model.keyMark, "learned positions need 'src_max_position_embeddings'");
    fields.warnUnknownKeys(model,
        { WS_NEUTRAL_MODEL_KEYS, "src_vocab_size", "tgt_vocab_size", "extra_ids", "d_model", "d_kv", "d_ff",
            "encoder_num_hidden_layers", "decoder_num_hidden_layers", "relative_attention_num_buckets",
            "share_encoder_decoder_embedding", "encoder_nonlinearity", "decoder_nonlinearity", "lm_loss_weight",
            "mlm_loss_scaling", "use_t5_layer_norm", "use_pre_encoder_decoder_dropout",
            "use_pre_encoder_decoder_layer_norm", "use_dropout_outside_residual_path", "use_transformer_initialization",
            "relu_dropout_rate", "src_max_position_embeddings", "tgt_max_position_embeddings",
            "use_relative_attention_bias", "decoder_attention_logits_alpha", "encoder_attention_logits_alpha",
            "embeddings_alpha", "scale_decoder_qk_dot_by_d", "scale_encoder_qk_dot_by_d", "scale_output_logits_by_d",
            "dropout_seed", "weight_initialization_seed", "use_vsl" },
        config.warnings);
}

} // namespace waferscope::core
