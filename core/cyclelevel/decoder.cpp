#include "core/cyclelevel/decoder.h"

#include <cmath>
#include <optional>

namespace waferscope::core::cyclelevel {

namespace {

using Config = ModelConfig;

// What of `config` the reference does not run, as the end of "the cycle-level run supports
// pre-norm decoders; NAME ..."; nullopt when it runs all of it. Sparsity has its own message.
std::optional<std::string> unsupportedFeature(const Config& config)
{
    if (config.parallelAttention)
        return "uses parallel attention (attention and feed-forward read one normed input)";
    if (config.sandwichNorms)
        return "uses sandwich norms (after attention and feed-forward as well as before)";
    if (config.embeddingLayerNorm)
        return "has a norm after the token embedding";
    if (!config.finalNorm)
        return "has no norm after the last block";
    if (config.qkNormWidth > 0)
        return "normalises q and k";
    if (config.slidingWindow > 0)
        return "uses a sliding attention window";
    if (config.attentionSinkTokens > 0 || config.attentionSinkParameter)
        return "uses attention sinks";
    if (config.attentionLogitSoftcap > 0.0 || config.finalLogitSoftcap > 0.0)
        return "caps logits with a tanh";
    if (config.positions == Config::Positions::Fixed)
        return "uses fixed sinusoidal positions";
    if (config.positions == Config::Positions::Relative)
        return "uses relative position buckets";
    if (config.positions == Config::Positions::Alibi && config.trainableAlibiSlopes)
        return "uses trainable ALiBi slopes";
    if (config.norm == Config::Norm::NonParametric)
        return "uses a non-parametric norm";
    if (config.activation == Config::Activation::Tanh)
        return "uses a tanh feed-forward";
    if (config.activation == Config::Activation::ReGlu)
        return "uses a ReGLU feed-forward";
    if (config.numSharedExperts > 0)
        return "has shared experts";
    if (config.routerBias)
        return "has a router bias";
    return std::nullopt;
}

DecoderShape::Positions positionsOf(Config::Positions positions)
{
    switch (positions) {
    case Config::Positions::Rotary:
        return DecoderShape::Positions::Rotary;
    case Config::Positions::Alibi:
        return DecoderShape::Positions::Alibi;
    case Config::Positions::None:
        return DecoderShape::Positions::None;
    default:
        return DecoderShape::Positions::Learned;
    }
}

DecoderShape::Activation activationOf(Config::Activation activation)
{
    switch (activation) {
    case Config::Activation::Relu:
        return DecoderShape::Activation::Relu;
    case Config::Activation::Silu:
        return DecoderShape::Activation::Silu;
    case Config::Activation::SwiGlu:
        return DecoderShape::Activation::SwiGlu;
    case Config::Activation::GeGlu:
        return DecoderShape::Activation::GeGlu;
    default:
        return DecoderShape::Activation::Gelu;
    }
}

Diagnostic cannotMap(const Config& config, const std::string& message)
{
    Diagnostic diagnostic;
    diagnostic.file = config.fileName;
    diagnostic.message = message;
    diagnostic.kind = Diagnostic::Kind::CannotMap;
    return diagnostic;
}

} // namespace

const char* toString(DecoderShape::Positions positions)
{
    switch (positions) {
    case DecoderShape::Positions::Learned:
        return "learned";
    case DecoderShape::Positions::Rotary:
        return "rotary";
    case DecoderShape::Positions::Alibi:
        return "alibi";
    case DecoderShape::Positions::None:
        return "none";
    }
    return "unknown";
}

const char* toString(DecoderShape::Norm norm)
{
    return norm == DecoderShape::Norm::LayerNorm ? "layernorm" : "rmsnorm";
}

Expected<DecoderShape> decoderShape(const ModelConfig& config)
{
    if (!isDecoderLanguageModel(config.family))
        return cannotMap(config,
            "the cycle-level run supports decoder language models; " + config.name + " is a " + toString(config.family)
                + " model");
    if (std::optional<std::string> feature = unsupportedFeature(config))
        return cannotMap(config, "the cycle-level run supports pre-norm decoders; " + config.name + " " + *feature);
    if (config.sparsity > 0.0)
        return cannotMap(config,
            "the cycle-level run supports dense weights; " + config.name + " has a weight sparsity of "
                + std::to_string(int(std::lround(config.sparsity * 100.0))) + "%");
    if (config.numHeads <= 0 || config.attentionInnerDim % config.numHeads != 0 || config.numKvGroups <= 0
        || config.numHeads % config.numKvGroups != 0)
        return cannotMap(config,
            "the cycle-level run needs whole heads; " + config.name + " has " + std::to_string(config.numHeads)
                + " heads, " + std::to_string(config.numKvGroups) + " kv groups and attention width "
                + std::to_string(config.attentionInnerDim));

    DecoderShape shape;
    shape.name = config.name;
    shape.storage = config.fp16Type == "float16" ? Storage::Fp16 : Storage::Bf16; // bfloat16; cbfloat16 as bf16
    shape.vocab = config.vocabSize;
    shape.hidden = config.hiddenSize;
    shape.layers = config.numLayers;
    shape.heads = config.numHeads;
    shape.kvHeads = config.numKvGroups;
    shape.headDim = config.attentionInnerDim / config.numHeads;
    shape.ffn = config.filterSize;
    shape.maxPositions = config.maxPositions;
    shape.positions = positionsOf(config.positions);
    shape.ropeTheta = config.ropeTheta;
    shape.norm = config.norm == Config::Norm::RmsNorm ? DecoderShape::Norm::RmsNorm : DecoderShape::Norm::LayerNorm;
    shape.normBias = config.norm == Config::Norm::LayerNorm;
    shape.activation = activationOf(config.activation);
    shape.qkvBias = config.projectionBiasInAttention;
    shape.outBias = config.ffnBiasInAttention;
    shape.ffnBias = config.ffnBias;
    shape.lmHeadBias = config.biasInOutput;
    shape.tiedHead = config.shareEmbeddingWeights;
    shape.experts = config.numExperts;
    shape.topK = config.numExperts > 0 ? config.topK : 0;
    if (shape.positions == DecoderShape::Positions::Rotary && shape.headDim % 2 != 0)
        return cannotMap(config,
            "the cycle-level run rotates pairs of a head; " + config.name + " has an odd head size "
                + std::to_string(shape.headDim));
    return shape;
}

Expected<DecoderShape> decoderShape(const ModelGraph& graph)
{
    return decoderShape(graph.config);
}

} // namespace waferscope::core::cyclelevel
