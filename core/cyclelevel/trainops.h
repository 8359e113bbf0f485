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

// d act(z) / dz for the activations a training step has a derivative of (relu); false for the
// others (the caller refuses them).
bool hasTrainingDerivative(Activation activation);
float activationDerivative(Activation activation, float z);

// (3) for one token: writes dz (M values) and returns loss_t.
float softmaxCrossEntropy(
    std::span<const float> logits, std::int32_t label, float gradientScale, Storage storage, std::span<float> dz);

} // namespace waferscope::core::cyclelevel
