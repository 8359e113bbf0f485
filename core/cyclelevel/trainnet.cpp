#include "core/cyclelevel/trainnet.h"

#include "core/cyclelevel/trainops.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace waferscope::core::cyclelevel {

namespace {

std::optional<Activation> kernelActivation(ModelConfig::Activation activation)
{
    switch (activation) {
    case ModelConfig::Activation::Relu:
        return Activation::Relu;
    case ModelConfig::Activation::Gelu:
        return Activation::Gelu;
    case ModelConfig::Activation::Silu:
        return Activation::Silu;
    default:
        return std::nullopt;
    }
}

} // namespace

float trainUniform(std::uint64_t key)
{
    const std::uint64_t bits = WeightTensor::mix(key);
    return float(std::int32_t(bits >> 40)) * 0x1p-23f - 1.0f;
}

std::uint64_t trainKey(std::uint64_t seed, std::uint64_t stream, std::uint64_t a, std::uint64_t b)
{
    return WeightTensor::mix(WeightTensor::mix(WeightTensor::mix(seed * WeightTensor::kGolden + stream) + a) + b);
}

Expected<TrainNet> trainNetOf(const ModelGraph& graph, int keepLayers)
{
    const auto refuse = [&](const std::string& why) {
        return Diagnostic { "--level", 0, 0, "cycle-level training of " + graph.config.name + ": " + why,
            Diagnostic::Kind::CannotMap };
    };
    TrainNet net;
    net.model = graph.config.name;
    net.storage = graph.config.fp16Type == "float16" ? Storage::Fp16 : Storage::Bf16;
    bool loss = false;
    for (const Op& op : graph.ops) {
        if (loss)
            return refuse("op '" + op.name + "' after the loss");
        if (op.kind == Op::Kind::Linear || op.kind == Op::Kind::LmHead) {
            TrainLayer layer;
            layer.name = op.name;
            layer.inputs = op.inFeatures;
            layer.outputs = op.outFeatures;
            layer.bias = op.params > op.inFeatures * op.outFeatures;
            for (const ParamTensor& tensor : op.tensors)
                if (tensor.isMatrix)
                    layer.sparsity = std::max(layer.sparsity, tensor.sparsity);
            if (!net.layers.empty() && net.layers.back().outputs != layer.inputs)
                return refuse("op '" + op.name + "' takes " + std::to_string(layer.inputs) + " inputs after "
                    + std::to_string(net.layers.back().outputs) + " outputs");
            net.layers.push_back(layer);
        } else if (op.kind == Op::Kind::Activation) {
            if (net.layers.empty() || net.layers.back().activated)
                return refuse("activation '" + op.name + "' follows no linear layer");
            const std::optional<Activation> activation = kernelActivation(graph.config.activation);
            if (!activation || !hasTrainingDerivative(*activation))
                return refuse("its activation has no training kernel yet (ReLU has)");
            net.layers.back().activated = true;
            net.layers.back().activation = *activation;
        } else if (op.kind == Op::Kind::Loss) {
            loss = true;
        } else {
            return refuse(std::string("the ") + toString(op.kind) + " op '" + op.name
                + "' has no training kernel yet; the cycle level trains stacks of linear layers (fc_mnist)");
        }
    }
    if (net.layers.empty() || !loss)
        return refuse("no linear layers ending in a loss");
    if (net.layers.back().activated)
        return refuse("the last layer's outputs are activated before the loss");
    if (keepLayers > 0 && std::size_t(keepLayers) + 1 < net.layers.size()) {
        TrainLayer head = net.layers.back();
        net.layers.resize(std::size_t(keepLayers));
        head.inputs = net.layers.back().outputs;
        net.layers.push_back(head);
    }
    return net;
}

TrainBatch trainBatch(const TrainNet& net, std::int64_t tokens, std::uint64_t seed, std::int64_t step)
{
    TrainBatch batch;
    batch.tokens = tokens;
    const std::int64_t n = net.layers.front().inputs;
    const std::int64_t classes = net.classes();
    batch.inputs.resize(std::size_t(tokens * n));
    batch.labels.resize(std::size_t(tokens));
    for (std::int64_t t = 0; t < tokens; ++t) {
        const auto label = std::int32_t(
            std::uint64_t(trainKey(seed, 1, std::uint64_t(step), std::uint64_t(t))) % std::uint64_t(classes));
        batch.labels[std::size_t(t)] = label;
        for (std::int64_t j = 0; j < n; ++j) {
            const float prototype = trainUniform(trainKey(seed, 2, std::uint64_t(label), std::uint64_t(j)));
            const float noise
                = trainUniform(trainKey(seed, 3, std::uint64_t(step) << 32 | std::uint64_t(t), std::uint64_t(j)));
            batch.inputs[std::size_t(t * n + j)] = roundToStorage(0.75f * prototype + 0.25f * noise, net.storage);
        }
    }
    return batch;
}

double TrainOptimizer::learningRate(std::int64_t step) const
{
    if (constantRate > 0.0 || settings.schedule.empty())
        return constantRate > 0.0 ? constantRate : settings.learningRate;
    std::int64_t at = step;
    for (std::size_t i = 0; i < settings.schedule.size(); ++i) {
        const ModelConfig::LearningRateSegment& piece = settings.schedule[i];
        const bool last = i + 1 == settings.schedule.size();
        if (!last && piece.steps > 0 && at >= piece.steps) {
            at -= piece.steps;
            continue;
        }
        const double share = piece.steps > 0 ? double(std::min(at, piece.steps)) / double(piece.steps) : 0.0;
        if (piece.scheduler == "Linear" || piece.scheduler == "linear")
            return piece.initial + (piece.end - piece.initial) * share;
        if (piece.scheduler == "CosineDecay" || piece.scheduler == "cosine")
            return piece.end + (piece.initial - piece.end) * 0.5 * (1.0 + std::cos(std::numbers::pi * share));
        return piece.initial; // Constant, and the schedulers it does not follow yet
    }
    return settings.learningRate;
}

TrainOptimizer trainOptimizer(const ModelConfig& config, double constantRate)
{
    TrainOptimizer optimizer;
    optimizer.kind = config.optimizer;
    optimizer.settings = config.optimizerSettings;
    optimizer.constantRate = constantRate;
    optimizer.lossScale = config.optimizerSettings.lossScale > 0.0 ? config.optimizerSettings.lossScale : 32768.0;
    return optimizer;
}

TrainState initialState(const TrainNet& net, std::uint64_t seed, TrainOptimizer optimizer)
{
    TrainState state;
    state.optimizer = std::move(optimizer);
    for (std::size_t l = 0; l < net.layers.size(); ++l) {
        const TrainLayer& layer = net.layers[l];
        const std::int64_t width = layer.inputs + 1;
        LayerParameters parameters;
        parameters.master.assign(std::size_t(layer.outputs * width), 0.0f);
        parameters.mask.assign(parameters.master.size(), 1.0f);
        const auto scale = float(std::sqrt(3.0 / double(layer.inputs)));
        const std::uint64_t zeroBelow
            = layer.sparsity > 0.0 ? std::uint64_t(std::clamp(layer.sparsity, 0.0, 0.999999) * 0x1p64) : 0;
        for (std::int64_t o = 0; o < layer.outputs; ++o) {
            for (std::int64_t j = 0; j < layer.inputs; ++j) {
                const std::size_t at = std::size_t(o * width + j);
                if (zeroBelow != 0
                    && WeightTensor::mix(trainKey(seed, 11 + 2 * l, std::uint64_t(o), std::uint64_t(j))) < zeroBelow) {
                    parameters.mask[at] = 0.0f;
                    continue;
                }
                parameters.master[at] = roundToStorage(
                    scale * trainUniform(trainKey(seed, 10 + 2 * l, std::uint64_t(o), std::uint64_t(j))), net.storage);
            }
            if (!layer.bias)
                parameters.mask[std::size_t(o * width + layer.inputs)] = 0.0f;
        }
        parameters.momentum.assign(parameters.master.size(), 0.0f);
        parameters.second.assign(parameters.master.size(), 0.0f);
        state.layers.push_back(std::move(parameters));
    }
    return state;
}

std::vector<float> streamedWeights(const LayerParameters& layer, Storage storage)
{
    std::vector<float> weights(layer.master.size());
    for (std::size_t i = 0; i < weights.size(); ++i)
        weights[i] = layer.mask[i] != 0.0f ? roundToStorage(layer.master[i], storage) : 0.0f;
    return weights;
}

bool applyUpdate(TrainState& state, const std::vector<std::vector<float>>& gradients)
{
    TrainOptimizer& optimizer = state.optimizer;
    const ModelConfig::OptimizerSettings& settings = optimizer.settings;
    const bool dynamic = settings.lossScale <= 0.0;
    // Unscale, then the global norm.
    double squares = 0.0;
    bool finite = true;
    std::vector<std::vector<float>> unscaled(gradients.size());
    for (std::size_t l = 0; l < gradients.size(); ++l) {
        unscaled[l].resize(gradients[l].size());
        for (std::size_t i = 0; i < gradients[l].size(); ++i) {
            const float g = float(double(gradients[l][i]) / optimizer.lossScale) * state.layers[l].mask[i];
            finite = finite && std::isfinite(g);
            unscaled[l][i] = g;
            squares += double(g) * double(g);
        }
    }
    if (!finite && dynamic) {
        optimizer.lossScale = std::max(1.0, optimizer.lossScale / 2.0);
        optimizer.cleanSteps = 0;
        return false;
    }
    const double norm = std::sqrt(squares);
    const double clip
        = settings.maxGradientNorm > 0.0 && norm > settings.maxGradientNorm ? settings.maxGradientNorm / norm : 1.0;
    const double rate = optimizer.learningRate(optimizer.steps);
    ++optimizer.steps;
    const bool adam = optimizer.kind == ModelConfig::Optimizer::Adam || optimizer.kind == ModelConfig::Optimizer::AdamW;
    const double correction1 = 1.0 - std::pow(settings.beta1, double(optimizer.steps));
    const double correction2 = 1.0 - std::pow(settings.beta2, double(optimizer.steps));
    for (std::size_t l = 0; l < gradients.size(); ++l) {
        LayerParameters& layer = state.layers[l];
        for (std::size_t i = 0; i < layer.master.size(); ++i) {
            if (layer.mask[i] == 0.0f)
                continue;
            auto g = float(double(unscaled[l][i]) * clip);
            float& w = layer.master[i];
            if (adam) {
                if (optimizer.kind == ModelConfig::Optimizer::Adam)
                    g += float(settings.weightDecay) * w;
                layer.momentum[i] = float(settings.beta1) * layer.momentum[i] + float(1.0 - settings.beta1) * g;
                layer.second[i] = float(settings.beta2) * layer.second[i] + float(1.0 - settings.beta2) * g * g;
                const double step = (double(layer.momentum[i]) / correction1)
                    / (std::sqrt(double(layer.second[i]) / correction2) + settings.epsilon);
                const double decay = optimizer.kind == ModelConfig::Optimizer::AdamW ? settings.weightDecay * w : 0.0;
                w = float(double(w) - rate * (step + decay));
            } else {
                g += float(settings.weightDecay) * w;
                layer.momentum[i] = float(settings.momentum) * layer.momentum[i] + g;
                w = float(double(w) - rate * double(layer.momentum[i]));
            }
        }
    }
    if (dynamic && ++optimizer.cleanSteps >= 2000) {
        optimizer.lossScale *= 2.0;
        optimizer.cleanSteps = 0;
    }
    return true;
}

} // namespace waferscope::core::cyclelevel
