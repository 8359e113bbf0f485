// No header of its own: defines buildUnet, one of the family builders of builderblocks.h.
// U-Net: encoder blocks of 3^d convolutions (each with a norm and a ReLU) that halve the image
// (max pooling, or a stride-2 convolution), a bottleneck, decoder blocks that double it again
// (a 2^d transposed convolution) and convolve the result with the matching encoder output, and
// a 1^d convolution to the output channels. Convolutions are GEMMs over voxels.
#include "core/model/builderblocks.h"

#include <algorithm>

namespace waferscope::core {

namespace {

struct Resolution {
    std::vector<std::int64_t> sides;
    std::int64_t voxels() const
    {
        std::int64_t count = 1;
        for (std::int64_t side : sides)
            count *= side;
        return count;
    }
    Resolution scaled(bool up) const
    {
        Resolution next = *this;
        for (std::int64_t& side : next.sides)
            side = up ? side * 2 : side / 2;
        return next;
    }
};

class UnetAssembler {
public:
    UnetAssembler(GraphAssembler& graph, const ModelConfig& c)
        : m_graph(graph)
        , m_config(c)
        , m_taps(c.imageShape.size() == 3 ? 27 : 9)
    {
    }

    // A block of convolutions from `in` channels to `out`; `downscale` makes one of them stride 2.
    // Returns the resolution after the block and sets `skip` to the one the decoder reads.
    Resolution block(const std::string& name, int layer, std::int64_t in, std::int64_t out, Resolution resolution,
        bool downscale, Resolution* skip)
    {
        const int strided = downscale ? (m_config.downscaleFirstConv ? 0 : m_config.convsPerBlock - 1) : -1;
        for (int k = 0; k < m_config.convsPerBlock; ++k) {
            if (k == strided)
                resolution = resolution.scaled(false);
            const std::string conv = name + ".layers." + std::to_string(k);
            m_graph.setContext(Op::Stack::None, layer, resolution.voxels());
            m_graph.convolution(conv, conv + ".conv", k == 0 ? in : out, m_taps, out, m_config.convBias);
            if (m_config.convNorm)
                m_graph.norm(conv + ".norm", conv + ".1", out, ModelConfig::Norm::LayerNorm);
            m_graph.activation(conv + ".act", out, ModelConfig::Activation::Relu);
            if (skip && k + 2 == m_config.convsPerBlock)
                *skip = resolution;
        }
        if (skip && m_config.convsPerBlock < 2)
            *skip = resolution;
        return resolution;
    }

    void pool(const std::string& name, int layer, std::int64_t channels, const Resolution& output)
    {
        m_graph.setContext(Op::Stack::None, layer, output.voxels());
        m_graph.pooling(name, channels, std::int64_t(1) << m_config.imageShape.size());
    }

    void upsample(const std::string& name, int layer, std::int64_t in, std::int64_t out, const Resolution& input)
    {
        const std::int64_t children = std::int64_t(1) << m_config.imageShape.size();
        m_graph.setContext(Op::Stack::None, layer, input.voxels());
        m_graph.linear(name, name, in, out * children, false, Op::Kind::Upsampling);
        if (m_config.convBias)
            m_graph.extraTensor(name, name + ".bias", out);
    }

    std::int64_t taps() const { return m_taps; }

private:
    GraphAssembler& m_graph;
    const ModelConfig& m_config;
    std::int64_t m_taps; // 3^d
};

} // namespace

void buildUnet(GraphAssembler& graph, const ModelConfig& c)
{
    UnetAssembler unet(graph, c);
    Resolution resolution { c.imageShape };
    const std::size_t blocks = c.encoderFilters.size() - 1;
    std::vector<Resolution> skips(blocks);
    std::int64_t in = c.numChannels;
    int layer = 0;
    for (std::size_t i = 0; i < blocks; ++i, ++layer) {
        const std::string name = "encoder.unet_blocks." + std::to_string(i);
        const bool strided = c.stridedDownscale && c.downscaleBlocks[i];
        Resolution skip;
        resolution = unet.block(name, layer, in, c.encoderFilters[i], resolution, strided, &skip);
        if (c.stridedDownscale) {
            skips[i] = skip;
        } else {
            skips[i] = resolution;
            resolution = resolution.scaled(false);
            // The pooling opens the next block, so that this block's last output, the skip the
            // decoder reads, is what the block keeps.
            unet.pool(name + ".pool", layer + 1, c.encoderFilters[i], resolution);
        }
        in = c.encoderFilters[i];
    }
    resolution = unet.block("bottleneck", layer++, in, c.encoderFilters.back(), resolution,
        c.stridedDownscale && c.downscaleBottleneck, nullptr);
    in = c.encoderFilters.back();
    for (std::size_t b = 0; b < c.decoderFilters.size(); ++b, ++layer) {
        const std::string up = "decoder.transpose_layers." + std::to_string(b);
        unet.upsample(up, layer, in, c.decoderFilters[b], resolution);
        resolution = skips[blocks - 1 - b];
        // The upsampled channels and the encoder's skip, concatenated.
        const std::int64_t joined = c.decoderFilters[b] + c.encoderFilters[blocks - 1 - b];
        resolution = unet.block(
            "decoder.unet_blocks." + std::to_string(b), layer, joined, c.decoderFilters[b], resolution, false, nullptr);
        in = c.decoderFilters[b];
    }
    graph.setContext(Op::Stack::None, -1, resolution.voxels());
    graph.convolution("final_conv", "final_conv.conv", in, 1, c.outputChannels, true);
    graph.loss("loss", c.outputChannels);
}

} // namespace waferscope::core
