#pragma once

#include "core/cyclelevel/trainnet.h"

#include <vector>

namespace waferscope::core::cyclelevel {

// One training step by trainops.h's contract in plain loops over the layers, the check of the
// fabric's step: the same weights and batch give the same loss to the bit and the same
// gradients but for the order of the gradient's sum over the tokens.
struct ReferenceStep {
    float loss = 0.0f;
    std::vector<std::vector<float>> gradients; // per layer, loss-scaled, LayerParameters' layout
    // Per layer and weight, what two sums of the gradient's n exact products in any two orders
    // may differ by: 2 γ(n - 1) Σ_t |dz x| with γ(m) = m u / (1 - m u), u = 2^-24 (each order's
    // error is within γ(n - 1) of the exact sum; Higham, Accuracy and Stability of Numerical
    // Algorithms, 2nd ed., eq. 4.4), plus n times the least subnormal for products that
    // underflow.
    std::vector<std::vector<float>> bounds;
};

// `weights`: per layer, the streamed weights (streamedWeights()); `masks`: which have a gradient
// (LayerParameters::mask); `lossScale` scales dz (g).
ReferenceStep referenceStep(const TrainNet& net, const std::vector<std::vector<float>>& weights,
    const std::vector<std::vector<float>>& masks, const TrainBatch& batch, double lossScale, bool withBounds);

} // namespace waferscope::core::cyclelevel
