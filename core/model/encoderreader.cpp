// No header of its own: defines readEncoder and readDpr, family readers of shapefields.h.
// Encoder models: BERT pretraining and its fine-tuning heads (sequence and token classification,
// extractive summarisation, question answering), ESM-2, DPR's two encoders, and the layers-API
// demo of Releases 1.7 to 2.3.
#include "core/model/shapefields.h"

namespace waferscope::core {

namespace {

using F = ModelConfig::Family;

// The BertModel every encoder family shares: embeddings (tokens, positions, segments, a norm),
// post-norm blocks, and the [CLS] pooler.
void readBertEncoder(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const YamlSection& model = sections.model;
    readTransformerSizes(fields, sections, config);
    config.activation
        = parseActivation(fields.choice(model, "encoder_nonlinearity", { WS_ACTIVATIONS })
                              .value_or(fields.choice(model, "nonlinearity", { WS_ACTIVATIONS }).value_or("gelu")));
    config.disableNsp = fields.boolean(model, "disable_nsp").value_or(false);
    const bool pretraining = config.family == F::Bert || config.family == F::Esm2 || config.family == F::Linformer;
    // Pretraining models have segments and a pooler for NSP only; fine-tuning models keep both.
    const std::int64_t defaultSegments = pretraining && config.disableNsp ? 0 : 2;
    config.typeVocabSize = fields.integer(model, "num_segments", 0, 1024).value_or(defaultSegments);
    if (fields.boolean(model, "use_segment_embedding") == false)
        config.typeVocabSize = 0;
    config.pooler = pretraining ? !config.disableNsp : config.family == F::BertClassifier;
    config.shareEmbeddingWeights = fields.boolean(model, "share_embedding_weights").value_or(true);
    config.mlmOutputBias = fields.boolean(model, "use_output_bias_in_mlm").value_or(true);
    config.projectionBiasInAttention = fields.boolean(model, "use_projection_bias_in_attention").value_or(true);
    config.ffnBiasInAttention = fields.boolean(model, "use_ffn_bias_in_attention").value_or(true);
    config.ffnBias = fields.boolean(model, "use_ffn_bias").value_or(true);
    config.embeddingLayerNorm = fields.boolean(model, "embedding_layer_norm").value_or(true);
    config.finalNorm = fields.boolean(model, "use_final_layer_norm").value_or(false);
    const std::string positions
        = fields.choice(model, "position_embedding_type", { "learned", "rotary", "fixed", "alibi", "relative" })
              .value_or("learned");
    config.positions = positions == "rotary" ? ModelConfig::Positions::Rotary
        : positions == "fixed"               ? ModelConfig::Positions::Fixed
        : positions == "alibi"               ? ModelConfig::Positions::Alibi
        : positions == "relative"            ? ModelConfig::Positions::Relative
                                             : ModelConfig::Positions::Learned;
    // RoBERTa's padding-aware positions start after the pad id: pad_token_id + 1 extra rows.
    if (fields.boolean(model, "mask_padding_in_positional_embed").value_or(false))
        config.positionTableRows
            = config.maxPositions + fields.integer(model, "pad_token_id", 0, kMaxVocab).value_or(0) + 1;
}

} // namespace

void readEncoder(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const YamlSection& model = sections.model;
    readBertEncoder(fields, sections, config);
    switch (config.family) {
    case F::BertClassifier:
        config.numLabels = fields.integer(model, "num_labels", 1, kMaxVocab)
                               .value_or(fields.integer(model, "num_cls_classes", 1, kMaxVocab).value_or(2));
        config.headTokensPerSample = 1;
        break;
    case F::BertTokenClassifier:
        config.numLabels = fields.integer(model, "num_classes", 1, kMaxVocab).value_or(2);
        config.headTokensPerSample = 0; // every token
        break;
    case F::BertSummarization:
        config.numLabels = fields.integer(model, "num_labels", 1, kMaxVocab).value_or(2);
        config.classifierBias = fields.boolean(model, "use_cls_bias").value_or(true);
        config.headTokensPerSample
            = fields.integer(sections.trainInput, "max_cls_tokens", 1, kMaxPositions).value_or(1);
        break;
    case F::BertQuestionAnswering:
        config.numLabels = 2; // start and end logits per token
        config.headTokensPerSample = 0;
        break;
    case F::Linformer:
        config.linformerDims = fields.requiredInteger(model, "projected_dims", 1, kMaxPositions);
        config.linformerSharedKv
            = fields.choice(model, "attention_style", { "linformer-shared-heads", "linformer-shared-kv" })
                  .value_or("linformer-shared-heads")
            == "linformer-shared-kv";
        break;
    default:
        break;
    }
    fields.warnUnknownKeys(model,
        { WS_NEUTRAL_MODEL_KEYS, "encoder_nonlinearity", "pooler_nonlinearity", "num_segments", "disable_nsp",
            "mlm_loss_weight", "mlm_loss_scaling", "enable_vts", "use_output_bias_in_mlm", "embedding_layer_norm",
            "use_final_layer_norm", "mask_padding_in_positional_embed", "pad_token_id", "num_labels", "num_classes",
            "use_cls_bias", "task_dropout", "problem_type", "encoder_output_dropout_rate", "include_padding_in_loss",
            "label_vocab_file", "mask_token_id", "token_dropout", "mlm_nonlinearity", "cls_dropout_rate",
            "num_cls_classes", "pretrain_params_path", "use_ffn_bias_in_mlm", "use_segment_embedding", "projected_dims",
            "attention_style", "disable_attention", "future_implementations", "dropout_seed",
            "weight_initialization_seed" },
        config.warnings);
}

// DPR: a question encoder and a context encoder (`q_encoder`/`ctx_encoder`), or one `encoder`
// used for both (two copies unless `use_biencoder` is false). No pooler unless `pooler_type` is
// `ffn_pooler`; segments as BERT pretraining's.
void readDpr(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const YamlSection& model = sections.model;
    const bool separate = fields.value(model, "q_encoder") || fields.value(model, "ctx_encoder");
    const bool pooled = fields.text(model, "pooler_type").value_or("cls") == "ffn_pooler";
    std::vector<std::pair<std::string, std::string>> encoders; // role, key
    if (separate)
        encoders = { { "question_encoder", "q_encoder" }, { "context_encoder", "ctx_encoder" } };
    else if (fields.boolean(model, "use_biencoder").value_or(true))
        encoders = { { "question_encoder", "encoder" }, { "context_encoder", "encoder" } };
    else
        encoders = { { "encoder", "encoder" } };
    for (const auto& [role, key] : encoders) {
        const ParamsSections encoderSections = withModelSection(sections, fields.section(model, key, true));
        ModelConfig encoder;
        encoder.fileName = config.fileName;
        encoder.schema = config.schema;
        encoder.family = F::Bert;
        encoder.name = role;
        readBertEncoder(fields, encoderSections, encoder);
        encoder.pooler = pooled;
        encoder.family = F::Dpr; // a bare encoder: no MLM or NSP head
        takeWarnings(config, encoder);
        config.parts.push_back({ role, { encoder } });
    }
    adoptShape(config, config.parts.front().config.front());
    fields.warnUnknownKeys(model,
        { "name", "q_encoder", "ctx_encoder", "encoder", "pooler_type", "use_biencoder", "compute_eval_metrics",
            "mutual_information", "softmax_temperature", "selected_encoder" },
        config.warnings);
}

// The layers-API demo: a small post-norm encoder over `embedding_size` with an FFN of
// `hidden_size`, sinusoidal positions, and a biased output projection to the vocabulary.
void readLayersApiDemo(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const YamlSection& model = sections.model;
    config.vocabSize = fields.requiredInteger(model, "vocab_size", 1, kMaxVocab);
    config.hiddenSize = fields.requiredInteger(model, "embedding_size", 1, kMaxHidden);
    config.filterSize = fields.requiredInteger(model, "hidden_size", 1, kMaxFilter);
    config.numHeads = fields.requiredInteger(model, "num_heads", 1, kMaxHidden);
    config.numKvGroups = config.numHeads;
    config.numLayers = fields.requiredInteger(model, "num_hidden_layers", 1, kMaxLayers);
    config.maxPositions = fields.requiredInteger(model, "seq_len", 1, kMaxPositions);
    config.attentionInnerDim = config.hiddenSize;
    if (config.hiddenSize % config.numHeads != 0)
        fields.fail(fields.valueMark(model, "num_heads"),
            "num_heads must divide embedding_size (got " + std::to_string(config.hiddenSize) + " and "
                + std::to_string(config.numHeads) + ")");
    config.activation = parseActivation(fields.choice(model, "nonlinearity", { WS_ACTIVATIONS }).value_or("gelu"));
    config.positions = ModelConfig::Positions::Fixed;
    config.projectionBiasInAttention = false;
    config.ffnBiasInAttention = false;
    config.ffnBias = false;
    config.shareEmbeddingWeights = false;
    config.biasInOutput = true;
    config.finalNorm = false;
    config.typeVocabSize = 0;
    config.pooler = false;
    config.embeddingLayerNorm = false;
    fields.warnUnknownKeys(model, { WS_NEUTRAL_MODEL_KEYS, "embedding_size", "seq_len" }, config.warnings);
}

} // namespace waferscope::core
