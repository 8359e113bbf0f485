#pragma once

#include "core/kernels/kernelspec.h"
#include "core/kernels/weightsource.h"

#include <cstdint>
#include <span>

namespace waferscope::core::cyclelevel {

// The numeric contract of a training step on the cycle-level wafer (trainreference.h), beside
// the decode's (referenceops.h, whose S(), linear and activations it shares). Its kernels follow
// it to the bit except for the order of the weight gradient's sum over the tokens, which the
// fabric adds by PE column.
//
//  1. Linear: z_i = S(Σ_j W_ij x_j + b_i), the inputs ascending, the bias last (the weight of an
//     input that is always 1, which is how the weight stream carries it).
//  2. Activation: h = S(act(z)); the output layer's logits are its z.
//  3. Loss, per token t of n with label y over the M logits z: m = max_k z_k;
//     e_k = exp(z_k - m); l = Σ_k e_k; loss_t = (log(l) + m) - z_y; the step's loss (Σ_t loss_t) / n
//     in float, t ascending. Its gradient dz_k = S((e_k / l - [k = y]) * g), g = float(loss
//     scale) / float(n): the loss-scaled mean's. A padding token (label -1) has loss 0 and dz 0.
//  4. Backward delta: dh_j = S(Σ_i W_ij dz_i), the outputs ascending; then
//     dz'_j = S(dh_j * act'(z'_j)) for the layer below, z' its pre-activation (relu': 1 above 0,
//     else 0).
//  5. Weight gradient: dW_ij = Σ_t dz_i[t] x_j[t] in float, not rounded (the bias's: x = 1); the
//     optimizer's input, which MemoryX receives.
//  6. The optimizer runs in MemoryX on FP32 master weights (optimizer.h); the weights streamed
//     are S(master).
//
// A transformer's step (traingpt.h) adds, with referenceops.h's norms, GELU and residual forms:
//  7. GELU's derivative (the tanh form): th = tanh(c (z + 0.044715 z^3)), c = float(sqrt(2/pi));
//     gelu'(z) = 0.5 (1 + th) + 0.5 z (1 - th th) c (1 + 3 * 0.044715 z^2), evaluated as
//     geluDerivative() writes it.
//  8. LayerNorm backward, per token over n values with dy the incoming gradient and carry the
//     residual stream's: x^ and inv as the forward computes them; g_i = dy_i w_i; sg = Σ g;
//     sgx = Σ g x^; dx_i = S(carry_i + S(inv * ((g_i - sg / n) - x^_i * (sgx / n)))); the norm's
//     weight and bias gradients Σ_t S(dy x^) and Σ_t dy, summed over the tokens as (5) sums (its
//     terms are 16-bit operands, as every operand of the gradient kernel).
//  9. Causal attention of one head over a sequence, keys in blocks of T tokens (a PE's): a query
//     takes its own block first, then the blocks before it nearest first. Per block, with s_j =
//     (Σ_d q_d k_jd) * (1 / sqrt(hd)) over the block's keys j <= the query in its sequence, in
//     order: m' = max(m, max s_j); a = exp(m - m'); l = l a + Σ_j exp(s_j - m');
//     acc_d = acc_d a + Σ_j exp(s_j - m') v_jd; m = m' (from m = -inf, l = 0, acc = 0).
//     o_d = S(acc_d / l); lse = m + log(l) (float, kept for the backward).
// 10. Attention backward: D_t = Σ_d dO_td o_td; for a query t and key j as in (9):
//     p = exp(s - lse_t); dp = Σ_d dO_td v_jd; ds = p * (dp - D_t). dq_d = Σ_j ds k_jd over the
//     key blocks in (9)'s order; dk_d = Σ_t ds q_td and dv_d = Σ_t p dO_td over the query blocks,
//     the key's own first, then those after it nearest first. dQ = S(dq * scale), dK =
//     S(dk * scale), dV = S(dv).

// S(), or no rounding at all (`exact`): the tests' finite differences take the step's gradients
// with no rounding in the way.
struct Rounding {
    Rounding() = default;
    Rounding(Storage format) // NOLINT(google-explicit-constructor): a storage is its rounding
        : storage(format)
    {
    }
    Rounding(Storage format, bool none)
        : storage(format)
        , exact(none)
    {
    }
    Storage storage = Storage::Fp16;
    bool exact = false;
    float operator()(float value) const { return exact ? value : roundToStorage(value, storage); }
};

// d act(z) / dz for the activations a training step has a derivative of (relu, gelu); false for
// the others (the caller refuses them).
bool hasTrainingDerivative(Activation activation);
float activationDerivative(Activation activation, float z);
float geluDerivative(float z);
// h = R(act(z)) by referenceops' forms (relu, gelu).
float activate(Activation activation, float z, Rounding round);

// LayerNorm (referenceops' form 2) of one token; `bias` empty: none.
void layerNormForward(std::span<const float> x, std::span<const float> weight, std::span<const float> bias,
    float epsilon, Rounding round, std::span<float> out);
// (8): dx (n values), and when `weightTerms` is not empty, S(dy x^) there and dy in `biasTerms`;
// `carry` empty: none.
void layerNormBackward(std::span<const float> x, std::span<const float> weight, std::span<const float> dy,
    std::span<const float> carry, float epsilon, Rounding round, std::span<float> dx, std::span<float> weightTerms,
    std::span<float> biasTerms);

// A block of T tokens of one head: token t of it is position `first + t` of its sequence of
// `sequence` tokens (positions count from the sequence's start; tokens of two sequences never
// meet: blocks hold one sequence's tokens); rows of hd values.
struct AttentionBlock {
    std::span<const float> rows; // T x hd
    std::int64_t first = 0; // the block's first token's index in the micro-batch
    std::int64_t tokens = 0;
};
// (9): one key block's update of the queries' m, l and acc (T x hd).
void attentionForwardBlock(AttentionBlock queries, AttentionBlock keys, std::span<const float> values,
    std::int64_t sequence, std::int64_t headDim, std::span<float> max, std::span<float> sum, std::span<float> acc);
// (9)'s end: o (T x hd) and lse from m, l and acc.
void attentionFinish(std::span<const float> max, std::span<const float> sum, std::span<const float> acc,
    std::int64_t headDim, Rounding round, std::span<float> out, std::span<float> lse);
// (10)'s D of the block's queries: dO . o per token.
void attentionDelta(
    std::span<const float> dOut, std::span<const float> out, std::int64_t headDim, std::span<float> delta);
// (10), query side: one key block's contribution to dq (T x hd, FP32, unscaled).
void attentionQueryGradBlock(AttentionBlock queries, std::span<const float> dOut, std::span<const float> lse,
    std::span<const float> delta, AttentionBlock keys, std::span<const float> values, std::int64_t sequence,
    std::int64_t headDim, std::span<float> dq);
// (10), key side: one query block's contribution to dk and dv (the key block's, FP32, unscaled).
void attentionKeyGradBlock(AttentionBlock keys, std::span<const float> values, AttentionBlock queries,
    std::span<const float> dOut, std::span<const float> lse, std::span<const float> delta, std::int64_t sequence,
    std::int64_t headDim, std::span<float> dk, std::span<float> dv);
// Whether key token j of the micro-batch is seen by query token t: same sequence, j <= t.
inline bool attends(std::int64_t t, std::int64_t j, std::int64_t sequence)
{
    return j <= t && j / sequence == t / sequence;
}

// (3) for one token: writes dz (M values) and returns loss_t.
float softmaxCrossEntropy(
    std::span<const float> logits, std::int32_t label, float gradientScale, Rounding round, std::span<float> dz);
// A decoder's (3) over logits in `rows` bands (the layout's, blockBegin()): l is the bands' sums,
// each over its band in order, added in band order ((l_0 + l_1) + l_2) ..., as the column
// all-reduce adds them; otherwise as (3).
float bandedSoftmaxCrossEntropy(std::span<const float> logits, std::int32_t label, float gradientScale, int rows,
    Rounding round, std::span<float> dz);

} // namespace waferscope::core::cyclelevel
