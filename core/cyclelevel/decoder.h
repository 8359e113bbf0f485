#pragma once

#include "core/common/expected.h"
#include "core/kernels/kernelspec.h"
#include "core/kernels/weightsource.h"
#include "core/model/modelconfig.h"
#include "core/model/modelgraph.h"

#include <cstdint>
#include <string>

namespace waferscope::core::cyclelevel {

// The decoder language model the cycle-level run executes: a pre-norm transformer with the
// variants below and nothing else. decoderShape() refuses every config that would need more.
struct DecoderShape {
    enum class Positions : std::uint8_t { Learned, Rotary, Alibi, None };
    enum class Norm : std::uint8_t { LayerNorm, RmsNorm };
    using Activation = core::Activation;

    std::string name;
    Storage storage = Storage::Bf16;
    std::int64_t vocab = 0;
    std::int64_t hidden = 0;
    std::int64_t layers = 0;
    std::int64_t heads = 0;
    std::int64_t kvHeads = 0; // query head h reads kv head h / (heads / kvHeads)
    std::int64_t headDim = 0;
    std::int64_t ffn = 0; // inner width of the feed-forward (of each expert)
    std::int64_t maxPositions = 0; // positions a sequence may use (rows of a learned table)
    Positions positions = Positions::Learned;
    double ropeTheta = 10000.0;
    Norm norm = Norm::LayerNorm;
    bool normBias = true; // LayerNorm only: false for a biasless LayerNorm
    float normEpsilon = 1e-5f;
    Activation activation = Activation::Gelu;
    bool qkvBias = false;
    bool outBias = false; // the attention output projection's bias
    bool ffnBias = false;
    bool lmHeadBias = false;
    bool tiedHead = false; // LM head == token embedding
    std::int64_t experts = 0; // > 0: a mixture-of-experts feed-forward in every block
    std::int64_t topK = 0;

    bool operator==(const DecoderShape&) const = default;
    bool gated() const { return activation == Activation::SwiGlu || activation == Activation::GeGlu; }
    std::int64_t queryWidth() const { return heads * headDim; }
    std::int64_t kvWidth() const { return kvHeads * headDim; }
};

const char* toString(DecoderShape::Positions positions);
const char* toString(DecoderShape::Norm norm);

// The shape of a decoder language model config, or a CannotMap diagnostic naming what the
// cycle-level run does not support. Scalars the config does not carry (muP multipliers, rotary
// scaling) are not part of the shape: the reference runs the plain architecture.
Expected<DecoderShape> decoderShape(const ModelConfig& config);
Expected<DecoderShape> decoderShape(const ModelGraph& graph);

} // namespace waferscope::core::cyclelevel
