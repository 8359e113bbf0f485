#include "core/cyclelevel/traingpt.h"

#include <algorithm>
#include <cmath>

namespace waferscope::core::cyclelevel {

std::vector<TrainTransformer::Tensor> TrainTransformer::tensors() const
{
    const std::int64_t D = hidden;
    std::vector<Tensor> out;
    out.push_back({ "wte", Kind::TokenTable, vocab, D + 1, tied && headBias });
    out.push_back({ "wpe", Kind::PositionTable, sequence, D, false });
    for (std::int64_t b = 0; b < blocks; ++b) {
        const std::string at = "h" + std::to_string(b) + ".";
        out.push_back({ at + "ln1", Kind::Norm, 1, 2 * D, true });
        out.push_back({ at + "qkv", Kind::Matrix, 3 * D, D + 1, qkvBias });
        out.push_back({ at + "proj", Kind::Matrix, D, D + 1, projBias });
        out.push_back({ at + "ln2", Kind::Norm, 1, 2 * D, true });
        out.push_back({ at + "fc1", Kind::Matrix, ffn, D + 1, ffnBias });
        out.push_back({ at + "fc2", Kind::Matrix, D, ffn + 1, ffnBias });
    }
    out.push_back({ "ln_f", Kind::Norm, 1, 2 * D, true });
    if (!tied)
        out.push_back({ "lm_head", Kind::Matrix, vocab, D + 1, headBias });
    return out;
}

Expected<TrainTransformer> trainTransformerOf(const ModelGraph& graph, int keepBlocks, std::int64_t sequence)
{
    const ModelConfig& config = graph.config;
    const auto refuse = [&](const std::string& why) {
        return Diagnostic { "--level", 0, 0, "cycle-level training of " + config.name + ": " + why,
            Diagnostic::Kind::CannotMap };
    };
    if (config.family != ModelConfig::Family::Gpt2 && config.family != ModelConfig::Family::Gpt3)
        return refuse("the cycle level trains GPT-2-style decoders and stacks of linear layers so far");
    if (config.norm != ModelConfig::Norm::LayerNorm)
        return refuse("its norm has no training kernel yet (LayerNorm has)");
    if (config.activation != ModelConfig::Activation::Gelu && config.activation != ModelConfig::Activation::Relu)
        return refuse("its activation has no training kernel yet (GELU and ReLU have)");
    if (config.positions != ModelConfig::Positions::Learned)
        return refuse("its positions have no training kernel yet (learned positions have)");
    if (config.numExperts > 0)
        return refuse("its experts have no training kernel yet");
    if ((config.numKvGroups != 0 && config.numKvGroups != config.numHeads)
        || (config.attentionInnerDim != 0 && config.attentionInnerDim != config.hiddenSize))
        return refuse("grouped or narrowed attention has no training kernel yet");
    if (config.slidingWindow > 0 || config.parallelAttention || config.embeddingLayerNorm || config.sandwichNorms
        || !config.finalNorm)
        return refuse("its block differs from GPT-2's (a window, a parallel block or other norms)");
    TrainTransformer net;
    net.model = config.name;
    net.storage = config.fp16Type == "float16" ? Storage::Fp16 : Storage::Bf16;
    net.vocab = config.vocabSize;
    net.hidden = config.hiddenSize;
    net.heads = config.numHeads;
    net.ffn = config.filterSize;
    const std::int64_t positions = config.maxPositions > 0 ? config.maxPositions : config.sequenceLength;
    // Small by default, so that a step fits one machine: 128 tokens, or the model's fewer.
    const std::int64_t configured = config.sequenceLength > 0 ? config.sequenceLength : positions;
    net.sequence = sequence > 0 ? sequence : std::min({ configured, positions, kDefaultSequence });
    if (net.sequence > positions)
        return Diagnostic { "--max_sequence_length", 0, 0,
            std::to_string(net.sequence) + " positions; the model has " + std::to_string(positions),
            Diagnostic::Kind::BadInput };
    net.blocks = keepBlocks > 0 ? std::min<std::int64_t>(keepBlocks, config.numLayers) : config.numLayers;
    net.qkvBias = config.projectionBiasInAttention;
    net.projBias = config.ffnBiasInAttention;
    net.ffnBias = config.ffnBias;
    net.headBias = config.biasInOutput;
    net.tied = config.shareEmbeddingWeights;
    net.activation = config.activation == ModelConfig::Activation::Relu ? Activation::Relu : Activation::Gelu;
    if (net.heads < 1 || net.hidden % net.heads != 0 || net.vocab < 2 || net.ffn < 1 || net.blocks < 1)
        return refuse("its sizes do not make a decoder");
    return net;
}

TrainState initialState(const TrainTransformer& net, std::uint64_t seed, TrainOptimizer optimizer)
{
    TrainState state;
    state.optimizer = std::move(optimizer);
    const std::vector<TrainTransformer::Tensor> tensors = net.tensors();
    for (std::size_t index = 0; index < tensors.size(); ++index) {
        const TrainTransformer::Tensor& tensor = tensors[index];
        LayerParameters parameters;
        parameters.master.assign(std::size_t(tensor.rows * tensor.cols), 0.0f);
        parameters.mask.assign(parameters.master.size(), 1.0f);
        const std::uint64_t stream = 100 + index;
        for (std::int64_t r = 0; r < tensor.rows; ++r) {
            for (std::int64_t c = 0; c < tensor.cols; ++c) {
                const std::size_t at = std::size_t(r * tensor.cols + c);
                const float u = trainUniform(trainKey(seed, stream, std::uint64_t(r), std::uint64_t(c)));
                switch (tensor.kind) {
                case TrainTransformer::Kind::Norm:
                    parameters.master[at] = c < net.hidden ? 1.0f : 0.0f;
                    break;
                case TrainTransformer::Kind::Matrix:
                    parameters.master[at]
                        = c + 1 < tensor.cols ? float(std::sqrt(3.0 / double(tensor.cols - 1))) * u : 0.0f;
                    break;
                case TrainTransformer::Kind::TokenTable:
                    parameters.master[at] = c < net.hidden ? 0.1f * u : 0.0f;
                    break;
                case TrainTransformer::Kind::PositionTable:
                    parameters.master[at] = 0.1f * u;
                    break;
                }
                parameters.master[at] = roundToStorage(parameters.master[at], net.storage);
            }
            const bool biasColumn
                = tensor.kind == TrainTransformer::Kind::Matrix || tensor.kind == TrainTransformer::Kind::TokenTable;
            if (biasColumn && !tensor.bias)
                parameters.mask[std::size_t(r * tensor.cols + tensor.cols - 1)] = 0.0f;
        }
        parameters.momentum.assign(parameters.master.size(), 0.0f);
        parameters.second.assign(parameters.master.size(), 0.0f);
        state.layers.push_back(std::move(parameters));
    }
    return state;
}

TrainTokens trainTokens(const TrainTransformer& net, std::int64_t samples, std::uint64_t seed, std::int64_t step)
{
    TrainTokens tokens;
    tokens.samples = samples;
    const std::int64_t S = net.sequence;
    const auto V = std::uint64_t(net.vocab);
    const std::uint64_t alphabet = std::min<std::uint64_t>(V, kTrainAlphabet);
    tokens.ids.resize(std::size_t(samples * S));
    tokens.labels.resize(tokens.ids.size());
    for (std::int64_t s = 0; s < samples; ++s) {
        const std::uint64_t sample = std::uint64_t(step) << 32 | std::uint64_t(s);
        std::uint64_t id = WeightTensor::mix(trainKey(seed, 4, sample, 0)) % V;
        for (std::int64_t p = 0; p <= S; ++p) {
            if (p > 0) {
                const std::uint64_t draw = WeightTensor::mix(trainKey(seed, 5, sample, std::uint64_t(p)));
                id = (draw & 3) != 0 ? (3 * id + 7) % alphabet : (draw >> 2) % alphabet;
                tokens.labels[std::size_t(s * S + p - 1)] = std::int32_t(id);
            }
            if (p < S)
                tokens.ids[std::size_t(s * S + p)] = std::int32_t(id);
        }
    }
    return tokens;
}

std::vector<float> embeddingMatrix(const TrainTransformer& net, const std::vector<std::vector<float>>& weights)
{
    const std::int64_t D = net.hidden;
    const std::int64_t V = net.vocab;
    const std::int64_t width = V + net.sequence;
    std::vector<float> out(std::size_t(D * width));
    const std::vector<float>& tokens = weights[TrainTransformer::kTokenTable];
    const std::vector<float>& positions = weights[TrainTransformer::kPositionTable];
    for (std::int64_t i = 0; i < D; ++i) {
        for (std::int64_t v = 0; v < V; ++v)
            out[std::size_t(i * width + v)] = tokens[std::size_t(v * (D + 1) + i)];
        for (std::int64_t p = 0; p < net.sequence; ++p)
            out[std::size_t(i * width + V + p)] = positions[std::size_t(p * D + i)];
    }
    return out;
}

std::vector<float> embeddingInputs(const TrainTransformer& net, const TrainTokens& tokens, std::int64_t padded)
{
    const std::int64_t width = net.vocab + net.sequence;
    std::vector<float> out(std::size_t(padded * width), 0.0f);
    for (std::size_t t = 0; t < tokens.ids.size(); ++t) {
        out[t * std::size_t(width) + std::size_t(tokens.ids[t])] = 1.0f;
        out[t * std::size_t(width) + std::size_t(net.vocab + std::int64_t(t) % net.sequence)] = 1.0f;
    }
    return out;
}

void scatterEmbeddingGradient(
    const TrainTransformer& net, const std::vector<float>& gradient, std::vector<std::vector<float>>& gradients)
{
    const std::int64_t D = net.hidden;
    const std::int64_t V = net.vocab;
    const std::int64_t width = V + net.sequence;
    std::vector<float>& tokens = gradients[TrainTransformer::kTokenTable];
    std::vector<float>& positions = gradients[TrainTransformer::kPositionTable];
    for (std::int64_t i = 0; i < D; ++i) {
        for (std::int64_t v = 0; v < V; ++v)
            tokens[std::size_t(v * (D + 1) + i)] += gradient[std::size_t(i * width + v)];
        for (std::int64_t p = 0; p < net.sequence; ++p)
            positions[std::size_t(p * D + i)] += gradient[std::size_t(i * width + V + p)];
    }
}

} // namespace waferscope::core::cyclelevel
