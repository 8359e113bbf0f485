// No header of its own: defines readModelShape (modelsections.h) and the readers' helpers of shapefields.h.
// Model family and shape from the `model` section: the family, the helpers every family reader
// shares, and the checks on the finished shape. The families' own readers live in
// decoderreader.cpp, encoderreader.cpp and seq2seqreader.cpp.
#include "core/common/memorybudget.h"
#include "core/common/text.h"
#include "core/common/units.h"
#include "core/model/modelloader.h"
#include "core/model/shapefields.h"
#include "core/model/vocabularyfiles.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace waferscope::core {

namespace {

using F = ModelConfig::Family;

// Model Zoo model names (model.name) and the folder names of releases whose files carry none.
constexpr std::pair<const char*, F> kFamilyNames[] = { { "gpt2", F::Gpt2 }, { "gpt3", F::Gpt3 }, { "gptj", F::GptJ },
    { "gpt-neox", F::GptJ }, { "gpt_neox", F::GptJ }, { "falcon", F::Falcon }, { "bloom", F::Bloom },
    { "btlm", F::Btlm }, { "jais", F::Jais }, { "starcoder", F::StarCoder }, { "santacoder", F::SantaCoder },
    { "gemma2", F::Gemma2 }, { "mpt", F::Mpt }, { "llama", F::Llama }, { "mistral", F::Llama },
    { "mixtral", F::Mixtral }, { "bert", F::Bert }, { "roberta", F::Bert }, { "bert/classifier", F::BertClassifier },
    { "bert/token_classifier", F::BertTokenClassifier }, { "bert/extractive_summarization", F::BertSummarization },
    { "bert/qa", F::BertQuestionAnswering }, { "esm2", F::Esm2 }, { "dpr", F::Dpr }, { "dpo", F::Dpo }, { "t5", F::T5 },
    { "transformer", F::Transformer }, { "layers_api_demo", F::LayersApiDemo }, { "fc_mnist", F::FcMnist },
    { "vision_transformer", F::VisionTransformer }, { "dino", F::Dino }, { "dit", F::Dit }, { "llava", F::Llava },
    { "multimodal_simple", F::MultimodalSimple }, { "unet", F::Unet }, { "linformer", F::Linformer } };

std::string supportedFamilyList()
{
    std::string list;
    for (const auto& [name, family] : kFamilyNames)
        list += (list.empty() ? "" : ", ") + std::string(name);
    return list;
}

// Releases before 2.x name no model: the family comes from the keys, else from the folder the
// file sits in (`.../gptj/configs/x.yaml`, `.../bert/fine_tuning/classifier/configs/x.yaml`).
F inferFamily(const YamlFields& fields, const YamlSection& model, const std::string& fileName)
{
    auto has = [&](const char* key) { return fields.value(model, key).has_value(); };
    std::vector<std::string> folders;
    std::size_t start = 0;
    for (std::size_t slash = fileName.find('/'); slash != std::string::npos; slash = fileName.find('/', start)) {
        folders.push_back(fileName.substr(start, slash - start));
        start = slash + 1;
    }
    for (std::size_t i = folders.size(); i-- > 1;) {
        if (folders[i] != "configs")
            continue;
        const std::string& folder = folders[i - 1];
        const std::string& parent = i >= 2 ? folders[i - 2] : std::string();
        if (parent == "fine_tuning" || (i >= 3 && folders[i - 3] == "bert")) {
            if (folder == "classifier")
                return F::BertClassifier;
            if (folder == "token_classifier")
                return F::BertTokenClassifier;
            if (folder == "extractive_summarization")
                return F::BertSummarization;
            if (folder == "qa")
                return F::BertQuestionAnswering;
        }
        // The nearest named folder above configs/ (.../gptj/fine_tuning/continuous_pretraining/configs/).
        for (std::size_t j = i; j-- > 0 && j + 4 > i;)
            if (std::optional<F> family = familyFromName(folders[j]))
                return *family;
        break;
    }
    if (has("src_vocab_size") || has("d_model") || has("encoder_num_hidden_layers"))
        return fields.value(model, "relative_attention_num_buckets") || !has("position_embedding_type")
            ? F::T5
            : F::Transformer;
    if (has("pooler_nonlinearity") || has("disable_nsp") || has("encoder_nonlinearity") || has("mlm_loss_weight"))
        return F::Bert;
    if (has("hidden_sizes") || has("depth") || has("input_size"))
        return F::FcMnist;
    if (has("embedding_size") && has("seq_len"))
        return F::LayersApiDemo;
    if (has("moe") || has("moe_params"))
        return F::Mixtral;
    if (has("use_untied_layer_norm"))
        return F::GptJ;
    const std::string norm = fields.text(model, "norm_type").value_or("");
    const std::string activation = fields.text(model, "nonlinearity").value_or("");
    if (norm == "rmsnorm" && (activation == "swiglu" || activation == "silu"))
        return F::Llama;
    const std::string base = fileName.substr(fileName.find_last_of('/') + 1);
    return base.find("gpt3") != std::string::npos ? F::Gpt3 : F::Gpt2;
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

constexpr double kMaxParameters = 1e15;

// An upper bound of the parameters every family's builder (graphbuilder.cpp) makes of `c`.
double parameterBound(const ModelConfig& c)
{
    if (!c.parts.empty()) {
        ModelConfig outside = c; // the heads and the projector that join the parts
        outside.parts.clear();
        outside.numLayers = 0;
        double bound = parameterBound(outside);
        for (const ModelConfig::Part& part : c.parts)
            bound += parameterBound(part.config.front()) * (c.frozenReference ? 2.0 : 1.0);
        return bound;
    }
    const double h = double(c.hiddenSize);
    const double filter = double(c.filterSize);
    const double inner = std::max({ h, double(c.dKv) * double(c.numHeads), double(c.attentionInnerDim) });
    const double vocab = double(std::max({ c.vocabSize, c.srcVocabSize, c.tgtVocabSize, c.numClasses, c.inputSize }));
    const double experts = double(std::max<std::int64_t>(1, c.numExperts + c.numSharedExperts));
    // A block: up to two attentions (T5's decoder) of four projections, the FFN of every expert
    // (three matrices when gated) with biases, the router, norms and biases.
    const double block = 8.0 * h * inner + 3.0 * (h * filter + filter + h) * experts + h * double(c.numExperts)
        + 32.0 * (h + inner + filter);
    // Outside the blocks: up to three vocabulary matrices (T5's embeddings and head), position and
    // segment embeddings, BERT's pooler and MLM transform, T5's relative position biases.
    const double positions = double(std::max(c.maxPositions, c.positionTableRows) + c.typeVocabSize);
    const double outside = 3.0 * vocab * h + 2.0 * positions * h + 4.0 * h * h
        + 2.0 * double(c.relativeBuckets) * double(c.numHeads) + 16.0 * (h + vocab) + h * double(c.numLabels);
    // Vision: the patch embedding and position table; DINOv2's heads; the multimodal projector;
    // Linformer's sequence projections.
    const double patchValues = double(c.numChannels) * double(c.patchHeight) * double(c.patchWidth);
    double extras = (patchValues + double(c.imageTokens()) + 2.0) * h;
    for (const ModelConfig::ProjectionHead& head : c.heads)
        extras += double(head.input) * double(head.hidden)
            + double(head.layers) * double(head.hidden) * double(head.hidden)
            + double(head.hidden) * double(head.bottleneck) + double(head.bottleneck + 1) * double(head.output);
    double width = double(c.projectorInput);
    for (std::int64_t units : c.projectorUnits) {
        extras += (width + 1.0) * double(units);
        width = double(units);
    }
    extras += double(c.numLayers) * 2.0 * double(c.maxPositions + 1) * double(c.linformerDims);
    // U-Net: each block's 3^d convolutions between at most twice the widest filter count.
    const double convolutions = c.family == F::Unet ? double(c.numLayers) * 3.0 * 27.0 * 4.0 * h * h : 0.0;
    return double(c.numLayers) * block + outside + convolutions + extras;
}

} // namespace

std::optional<ModelConfig::Family> familyFromName(const std::string& name)
{
    const std::string lowered = toLowerAscii(name);
    for (const auto& [known, family] : kFamilyNames)
        if (lowered == known)
            return family;
    return std::nullopt;
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
    if (name == "reglu" || name == "liglu")
        return A::ReGlu;
    return A::Gelu; // gelu, gelu_new, gelu_fast, quick_gelu
}

ModelConfig::Norm parseNorm(const YamlFields& fields, const YamlSection& model, ModelConfig::Norm fallback)
{
    using N = ModelConfig::Norm;
    const std::optional<std::string> name = fields.choice(
        model, "norm_type", { "layernorm", "rmsnorm", "biasless-layernorm", "nonparametric-layernorm" });
    if (!name)
        return fallback;
    return *name == "rmsnorm"           ? N::RmsNorm
        : *name == "layernorm"          ? N::LayerNorm
        : *name == "biasless-layernorm" ? N::BiaslessLayerNorm
                                        : N::NonParametric;
}

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

namespace {

// RoPE (any family that names it, ESM-2's encoder as well as the decoders): rope_theta is the
// base of the rotation frequencies, and rotary_dim the channels of each head it rotates, in pairs.
void readRotary(const YamlFields& fields, const YamlSection& model, ModelConfig& config)
{
    config.ropeTheta = fields.number(model, "rope_theta", 1.0, 1e12).value_or(10000.0);
    const std::optional<std::int64_t> rotary = fields.integer(model, "rotary_dim", -kMaxHidden, kMaxHidden);
    const std::int64_t headSize = config.attentionInnerDim / config.numHeads;
    if (!rotary || (*rotary >= 2 && *rotary % 2 == 0 && *rotary <= headSize))
        return;
    const std::string heads = std::to_string(config.numHeads);
    const std::string source = fields.value(model, "attention_inner_dim")
        ? "attention_inner_dim / num_heads = " + std::to_string(config.attentionInnerDim) + " / " + heads
        : fields.value(model, "head_dim")
        ? std::string("head_dim")
        : "hidden_size / num_heads = " + std::to_string(config.hiddenSize) + " / " + heads;
    fields.fail(fields.valueMark(model, "rotary_dim"),
        "'" + (model.path.empty() ? std::string() : model.path + ".") + "rotary_dim' is " + std::to_string(*rotary)
            + ", expected an even number from 2 to the head size " + std::to_string(headSize) + " (" + source
            + "): RoPE rotates pairs of a head's channels");
}

} // namespace

void readTransformerSizes(
    const YamlFields& fields, const ParamsSections& sections, ModelConfig& config, bool maxPositionsRequired)
{
    const YamlSection& model = sections.model;
    config.vocabSize = readVocabularySize(fields, sections, "vocab_size", { "vocab_file" }, config);
    config.hiddenSize = fields.requiredInteger(model, "hidden_size", 1, kMaxHidden);
    config.numLayers = fields.requiredInteger(model, "num_hidden_layers", 1, kMaxLayers);
    config.numHeads = fields.requiredInteger(model, "num_heads", 1, kMaxHidden);
    config.numKvGroups = config.numHeads;
    config.filterSize = fields.requiredInteger(model, "filter_size", 1, kMaxFilter);
    config.maxPositions = maxPositionsRequired
        ? fields.requiredInteger(model, "max_position_embeddings", 1, kMaxPositions)
        : fields.integer(model, "max_position_embeddings", 1, kMaxPositions).value_or(0);
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
    readRotary(fields, model, config);
}

void adoptShape(ModelConfig& config, const ModelConfig& part)
{
    config.vocabSize = part.vocabSize;
    config.hiddenSize = part.hiddenSize;
    config.numLayers = part.numLayers;
    config.numHeads = part.numHeads;
    config.numKvGroups = part.numKvGroups;
    config.filterSize = part.filterSize;
    config.maxPositions = part.maxPositions;
    config.attentionInnerDim = part.attentionInnerDim;
}

void takeWarnings(ModelConfig& config, ModelConfig& part)
{
    config.warnings.insert(config.warnings.end(), part.warnings.begin(), part.warnings.end());
    part.warnings.clear();
}

void readFamily(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const std::optional<std::string> name = fields.text(sections.model, "name");
    if (!name) {
        config.family = inferFamily(fields, sections.model, config.fileName);
        config.name = toString(config.family);
        return;
    }
    if (std::optional<F> family = familyFromName(*name)) {
        config.family = *family;
        config.name = toLowerAscii(*name);
        return;
    }
    fields.fail(fields.valueMark(sections.model, "name"),
        "model family '" + *name + "' is not supported (supported families: " + supportedFamilyList() + ")");
}

void readModelShape(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const YamlSection& model = sections.model;
    switch (config.family) {
    case F::Bert:
    case F::BertClassifier:
    case F::BertTokenClassifier:
    case F::BertSummarization:
    case F::BertQuestionAnswering:
    case F::Esm2:
    case F::Linformer:
        readEncoder(fields, sections, config);
        break;
    case F::Dpr:
        readDpr(fields, sections, config);
        break;
    case F::T5:
    case F::Transformer:
        readSeq2Seq(fields, sections, config);
        break;
    case F::LayersApiDemo:
        readLayersApiDemo(fields, sections, config);
        break;
    case F::FcMnist:
        readFcMnist(fields, model, config);
        break;
    case F::VisionTransformer:
    case F::Dino:
    case F::Dit:
    case F::Llava:
    case F::MultimodalSimple:
        readVision(fields, sections, config);
        break;
    case F::Unet:
        readUnet(fields, sections, config);
        break;
    default:
        readDecoder(fields, sections, config);
        if (config.family == F::Mixtral && config.numExperts == 0)
            fields.fail(model.keyMark, "a mixtral model needs a 'moe' block with num_experts and top_k");
        break;
    }
    // Refused before the graph is built: a valid but enormous shape (thousands of layers of
    // thousands of experts) would otherwise take the machine's memory in the graph builder.
    const YamlSection moe
        = fields.value(model, "moe") ? fields.section(model, "moe") : fields.section(model, "moe_params");
    const bool seq2seq = config.family == F::T5 || config.family == F::Transformer;
    const YAML::Mark mark = config.numExperts > 0 ? fields.valueMark(moe, "num_experts")
        : seq2seq                                 ? fields.valueMark(model, "encoder_num_hidden_layers")
                                                  : fields.valueMark(model, "num_hidden_layers");
    const GraphFootprint footprint = estimateGraphFootprint(config);
    if (std::optional<Diagnostic> refused = checkMemory("its op graph (" + formatThousands(footprint.tensors)
                + " weight tensors in " + formatThousands(footprint.ops) + " ops)",
            footprint.bytes, "use fewer layers or experts", Diagnostic {}))
        fields.failAt(mark, *refused);
    if (const double parameters = parameterBound(config); parameters > kMaxParameters) {
        std::ostringstream message;
        message << std::setprecision(2) << "the model would have up to " << parameters
                << " parameters; WaferScope counts at most " << kMaxParameters
                << " (the largest published models have about 2e+12): use smaller hidden, filter or vocabulary "
                   "sizes, or fewer layers or experts";
        fields.fail(fields.valueMark(model, seq2seq ? "d_model" : "hidden_size"), message.str());
    }
}

} // namespace waferscope::core
