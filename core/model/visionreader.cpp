// No header of its own: defines readVision, one of the family readers of shapefields.h.
// Vision and multimodal models: ViT classification, DINOv2 (teacher and student trunks with
// their projection heads), DiT over VAE latents, and LLaVA / multimodal_simple (a ViT tower, a
// projector and a language model). Sizes as the Model Zoo's ViT embedding layer reads them.
#include "core/model/shapefields.h"

#include "core/model/namepattern.h"

namespace waferscope::core {

namespace {

using F = ModelConfig::Family;

constexpr std::int64_t kMaxImage = 1 << 16; // pixels a side
constexpr std::int64_t kMaxChannels = 1 << 12;

// An integer or a [height, width] pair.
std::pair<std::int64_t, std::int64_t> readPair(
    const YamlFields& fields, const YamlSection& section, const std::string& key, std::int64_t max, bool required)
{
    const std::optional<YAML::Node> node = fields.value(section, key);
    if (!node) {
        if (required)
            fields.fail(
                section.keyMark, "missing key '" + section.path + "." + key + "' (an integer or [height, width])");
        return { 0, 0 };
    }
    if (node->IsScalar()) {
        const std::int64_t value = fields.integer(section, key, 1, max).value();
        return { value, value };
    }
    const std::vector<std::int64_t> pair = fields.integerList(section, key, 1, max);
    if (pair.size() != 2)
        fields.fail(node->Mark(), "'" + section.path + "." + key + "' must be an integer or [height, width]");
    return { pair[0], pair[1] };
}

// The ViT encoder every image family shares (ViTModel / MultiImageViTModel / DiT's trunk).
void readImageEncoder(const YamlFields& fields, const YamlSection& model, ModelConfig& config, bool imageRequired)
{
    config.hiddenSize = fields.requiredInteger(model, "hidden_size", 1, kMaxHidden);
    config.numLayers = fields.requiredInteger(model, "num_hidden_layers", 1, kMaxLayers);
    config.numHeads = fields.requiredInteger(model, "num_heads", 1, kMaxHidden);
    config.numKvGroups = config.numHeads;
    config.filterSize = fields.requiredInteger(model, "filter_size", 1, kMaxFilter);
    config.attentionInnerDim = config.hiddenSize;
    if (config.hiddenSize % config.numHeads != 0)
        fields.fail(fields.valueMark(model, "num_heads"),
            "num_heads must divide hidden_size (got " + std::to_string(config.hiddenSize) + " and "
                + std::to_string(config.numHeads) + ")");
    config.activation = parseActivation(
        fields.choice(model, "nonlinearity", { WS_ACTIVATIONS })
            .value_or(fields.choice(model, "encoder_nonlinearity", { WS_ACTIVATIONS }).value_or("gelu")));
    config.norm = ModelConfig::Norm::LayerNorm;
    config.projectionBiasInAttention = fields.boolean(model, "use_projection_bias_in_attention").value_or(true);
    config.ffnBiasInAttention = fields.boolean(model, "use_ffn_bias_in_attention").value_or(true);
    config.ffnBias = fields.boolean(model, "use_ffn_bias").value_or(true);
    const auto [patchHeight, patchWidth] = readPair(fields, model, "patch_size", kMaxImage, true);
    config.patchHeight = patchHeight;
    config.patchWidth = patchWidth;
    if (imageRequired) {
        const auto [height, width] = readPair(fields, model, "image_size", kMaxImage, true);
        config.imageHeight = height;
        config.imageWidth = width;
        config.numChannels = fields.integer(model, "num_channels", 1, kMaxChannels).value_or(3);
    }
    if (config.imageHeight % config.patchHeight != 0 || config.imageWidth % config.patchWidth != 0)
        fields.fail(fields.valueMark(model, "patch_size"),
            "the patch (" + std::to_string(config.patchHeight) + " x " + std::to_string(config.patchWidth)
                + ") must tile the image (" + std::to_string(config.imageHeight) + " x "
                + std::to_string(config.imageWidth) + ")");
    config.patchBias = fields.boolean(model, "use_embed_proj_bias").value_or(true);
    config.clsToken = fields.boolean(model, "prepend_cls_token").value_or(false);
    config.postEmbedNorm = fields.boolean(model, "use_post_embed_layer_norm").value_or(false);
    config.maskToken = fields.boolean(model, "use_masked_patches").value_or(false);
    config.layerScale = fields.number(model, "layerscale_value", -1e9, 1e9).has_value();
    config.finalNorm = fields.boolean(model, "use_final_layer_norm").value_or(true);
    config.pooler = fields.boolean(model, "use_encoder_pooler_layer").value_or(false);
    const std::string positions
        = fields.choice(model, "position_embedding_type", { "learned", "fixed", "none" }).value_or("learned");
    config.positions = positions == "learned" ? ModelConfig::Positions::Learned
        : positions == "fixed"                ? ModelConfig::Positions::Fixed
                                              : ModelConfig::Positions::None;
    config.maxPositions = config.imageTokens();
    // LLaVA-style towers stop early: a negative index counts from the end (-2: all but the last).
    const std::optional<std::int64_t> select = fields.integer(model, "image_layer_idx", -kMaxLayers, kMaxLayers);
    if (select) {
        const std::int64_t index = ((*select % config.numLayers) + config.numLayers) % config.numLayers;
        config.layersRun = index + 1;
    }
}

#define WS_VISION_KEYS                                                                                                 \
    WS_NEUTRAL_MODEL_KEYS, "image_size", "patch_size", "num_channels", "use_conv_patchified_embedding",                \
        "use_embed_proj_bias", "prepend_cls_token", "use_post_embed_layer_norm", "use_masked_patches",                 \
        "layerscale_value", "use_final_layer_norm", "use_encoder_pooler_layer", "pooler_nonlinearity",                 \
        "image_layer_idx", "interpolate_position_embedding", "projection_initializer",                                 \
        "position_embedding_initializer", "cls_token_initializer", "default_initializer",                              \
        "stochastic_depth_drop_prob", "stochastic_depth_mode", "stochastic_depth_drop_prob_schedule",                  \
        "encoder_nonlinearity", "embd_pdrop"

void readFreeze(const YamlFields& fields, const YamlSection& model, ModelConfig& config)
{
    for (std::string pattern : fields.textList(model, "freeze")) {
        // The Model Zoo's patterns are prefixes and simple wildcards; they run on a linear-time
        // engine (NamePattern), and a long one is refused.
        if (pattern.size() > 256)
            fields.fail(fields.valueMark(model, "freeze"),
                "freeze pattern '" + pattern.substr(0, 64) + "...' is " + std::to_string(pattern.size())
                    + " characters; a pattern has at most 256");
        std::string error;
        if (!NamePattern::compile(pattern, error))
            fields.fail(fields.valueMark(model, "freeze"),
                "freeze pattern '" + pattern + "' is not a valid regular expression: " + error);
        config.freezePatterns.push_back(std::move(pattern));
    }
}

ModelConfig partConfig(const ModelConfig& parent, F family, const std::string& name)
{
    ModelConfig part;
    part.fileName = parent.fileName;
    part.schema = parent.schema;
    part.family = family;
    part.name = name;
    return part;
}

void readViT(const YamlFields& fields, const YamlSection& model, ModelConfig& config)
{
    readImageEncoder(fields, model, config, true);
    config.numClasses = fields.requiredInteger(model, "num_classes", 1, kMaxVocab);
    config.biasInOutput = fields.boolean(model, "use_bias_in_output").value_or(true);
    config.dinoClassifier = fields.boolean(model, "use_dinov2_classifier").value_or(false);
    readFreeze(fields, model, config);
    fields.warnUnknownKeys(model,
        { WS_VISION_KEYS, "num_classes", "use_bias_in_output", "use_dinov2_classifier", "freeze", "vit_model" },
        config.warnings);
}

void readDit(const YamlFields& fields, const YamlSection& model, ModelConfig& config)
{
    // The latent the VAE makes is the image here: the vae block gives its size and channels
    // (the VAE itself encodes the dataset ahead of training and is not part of the model).
    const YamlSection vae = fields.section(model, "vae");
    auto [height, width] = readPair(fields, model, "latent_size", kMaxImage, false);
    if (height == 0)
        std::tie(height, width) = readPair(fields, vae, "latent_size", kMaxImage, true);
    config.imageHeight = height;
    config.imageWidth = width;
    const std::optional<std::int64_t> channels = fields.integer(model, "latent_channels", 1, kMaxChannels);
    config.numChannels = channels ? *channels : fields.requiredInteger(vae, "latent_channels", 1, kMaxChannels);
    readImageEncoder(fields, model, config, false);
    config.numClasses = fields.requiredInteger(model, "num_classes", 1, kMaxVocab);
    config.frequencyEmbeddingSize = fields.integer(model, "frequency_embedding_size", 1, kMaxHidden).value_or(256);
    config.labelRows
        = config.numClasses + (fields.number(model, "label_dropout_rate", 0.0, 1.0).value_or(0.0) > 0.0 ? 1 : 0);
    fields.warnUnknownKeys(model,
        { WS_VISION_KEYS, "num_classes", "vae", "reverse_process", "schedule_name", "frequency_embedding_size",
            "label_dropout_rate", "num_diffusion_steps", "embedding_nonlinearity", "latent_size", "latent_channels",
            "block_type", "use_conv_transpose_unpatchify", "beta_start", "beta_end" },
        config.warnings);
}

// "image_model_trunks.output(trunk, forward, which)": which 0 is every token, 1 the [CLS].
struct TrunkOutput {
    int trunk = 0;
    int forward = 0;
    int which = 0;
};

std::vector<TrunkOutput> trunkOutputs(const YAML::Node& forwardArgs)
{
    std::string invalid;
    static const NamePattern reference
        = *NamePattern::compile(R"(image_model_trunks\.output\((\d{1,4}),\s*(\d{1,4}),\s*(\d{1,4})\))", invalid);
    std::vector<TrunkOutput> outputs;
    if (!forwardArgs.IsSequence())
        return outputs;
    for (const YAML::Node& call : forwardArgs) {
        if (!call.IsSequence())
            continue;
        for (const YAML::Node& argument : call) {
            const std::string text = argument.IsScalar() ? argument.Scalar() : std::string();
            if (const std::optional<std::vector<std::string>> match = reference.searchGroups(text))
                outputs.push_back({ std::stoi((*match)[0]), std::stoi((*match)[1]), std::stoi((*match)[2]) });
        }
    }
    return outputs;
}

// DINOv2: trunk 0 the teacher (global crops), trunk 1 the student (global, then local crops);
// each head reads the [CLS] or every token of some trunk's views.
void readDino(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const YamlSection& model = sections.model;
    const YamlSection crops
        = fields.section(fields.section(sections.trainInput, "ssl_transform"), "multi_crop_transform");
    config.globalCrops = fields.integer(crops, "global_num_crops", 1, 64).value_or(2);
    config.localCrops = fields.integer(crops, "local_num_crops", 0, 64).value_or(8);
    const std::optional<YAML::Node> trunks = fields.value(model, "image_model_trunks");
    if (!trunks || !trunks->IsSequence() || trunks->size() == 0)
        fields.fail(fields.valueMark(model, "image_model_trunks"),
            "'" + model.path + ".image_model_trunks' must list the trunks (teacher, student)");
    std::vector<std::vector<bool>> trunkViewIsLocal; // per trunk, per forward
    for (std::size_t t = 0; t < trunks->size(); ++t) {
        const YAML::Node entry = (*trunks)[t];
        if (!entry.IsMap())
            fields.fail(entry.Mark(), "each image_model_trunks entry must be a mapping with an image_model");
        const YamlSection item { entry, entry.Mark(), model.path + ".image_model_trunks[" + std::to_string(t) + "]" };
        const YamlSection encoder = fields.section(item, "image_model", true);
        ModelConfig trunk = partConfig(config, F::VisionTransformer, t == 0 ? "teacher" : "student");
        readImageEncoder(fields, encoder, trunk, true);
        fields.warnUnknownKeys(encoder, { WS_VISION_KEYS }, config.warnings);
        config.parts.push_back({ t == 0 ? "teacher" : "student", { trunk } });
        std::vector<bool> views;
        if (const std::optional<YAML::Node> args = fields.value(item, "forward_args"); args && args->IsSequence())
            for (const YAML::Node& call : *args)
                views.push_back(call.IsSequence() && call.size() > 0 && call[0].IsScalar()
                    && call[0].Scalar().find("local") != std::string::npos);
        trunkViewIsLocal.push_back(views.empty() ? std::vector<bool> { false } : views);
    }
    const ModelConfig& student = config.parts.back().config.front();
    config.localImageSize = fields.integer(crops, "local_image_size", 1, kMaxImage).value_or(student.imageHeight);
    const std::int64_t localPatches
        = (config.localImageSize / student.patchHeight) * (config.localImageSize / student.patchWidth);
    // Each trunk's views: its patches and tokens per sample, and its attention's mean keys (a
    // crop's tokens attend the crop's tokens).
    for (std::size_t t = 0; t < config.parts.size(); ++t) {
        ModelConfig& trunk = config.parts[t].config.front();
        double keysTimesTokens = 0.0;
        for (bool local : trunkViewIsLocal[t]) {
            const std::int64_t images = local ? config.localCrops : config.globalCrops;
            const std::int64_t patches = local ? localPatches : trunk.patches();
            const std::int64_t tokens = patches + (trunk.clsToken ? 1 : 0);
            trunk.viewPatchesPerSample += images * patches;
            trunk.viewTokensPerSample += images * tokens;
            keysTimesTokens += double(images) * double(tokens) * double(tokens);
        }
        trunk.viewKeysPerToken = keysTimesTokens / double(std::max<std::int64_t>(1, trunk.viewTokensPerSample));
    }
    auto viewTokens = [&](int trunk, int forward, int which) -> std::int64_t {
        const ModelConfig& part = config.parts[std::size_t(trunk)].config.front();
        const auto& views = trunkViewIsLocal[std::size_t(trunk)];
        const bool local = std::size_t(forward) < views.size() && views[std::size_t(forward)];
        const std::int64_t images = local ? config.localCrops : config.globalCrops;
        const std::int64_t tokens = (local ? localPatches : part.patches()) + (part.clsToken ? 1 : 0);
        return images * (which == 1 ? 1 : tokens);
    };
    const std::optional<YAML::Node> heads = fields.value(model, "heads");
    if (heads && heads->IsSequence()) {
        for (std::size_t h = 0; h < heads->size(); ++h) {
            const YAML::Node entry = (*heads)[h];
            if (!entry.IsMap())
                fields.fail(entry.Mark(), "each heads entry must be a mapping with a head_model");
            const YamlSection item { entry, entry.Mark(), model.path + ".heads[" + std::to_string(h) + "]" };
            const YamlSection head = fields.section(item, "head_model", true);
            ModelConfig::ProjectionHead projection;
            projection.input = fields.requiredInteger(head, "input_size", 1, kMaxHidden);
            projection.hidden = fields.integer(head, "hidden_size", 1, kMaxHidden).value_or(2048);
            projection.bottleneck = fields.integer(head, "bottleneck_size", 1, kMaxHidden).value_or(256);
            projection.output = fields.requiredInteger(head, "output_size", 1, kMaxVocab);
            projection.layers = fields.integer(head, "num_layers", 2, 64).value_or(3);
            projection.bias = fields.boolean(head, "use_bias_in_mlp").value_or(true);
            const std::optional<YAML::Node> args = fields.value(item, "forward_args");
            for (const TrunkOutput& output : trunkOutputs(args ? *args : YAML::Node())) {
                if (output.trunk < 0 || std::size_t(output.trunk) >= config.parts.size())
                    fields.fail(fields.valueMark(item, "forward_args"),
                        "forward_args name trunk " + std::to_string(output.trunk) + ", which does not exist");
                projection.trunk = output.trunk;
                projection.tokensPerSample += viewTokens(output.trunk, output.forward, output.which);
            }
            config.heads.push_back(projection);
        }
    }
    readFreeze(fields, model, config);
    adoptShape(config, student);
    fields.warnUnknownKeys(model,
        { "name", "image_model_trunks", "heads", "losses", "freeze", "ema", "copy_init_weights",
            "compute_eval_metrics" },
        config.warnings);
}

// LLaVA: image_model (ViTModel), projector.image_model (an FFN), text_model (a decoder);
// multimodal_simple: image_model_list.image_models[].image_encoder, global_image_projection.
void readMultimodal(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const YamlSection& model = sections.model;
    const bool llava = config.family == F::Llava;
    YamlSection tower;
    YamlSection projector;
    std::optional<std::int64_t> select;
    if (llava) {
        tower = fields.section(model, "image_model", true);
        projector = fields.section(fields.section(model, "projector", true), "image_model", true);
        select = fields.integer(model, "image_feature_select_layer_idx", -kMaxLayers, kMaxLayers);
    } else {
        const YamlSection list = fields.section(model, "image_model_list", true);
        const std::optional<YAML::Node> encoders = fields.value(list, "image_models");
        if (!encoders || !encoders->IsSequence() || encoders->size() != 1 || !(*encoders)[0].IsMap())
            fields.fail(fields.valueMark(list, "image_models"),
                "'" + list.path + ".image_models' must list one image encoder (WaferScope builds one tower)");
        const YamlSection item { (*encoders)[0], (*encoders)[0].Mark(), list.path + ".image_models[0]" };
        tower = fields.section(item, "image_encoder", true);
        projector = fields.section(list, "global_image_projection", true);
    }
    ModelConfig vision = partConfig(config, F::VisionTransformer, "image_model");
    readImageEncoder(fields, tower, vision, true);
    if (select) {
        const std::int64_t index = ((*select % vision.numLayers) + vision.numLayers) % vision.numLayers;
        vision.layersRun = index + 1;
    }
    fields.warnUnknownKeys(tower, { WS_VISION_KEYS }, config.warnings);
    config.projectorInput = fields.requiredInteger(projector, "input_unit", 1, kMaxHidden);
    config.projectorUnits = fields.integerList(projector, "layers_units", 1, kMaxHidden);
    if (config.projectorUnits.empty())
        fields.fail(projector.keyMark, "missing key '" + projector.path + ".layers_units' (the projector's widths)");
    config.projectorBias = fields.boolean(projector, "use_bias").value_or(true);

    const YamlSection text = fields.section(model, "text_model", true);
    const std::string textName = fields.text(text, "name").value_or("llama");
    const std::string lowered = textName.size() > 5 && textName.substr(textName.size() - 5) == "Model"
        ? textName.substr(0, textName.size() - 5)
        : textName;
    ModelConfig language = partConfig(config, F::Llama, lowered);
    const std::optional<F> family = familyFromName(lowered);
    if (!family || !isDecoderLanguageModel(*family))
        fields.fail(fields.valueMark(text, "name"),
            "the text model must be a decoder-only language model, got '" + textName + "'");
    language.family = *family;
    readDecoder(fields, withModelSection(sections, text), language);
    takeWarnings(config, language);
    readFreeze(fields, model, config);
    adoptShape(config, language);
    config.parts.push_back({ "image_model", { vision } });
    config.parts.push_back({ "text_model", { language } });
    fields.warnUnknownKeys(model,
        { "name", "image_model", "text_model", "projector", "image_model_list", "freeze", "loss_scaling", "loss_weight",
            "image_feature_select_layer_idx", "image_feature_select_mode", "image_start_idx" },
        config.warnings);
}

} // namespace

void readVision(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    switch (config.family) {
    case F::VisionTransformer:
        readViT(fields, sections.model, config);
        break;
    case F::Dit:
        readDit(fields, sections.model, config);
        break;
    case F::Dino:
        readDino(fields, sections, config);
        break;
    default:
        readMultimodal(fields, sections, config);
        break;
    }
}

} // namespace waferscope::core
