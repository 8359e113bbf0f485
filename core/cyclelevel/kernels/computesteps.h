#pragma once

#include "core/fabric/pe.h"

#include <cstdint>

namespace waferscope::core::cyclelevel {

// The compute steps of the decode kernels: each works on one PE's SRAM by the numeric contract
// of referenceops.h, with the same expressions in the same order, so that a kernel differs from
// the reference only where it sums in another order. Step fields are offsets into the PE's
// FP32 array (f32) or 16-bit array (f16) unless said otherwise; flags (Step::color) bit 0 is
// bfloat16 storage (else FP16), bit 1 "has a bias".
namespace steps {

constexpr std::uint8_t kBf16 = 1;
constexpr std::uint8_t kBias = 2;
constexpr std::uint8_t kAlibi = 4;

// Engine cycles of a step over n elements at `ops` SIMD operations each (see kernelcosts).
std::uint32_t elementwiseCycles(std::uint64_t elements, int opsPerElement, int simdWidth);

void zero(fabric::PeState& pe, const fabric::Step& step); // f32[a, a + b) = 0
void partialSum(fabric::PeState& pe, const fabric::Step& step); // f32[c] = sum of f32[a, a + b)
void partialSquares(fabric::PeState& pe, const fabric::Step& step); // f32[c] = sum of squares
void partialCentredSquares(fabric::PeState& pe, const fabric::Step& step); // f32[c] = sum of (x - f32[d])^2
void mean(fabric::PeState& pe, const fabric::Step& step); // f32[c] = f32[a] / scalar (scalar = n)
// f32[c] = 1 / sqrt(f32[a] / scalar + epsilon), epsilon the float whose bits are d.
void inverseDeviation(fabric::PeState& pe, const fabric::Step& step);
// In place on f32[a, a + b): layer norm with weights f16[c..] (then biases f16[c + b..] with kBias),
// mean f32[d] and inverse deviation f32[d + 1].
void layerNormApply(fabric::PeState& pe, const fabric::Step& step);
// In place: x * f32[d] * w, w at f16[c..].
void rmsNormApply(fabric::PeState& pe, const fabric::Step& step);
// f32[d + i] = S(f32[a + i] (+ bias f16[c + i])) for i < b: a linear's output.
void biasRound(fabric::PeState& pe, const fabric::Step& step);
// f32[d + i] = f32[a + i] (+ bias f16[c + i]), not rounded: logits.
void biasOnly(fabric::PeState& pe, const fabric::Step& step);
// f32[d + i] = S(f32[c + i] + f32[a + i]): the residual x (at c) plus the block's output (at a).
void residual(fabric::PeState& pe, const fabric::Step& step);
// In place on f32[a, a + b): S(act(x)); the activation (a DecoderShape::Activation) is scalar's integer.
void activation(fabric::PeState& pe, const fabric::Step& step);
// f32[d + i] = S(act(gate f32[a + i]) * up f32[c + i]) for the gated activation in scalar.
void gated(fabric::PeState& pe, const fabric::Step& step);
// Rotary in place on the head of f32[a, a + b) (b = head size) at position c, theta = scalar.
void rotary(fabric::PeState& pe, const fabric::Step& step);
void roundInPlace(fabric::PeState& pe, const fabric::Step& step); // f32[a, a + b) = S(x)

// Attention of one query head over the positions a PE holds. The PE's workspace at a: q, k, v
// (d each), the running max, its score per held position, then the partial output (d) and
// partial sum of exponentials. b = d | capacity << 16; the cache at f16[c] (keys, capacity x d,
// then values); d = positions held so far.
struct AttentionLayout {
    std::uint32_t base;
    std::uint32_t headDim;
    std::uint32_t capacity;
    std::uint32_t q() const { return base; }
    std::uint32_t k() const { return base + headDim; }
    std::uint32_t v() const { return base + 2 * headDim; }
    std::uint32_t max() const { return base + 3 * headDim; }
    std::uint32_t scores() const { return max() + 1; }
    std::uint32_t partial() const { return scores() + capacity; } // d outputs, then the sum
    // ALiBi: the head's slope, then the column and row width (as integer bits) that give the
    // position of a slot (column + slot x width), then the query's position.
    std::uint32_t alibi() const { return partial() + headDim + 1; }
    std::uint32_t size() const { return 3 * headDim + 1 + capacity + headDim + 1 + 4; }
    std::uint32_t packed() const { return headDim | capacity << 16; }
    static AttentionLayout unpack(std::uint32_t base, std::uint32_t packed)
    {
        return { base, packed & 0xffffu, packed >> 16 };
    }
};
// Stores the k and v of the workspace as the 16-bit entries of slot `d` of the cache at f16[c].
void appendKv(fabric::PeState& pe, const fabric::Step& step);
// Scores of the held positions against q, times scalar (1/sqrt(d)), plus slope x (j - p) with
// flag kAlibi; the running max their largest (-infinity when the PE holds none yet).
void scores(fabric::PeState& pe, const fabric::Step& step);
// The running max of the d held scores (-infinity when none): after a head's rows summed them.
void scoresMax(fabric::PeState& pe, const fabric::Step& step);
// With the row's max in the workspace: the partial output sum(e_j v_j) and sum(e_j), from 0.
void softmaxPartial(fabric::PeState& pe, const fabric::Step& step);
// f32[d + i] = S(partial_i / sum) for i < head size: the head's output, at the row's last PE.
void attentionOutput(fabric::PeState& pe, const fabric::Step& step);

// The embedding contribution of a PE of a lane chain. Its constants at f32[c] (integers stored
// as their bits): the slot of the token id, first and end vocab row held, the f16 base of those
// rows, first and end position row held, their base, and the position. Writes the lane's b
// values to f32[a]: the token's row if held, plus the position's row if held, else zeros.
void embeddingContribution(fabric::PeState& pe, const fabric::Step& step);
// Argmax of the logits f32[a, a + b) whose first id is d: f32[c] = value, f32[c + 1] = id bits.
void localArgmax(fabric::PeState& pe, const fabric::Step& step);
// Keeps in (f32[c], f32[c + 1]) the better of itself and the incoming pair at f32[a]: the larger
// value, the lower id on a tie.
void argmaxCombine(fabric::PeState& pe, const fabric::Step& step);

// MoE routing at the router's exit: the top-k of softmax(logits f32[a, a + b)) with their
// renormalised weights (referenceops route()), scalar = k; f32[d, d + b) = each expert's weight,
// 0 for the experts not chosen.
void route(fabric::PeState& pe, const fabric::Step& step);
// pe.select = the weight of expert b in f32[a..] is not 0: whether this expert runs the token.
void selectExpert(fabric::PeState& pe, const fabric::Step& step);
// A dispatched GEMV's multiply once its expert is chosen: for each of the b inputs at f32[a..]
// in order, f32[d + i] += W[j][i] * x_j over the scalar's (integer) outputs, W the column-major
// 16-bit block at f16[c] (the FmacColumn task's arithmetic, from a buffer).
void fmacFromBuffer(fabric::PeState& pe, const fabric::Step& step);
// f32[d + i] = f32[c] * f32[a + i] for i < b: an expert's output times its routing weight.
void scaleByWeight(fabric::PeState& pe, const fabric::Step& step);

} // namespace steps

} // namespace waferscope::core::cyclelevel
