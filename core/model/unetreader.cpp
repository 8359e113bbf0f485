// No header of its own: defines readUnet, one of the family readers of shapefields.h.
// U-Net (Model Zoo Releases 1.x to 2.0): a convolutional encoder-decoder for segmentation, 2-D or
// 3-D. The image shape and class count come from the input section.
#include "core/model/shapefields.h"

#include "core/common/text.h"

namespace waferscope::core {

namespace {

constexpr std::int64_t kMaxSide = 1 << 16;
constexpr std::int64_t kMaxFilters = 1 << 16;

} // namespace

void readUnet(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const YamlSection& model = sections.model;
    const YamlSection& input = sections.trainInput;
    const bool volumes = fields.boolean(model, "use_conv3d").value_or(false);
    const std::string shapeKey = fields.value(input, "image_shape") ? "image_shape" : "input_shape";
    const std::vector<std::int64_t> shape = fields.integerList(input, shapeKey, 1, kMaxSide);
    // 2-D: [height, width, channels]; 3-D: [depth, height, width] with input_channels.
    if (shape.size() != (volumes ? 3u : 3u))
        fields.fail(fields.valueMark(input, shapeKey),
            "'" + input.path + "." + shapeKey + "' must be "
                + (volumes ? "[depth, height, width]" : "[height, width, channels]"));
    config.imageShape.assign(shape.begin(), shape.begin() + (volumes ? 3 : 2));
    config.numChannels = fields.integer(model, "input_channels", 1, 4096).value_or(volumes ? 1 : shape.back());
    config.encoderFilters = fields.integerList(model, "encoder_filters", 1, kMaxFilters);
    config.decoderFilters = fields.integerList(model, "decoder_filters", 1, kMaxFilters);
    if (config.encoderFilters.size() < 2 || config.encoderFilters.size() > 17)
        fields.fail(fields.valueMark(model, "encoder_filters"),
            "'" + model.path
                + ".encoder_filters' needs 2 to 17 entries (the blocks, each halving the image, and "
                  "the bottleneck)");
    if (config.decoderFilters.size() + 1 != config.encoderFilters.size())
        fields.fail(fields.valueMark(model, "decoder_filters"),
            "'" + model.path + ".decoder_filters' needs one entry per encoder block ("
                + std::to_string(config.encoderFilters.size() - 1) + ")");
    const std::vector<std::string> convs = fields.textList(model, "convs_per_block");
    for (const std::string& conv : convs)
        if (conv != "3x3_conv")
            fields.fail(fields.valueMark(model, "convs_per_block"),
                "convs_per_block '" + conv + "' is not supported (WaferScope builds 3x3_conv blocks)");
    config.convsPerBlock = convs.empty() ? 2 : int(convs.size());
    const std::optional<std::string> norm
        = fields.choice(model, "norm_layer", { "group", "batchnorm2d", "batchnorm3d", "group_instance", "instance" });
    config.convNorm = norm.has_value();
    config.convBias = fields.boolean(model, "enable_bias").value_or(!config.convNorm);
    config.stridedDownscale
        = fields.choice(model, "downscale_method", { "max_pool", "strided_conv" }).value_or("max_pool")
        == "strided_conv";
    config.downscaleFirstConv = fields.boolean(model, "downscale_first_conv").value_or(false);
    const std::size_t blocks = config.encoderFilters.size() - 1;
    config.downscaleBlocks.assign(blocks, true);
    if (const std::optional<YAML::Node> given = fields.value(model, "downscale_encoder_blocks")) {
        if (given->IsSequence()) {
            if (given->size() != blocks)
                fields.fail(
                    given->Mark(), "'" + model.path + ".downscale_encoder_blocks' needs one entry per encoder block");
            for (std::size_t i = 0; i < blocks; ++i)
                config.downscaleBlocks[i] = (*given)[i].as<bool>();
        } else {
            config.downscaleBlocks.assign(blocks, fields.boolean(model, "downscale_encoder_blocks").value());
        }
    }
    config.downscaleBottleneck = fields.boolean(model, "downscale_bottleneck").value_or(false);
    const std::int64_t classes = fields.requiredInteger(input, "num_classes", 1, 1 << 20);
    const std::string loss = toLowerAscii(fields.text(model, "loss").value_or(classes <= 2 ? "bce" : "ssce"));
    config.outputChannels
        = loss.find("bce") != std::string::npos && loss.find("multilabel_bce") == std::string::npos ? 1 : classes;
    config.numClasses = classes;
    // Each block halves every side; the sides must allow it.
    const std::int64_t halvings = std::int64_t(blocks) + (config.downscaleBottleneck ? 1 : 0);
    for (std::int64_t side : config.imageShape)
        if (side % (std::int64_t(1) << halvings) != 0)
            fields.fail(fields.valueMark(input, shapeKey),
                "each side of '" + input.path + "." + shapeKey + "' must halve " + std::to_string(halvings)
                    + " times (got " + std::to_string(side) + ")");
    std::int64_t voxels = 1;
    for (std::int64_t side : config.imageShape)
        voxels *= side;
    config.maxPositions = voxels; // a voxel is a token
    config.hiddenSize = config.encoderFilters.back();
    config.numLayers = std::int64_t(2 * blocks + 1);
    fields.warnUnknownKeys(model,
        { WS_NEUTRAL_MODEL_KEYS, "use_conv3d", "input_channels", "encoder_filters", "decoder_filters",
            "convs_per_block", "norm_layer", "norm_kwargs", "enable_bias", "downscale_method", "downscale_first_conv",
            "downscale_encoder_blocks", "downscale_bottleneck", "skip_connect", "residual_blocks", "loss",
            "bias_initializer", "eval_ignore_classes", "eval_metrics", "initial_conv_filters", "use_bfloat16" },
        config.warnings);
}

} // namespace waferscope::core
