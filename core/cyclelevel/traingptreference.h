#pragma once

#include "core/cyclelevel/traingpt.h"
#include "core/cyclelevel/trainops.h"
#include "core/cyclelevel/trainreference.h"

#include <vector>

namespace waferscope::core::cyclelevel {

// One training step of a GPT-2-style decoder (traingpt.h) by trainops.h's contract, in plain
// loops: the check of the fabric's step, which gives the same loss to the bit and the same
// gradients but for the order of each gradient's sum over the tokens (within ReferenceStep's
// bounds). `weights`: per tensor, as streamed; `masks`: which have a gradient; `layout`: the
// attention's key blocks (trainops.h 9) and the logits' bands (the loss's sums and the head's
// delta: S(Σ_bands Σ_{i in band} W_ij dz_i), the bands' partials added in order). `round` exact: no rounding anywhere
// (the tests' finite differences). The attention of (trainops.h 9, 10) over all heads: q, k and v head-major (tokens x
// 3 hidden), O tokens x hidden, the log-sum-exp tokens x heads.
struct AttentionShape {
    std::int64_t tokens = 0;
    std::int64_t tokensPerPe = 1; // T: the key blocks
    std::int64_t sequence = 1;
    std::int64_t heads = 1;
    std::int64_t headDim = 1;
    std::int64_t hidden = 1; // heads x headDim
};
void referenceAttention(const AttentionShape& shape, const std::vector<float>& qkv, Rounding round,
    std::vector<float>& out, std::vector<float>& lse);
// dq, dk and dv head-major (as qkv) from dO.
std::vector<float> referenceAttentionBackward(const AttentionShape& shape, const std::vector<float>& qkv,
    const std::vector<float>& out, const std::vector<float>& lse, const std::vector<float>& dOut, Rounding round);

// The layout's shape the contract follows: the attention's key blocks and the bands of the
// logits (the loss's sums, the head's delta).
struct DecoderLayout {
    int tokensPerPe = 1; // T
    int rows = 1; // R
};
ReferenceStep referenceStep(const TrainTransformer& net, const std::vector<std::vector<float>>& weights,
    const std::vector<std::vector<float>>& masks, const TrainTokens& tokens, DecoderLayout layout, double lossScale,
    bool withBounds, Rounding round);

} // namespace waferscope::core::cyclelevel
