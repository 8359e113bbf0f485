// Model family and shape from the `model` section, for every supported family.
#include "core/common/memorybudget.h"
#include "core/common/text.h"
#include "core/common/units.h"
#include "core/model/modelloader.h"
#include "core/model/modelsections.h"
#include "core/model/vocabularyfiles.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace waferscope::core {

namespace {

constexpr std::int64_t kMaxHidden = 1 << 20;
constexpr std::int64_t kMaxLayers = 10'000;
constexpr std::int64_t kMaxVocab = 1 << 24;
constexpr std::int64_t kMaxFilter = 1 << 24;
constexpr std::int64_t kMaxPositions = 1 << 24;

// Keys that the Model Zoo defines and that do not change the graph's size or cost (dropout,
// initialisers, loss scaling, numerics). They are read silently; any other key is a warning.
#define WS_NEUTRAL_MODEL_KEYS                                                                                          \
    "name", "dropout_rate", "attention_dropout_rate", "embedding_dropout_rate", "layer_norm_epsilon", "initializer",   \
        "embedding_initializer", "output_layer_initializer", "initializer_range", "loss_scaling", "loss_weight",       \
        "mixed_precision", "fp16_type", "attention_type", "attention_softmax_fp32", "boundary_casting", "tf_summary",  \
        "embedding_layer_norm", "pos_scaling_factor", "pos_scaling_type", "pos_scaling_extra_args", "rope_theta",      \
        "rotary_dim", "use_position_embedding", "attention_module", "extra_attention_params", "label_smoothing",       \
        "precision_opt_level", "attention_kernel", "use_bfloat16", "compute_eval_metrics", "scale_qk_dot_by_d",        \
        "attention_inner_dim", "head_dim", "fixed_sparse_attention", "norm_first", "attention_logit_alibi_slope"

const char* const kFamilyNames = "gpt2, gpt3, llama, mistral, mixtral, bert, t5, fc_mnist";

ModelConfig::Family inferFamily(const YamlFields& fields, const YamlSection& model, const std::string& fileName)
{
    auto has = [&](const char* key) { return fields.value(model, key).has_value(); };
    if (has("src_vocab_size") || has("d_model") || has("encoder_num_hidden_layers"))
        return ModelConfig::Family::T5;
    if (has("pooler_nonlinearity") || has("disable_nsp") || has("encoder_nonlinearity") || has("mlm_loss_weight"))
        return ModelConfig::Family::Bert;
    if (has("hidden_sizes") || has("depth") || has("input_size"))
        return ModelConfig::Family::FcMnist;
    if (has("moe") || has("moe_params"))
        return ModelConfig::Family::Mixtral;
    const std::string norm = fields.text(model, "norm_type").value_or("");
    const std::string activation = fields.text(model, "nonlinearity").value_or("");
    if (norm == "rmsnorm" && (activation == "swiglu" || activation == "silu"))
        return ModelConfig::Family::Llama;
    const std::string base = fileName.substr(fileName.find_last_of('/') + 1);
    return base.find("gpt3") != std::string::npos ? ModelConfig::Family::Gpt3 : ModelConfig::Family::Gpt2;
}

ModelConfig::Activation parseActivation(const std::string& name)
{
    using A = ModelConfig::Activation;
    if (name == "relu")
        return A::Relu;
    if (name == "silu" || name == "swish")
        return A::Silu;
    if (name == "tanh")
        return A::Tanh;
    if (name == "swiglu")
        return A::SwiGlu;
    if (name == "geglu")
        return A::GeGlu;
    if (name == "reglu")
        return A::ReGlu;
    return A::Gelu; // gelu, gelu_new, quick_gelu
}

// A vocabulary size from the model section; else where TensorFlow-era files keep it (the input
// sections); else from a standard vocabulary file named there, with a located warning that names
// the assumption. An unknown file is an error that names the key to add.
std::int64_t readVocabularySize(const YamlFields& fields, const ParamsSections& sections, const std::string& sizeKey,
    std::initializer_list<const char*> fileKeys, ModelConfig& config)
{
    const YamlSection* places[] = { &sections.model, &sections.trainInput, &sections.evalInput };
    for (const YamlSection* section : places)
        if (std::optional<std::int64_t> size = fields.integer(*section, sizeKey, 1, kMaxVocab))
            return *size;
    for (const char* fileKey : fileKeys)
        for (const YamlSection* section : places) {
            const std::optional<std::string> file = fields.text(*section, fileKey);
            if (!file)
                continue;
            const YAML::Mark mark = fields.valueMark(*section, fileKey);
            const std::optional<KnownVocabulary> known = knownVocabularyFile(*file);
            if (!known)
                fields.fail(mark,
                    "no '" + sections.model.path + "." + sizeKey + "', and the size of the vocabulary file '" + *file
                        + "' is not known to WaferScope: add '" + sizeKey + "' to '" + sections.model.path + "'");
            config.warnings.push_back({ mark.line + 1, mark.column + 1,
                "no '" + sections.model.path + "." + sizeKey + "': assuming " + known->description + " for '" + *file
                    + "'" });
            return known->size;
        }
    fields.fail(sections.model.keyMark,
        "missing key '" + sections.model.path + "." + sizeKey + "' (an integer in [1, " + std::to_string(kMaxVocab)
            + "], or a known '" + *fileKeys.begin() + "')");
}

// The sizes every BERT/GPT-style transformer has. The attention width is num_heads x head size:
// hidden_size unless `attention_inner_dim` (or a `head_dim`) sets it, as Mistral NeMo does.
void readTransformerSizes(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const YamlSection& model = sections.model;
    config.vocabSize = readVocabularySize(fields, sections, "vocab_size", { "vocab_file" }, config);
    config.hiddenSize = fields.requiredInteger(model, "hidden_size", 1, kMaxHidden);
    config.numLayers = fields.requiredInteger(model, "num_hidden_layers", 1, kMaxLayers);
    config.numHeads = fields.requiredInteger(model, "num_heads", 1, kMaxHidden);
    config.numKvGroups = config.numHeads;
    config.filterSize = fields.requiredInteger(model, "filter_size", 1, kMaxFilter);
    config.maxPositions = fields.requiredInteger(model, "max_position_embeddings", 1, kMaxPositions);
    config.attentionInnerDim = config.hiddenSize;
    if (std::optional<std::int64_t> inner = fields.integer(model, "attention_inner_dim", 1, kMaxHidden))
        config.attentionInnerDim = *inner;
    else if (std::optional<std::int64_t> headDim = fields.integer(model, "head_dim", 1, kMaxHidden))
        config.attentionInnerDim = *headDim * config.numHeads;
    if (config.attentionInnerDim % config.numHeads != 0) {
        const bool inner = fields.value(model, "attention_inner_dim").has_value();
        fields.fail(fields.valueMark(model, "num_heads"),
            "num_heads must divide " + std::string(inner ? "attention_inner_dim" : "hidden_size") + " (got "
                + std::to_string(config.attentionInnerDim) + " and " + std::to_string(config.numHeads) + ")");
    }
}

#define WS_ACTIVATIONS "gelu", "gelu_new", "quick_gelu", "relu", "silu", "swish", "tanh", "swiglu", "geglu", "reglu"

void readDecoder(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const YamlSection& model = sections.model;
    readTransformerSizes(fields, sections, config);

    using P = ModelConfig::Positions;
    const std::string positions
        = fields.choice(model, "position_embedding_type", { "learned", "fixed", "relative", "rotary", "alibi", "none" })
              .value_or("learned");
    config.positions = positions == "fixed" ? P::Fixed
        : positions == "relative"           ? P::Relative
        : positions == "rotary"             ? P::Rotary
        : positions == "alibi"              ? P::Alibi
        : positions == "none"               ? P::None
                                            : P::Learned;
    if (fields.boolean(model, "use_position_embedding") == false)
        config.positions = P::None;
    config.shareEmbeddingWeights = fields.boolean(model, "share_embedding_weights").value_or(true);
    config.norm = fields.choice(model, "norm_type", { "layernorm", "rmsnorm" }).value_or("layernorm") == "rmsnorm"
        ? ModelConfig::Norm::RmsNorm
        : ModelConfig::Norm::LayerNorm;
    config.activation = parseActivation(fields.choice(model, "nonlinearity", { WS_ACTIVATIONS }).value_or("gelu"));
    config.projectionBiasInAttention = fields.boolean(model, "use_projection_bias_in_attention").value_or(true);
    config.ffnBiasInAttention = fields.boolean(model, "use_ffn_bias_in_attention").value_or(true);
    config.ffnBias = fields.boolean(model, "use_ffn_bias").value_or(true);
    config.biasInOutput = fields.boolean(model, "use_bias_in_output").value_or(false);
    config.slidingWindow = fields.integer(model, "attention_sliding_window_length", 1, kMaxPositions).value_or(0);

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

    const YamlSection moe
        = fields.value(model, "moe") ? fields.section(model, "moe") : fields.section(model, "moe_params");
    if (moe.present()) {
        config.numExperts = fields.requiredInteger(moe, "num_experts", 1, 4096);
        config.topK = fields.integer(moe, "top_k", 1, 4096).value_or(1);
        if (config.topK > config.numExperts)
            fields.fail(fields.valueMark(moe, "top_k"),
                "top_k must not exceed num_experts (got top_k " + std::to_string(config.topK) + " and "
                    + std::to_string(config.numExperts) + " experts)");
    }
    fields.warnUnknownKeys(model,
        { WS_NEUTRAL_MODEL_KEYS, "vocab_size", "hidden_size", "num_hidden_layers", "num_heads", "filter_size",
            "max_position_embeddings", "position_embedding_type", "share_embedding_weights", "norm_type",
            "nonlinearity", "use_projection_bias_in_attention", "use_ffn_bias_in_attention", "use_ffn_bias",
            "use_bias_in_output", "attention_sliding_window_length", "moe", "moe_params" },
        config.warnings);
}

void readBert(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const YamlSection& model = sections.model;
    readTransformerSizes(fields, sections, config);
    config.activation
        = parseActivation(fields.choice(model, "encoder_nonlinearity", { WS_ACTIVATIONS })
                              .value_or(fields.choice(model, "nonlinearity", { WS_ACTIVATIONS }).value_or("gelu")));
    config.typeVocabSize = fields.integer(model, "num_segments", 0, 1024).value_or(2);
    config.disableNsp = fields.boolean(model, "disable_nsp").value_or(false);
    config.shareEmbeddingWeights = fields.boolean(model, "share_embedding_weights").value_or(true);
    config.positions = ModelConfig::Positions::Learned;
    fields.warnUnknownKeys(model,
        { WS_NEUTRAL_MODEL_KEYS, "vocab_size", "hidden_size", "num_hidden_layers", "num_heads", "filter_size",
            "max_position_embeddings", "encoder_nonlinearity", "nonlinearity", "pooler_nonlinearity", "num_segments",
            "disable_nsp", "share_embedding_weights", "mlm_loss_weight", "mlm_loss_scaling", "enable_vts",
            "position_embedding_type" },
        config.warnings);
}

void readT5(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const YamlSection& model = sections.model;
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
    config.hiddenSize = fields.requiredInteger(model, "d_model", 1, kMaxHidden);
    config.numHeads = fields.requiredInteger(model, "num_heads", 1, kMaxHidden);
    config.numKvGroups = config.numHeads;
    config.dKv = fields.integer(model, "d_kv", 1, kMaxHidden).value_or(config.hiddenSize / config.numHeads);
    config.filterSize = fields.requiredInteger(model, "d_ff", 1, kMaxFilter);
    config.encoderLayers = fields.requiredInteger(model, "encoder_num_hidden_layers", 1, kMaxLayers);
    config.decoderLayers
        = fields.integer(model, "decoder_num_hidden_layers", 1, kMaxLayers).value_or(config.encoderLayers);
    config.numLayers = config.encoderLayers + config.decoderLayers;
    config.relativeBuckets = fields.integer(model, "relative_attention_num_buckets", 1, 4096).value_or(32);
    config.shareEmbeddingWeights = fields.boolean(model, "share_embedding_weights").value_or(true);
    config.norm = fields.choice(model, "norm_type", { "layernorm", "rmsnorm" }).value_or("rmsnorm") == "layernorm"
        ? ModelConfig::Norm::LayerNorm
        : ModelConfig::Norm::RmsNorm;
    config.activation
        = parseActivation(fields.choice(model, "encoder_nonlinearity", { WS_ACTIVATIONS }).value_or("relu"));
    config.projectionBiasInAttention = fields.boolean(model, "use_projection_bias_in_attention").value_or(false);
    config.ffnBiasInAttention = config.projectionBiasInAttention;
    config.ffnBias = fields.boolean(model, "use_ffn_bias").value_or(false);
    config.positions = ModelConfig::Positions::Relative;
    config.maxPositions = fields.integer(model, "max_position_embeddings", 1, kMaxPositions).value_or(0);
    fields.warnUnknownKeys(model,
        { WS_NEUTRAL_MODEL_KEYS, "src_vocab_size", "tgt_vocab_size", "extra_ids", "d_model", "num_heads", "d_kv",
            "d_ff", "encoder_num_hidden_layers", "decoder_num_hidden_layers", "relative_attention_num_buckets",
            "share_embedding_weights", "share_encoder_decoder_embedding", "norm_type", "encoder_nonlinearity",
            "decoder_nonlinearity", "use_projection_bias_in_attention", "use_ffn_bias", "position_embedding_type",
            "lm_loss_weight", "mlm_loss_scaling", "use_t5_layer_norm", "max_position_embeddings",
            "use_pre_encoder_decoder_dropout", "use_pre_encoder_decoder_layer_norm",
            "use_dropout_outside_residual_path", "use_transformer_initialization", "relu_dropout_rate" },
        config.warnings);
}

void readFcMnist(const YamlFields& fields, const YamlSection& model, ModelConfig& config)
{
    config.inputSize = fields.integer(model, "input_size", 1, kMaxHidden).value_or(28 * 28);
    config.numClasses = fields.integer(model, "num_classes", 1, kMaxVocab).value_or(10);
    config.hiddenSizes = fields.integerList(model, "hidden_sizes", 1, kMaxHidden);
    if (config.hiddenSizes.empty()) {
        // The Model Zoo's own fc_mnist: `depth` hidden layers of `hidden_size`.
        const std::int64_t depth = fields.requiredInteger(model, "depth", 1, 1000);
        const std::int64_t hidden = fields.requiredInteger(model, "hidden_size", 1, kMaxHidden);
        config.hiddenSizes.assign(std::size_t(depth), hidden);
    }
    config.activation
        = parseActivation(fields.choice(model, "activation_fn", { "relu", "gelu", "tanh", "silu" }).value_or("relu"));
    config.ffnBias = fields.boolean(model, "use_bias").value_or(true);
    config.numLayers = std::int64_t(config.hiddenSizes.size()) + 1;
    config.hiddenSize = *std::max_element(config.hiddenSizes.begin(), config.hiddenSizes.end());
    fields.warnUnknownKeys(model,
        { WS_NEUTRAL_MODEL_KEYS, "input_size", "num_classes", "hidden_sizes", "depth", "hidden_size", "activation_fn",
            "use_bias", "dropout" },
        config.warnings);
}

// More than the graph can count: it sums parameters and their bytes (up to 16 per parameter
// with optimizer state) in 64-bit integers. The largest published models have about 2e12.
constexpr double kMaxParameters = 1e15;

// An upper bound of the parameters every family's builder (graphbuilder.cpp) makes of `c`.
double parameterBound(const ModelConfig& c)
{
    const double h = double(c.hiddenSize);
    const double filter = double(c.filterSize);
    const double inner = std::max(h, double(c.dKv) * double(c.numHeads)); // T5's attention width
    const double vocab = double(std::max({ c.vocabSize, c.srcVocabSize, c.tgtVocabSize, c.numClasses, c.inputSize }));
    const double experts = double(std::max<std::int64_t>(1, c.numExperts));
    // A block: up to two attentions (T5's decoder) of four projections, the FFN of every expert
    // (three matrices when gated), the router, norms and biases.
    const double block
        = 8.0 * h * inner + 3.0 * h * filter * experts + h * double(c.numExperts) + 16.0 * (h + inner + filter);
    // Outside the blocks: up to three vocabulary matrices (T5's embeddings and head), position and
    // segment embeddings, BERT's pooler and MLM transform, T5's relative position biases.
    const double outside = 3.0 * vocab * h + double(c.maxPositions + c.typeVocabSize) * h + 4.0 * h * h
        + 2.0 * double(c.relativeBuckets) * double(c.numHeads) + 16.0 * (h + vocab);
    return double(c.numLayers) * block + outside;
}

} // namespace

void readFamily(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    using F = ModelConfig::Family;
    const std::optional<std::string> name = fields.text(sections.model, "name");
    if (!name) {
        config.family = inferFamily(fields, sections.model, config.fileName);
        config.name = toString(config.family);
        return;
    }
    const std::string lowered = toLowerAscii(*name);
    static const std::pair<const char*, F> kNames[]
        = { { "gpt2", F::Gpt2 }, { "gpt3", F::Gpt3 }, { "llama", F::Llama }, { "mistral", F::Llama },
              { "mixtral", F::Mixtral }, { "bert", F::Bert }, { "t5", F::T5 }, { "fc_mnist", F::FcMnist } };
    for (const auto& [known, family] : kNames) {
        if (lowered == known) {
            config.family = family;
            config.name = lowered;
            return;
        }
    }
    fields.fail(fields.valueMark(sections.model, "name"),
        "model family '" + *name + "' is not supported (supported families: " + kFamilyNames + ")");
}

void readModelShape(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const YamlSection& model = sections.model;
    switch (config.family) {
    case ModelConfig::Family::Bert:
        readBert(fields, sections, config);
        break;
    case ModelConfig::Family::T5:
        readT5(fields, sections, config);
        break;
    case ModelConfig::Family::FcMnist:
        readFcMnist(fields, model, config);
        break;
    default:
        readDecoder(fields, sections, config);
        if (config.family == ModelConfig::Family::Mixtral && config.numExperts == 0)
            fields.fail(model.keyMark, "a mixtral model needs a 'moe' block with num_experts and top_k");
        break;
    }
    // Refused before the graph is built: a valid but enormous shape (thousands of layers of
    // thousands of experts) would otherwise take the machine's memory in the graph builder.
    const YamlSection moe
        = fields.value(model, "moe") ? fields.section(model, "moe") : fields.section(model, "moe_params");
    const YAML::Mark mark = config.numExperts > 0  ? fields.valueMark(moe, "num_experts")
        : config.family == ModelConfig::Family::T5 ? fields.valueMark(model, "encoder_num_hidden_layers")
                                                   : fields.valueMark(model, "num_hidden_layers");
    const GraphFootprint footprint = estimateGraphFootprint(config);
    if (std::optional<Diagnostic> refused = checkMemory("its op graph (" + formatThousands(footprint.tensors)
                + " weight tensors in " + formatThousands(footprint.ops) + " ops)",
            footprint.bytes, "use fewer layers or experts", Diagnostic {}))
        fields.fail(mark, refused->message);
    if (const double parameters = parameterBound(config); parameters > kMaxParameters) {
        std::ostringstream message;
        message << std::setprecision(2) << "the model would have up to " << parameters
                << " parameters; WaferScope counts at most " << kMaxParameters
                << " (the largest published models have about 2e+12): use smaller hidden, filter or vocabulary "
                   "sizes, or fewer layers or experts";
        fields.fail(fields.valueMark(model, config.family == ModelConfig::Family::T5 ? "d_model" : "hidden_size"),
            message.str());
    }
}

} // namespace waferscope::core
