#pragma once

#include "core/kernels/kernelcost.h"

#include <cstdint>

namespace waferscope::core {

// The prefill norm on the cycle-level fabric (core/cyclelevel/kernels/prefillnormkernel.h): the
// closed form of LayerNorm or RMSNorm over a whole prompt on a g x g block, the hidden vectors in
// place as a plain prefill GEMM takes them (PE (x, y) token band ring(x) + ring(y) + bandOffset of
// hidden block x). Each pass (RMSNorm one, LayerNorm two) is g steps of a PE's row sums, the
// partial sums shifted along the rows and the tiles (the second pass: with their means) up the
// columns between them; then each PE's inverse deviations, centring and scaling. Cross-checked
// against the fabric in tests/core/cyclelevel/test_prefillnorm.cpp; engine cycles and link
// wavelets are exact.
struct PrefillNormShape {
    int grid = 1; // g
    std::int64_t tokens = 1;
    std::int64_t hidden = 1;
    bool layerNorm = false;
    bool bias = false; // LayerNorm's
    int bandOffset = 0;
    int simdWidth = 8;
};
KernelCost costPrefillNorm(const PrefillNormShape& shape);

} // namespace waferscope::core
