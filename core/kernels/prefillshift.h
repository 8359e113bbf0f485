#pragma once

#include "core/kernels/kernelcost.h"

#include <cstdint>
#include <vector>

namespace waferscope::core {

// The prefill block's moves (core/cyclelevel/kernels/prefillshiftkernel.h and
// prefillcombinekernel.h), in closed form. A shift moves every tile of a g x g block `steps` ring
// positions up the columns, a send and a receive a step; a combine adds or gates two tiles at each
// PE without moving a wavelet. Cross-checked against the fabric in
// tests/core/cyclelevel/test_prefilllayer.cpp; engine cycles and link wavelets are exact.
struct PrefillShiftShape {
    int grid = 1; // g
    int steps = 1;
    std::vector<std::int64_t> sizes; // per PE (y * g + x): the values of the tile it starts with
};
KernelCost costPrefillShift(const PrefillShiftShape& shape);

struct PrefillCombineShape {
    int grid = 1; // g
    std::vector<std::int64_t> sizes; // per tile: its values, at a PE of its own
    int opsPerValue = 1; // the residual's add and rounding 1, the gated activation 8
    int simdWidth = 8;
};
KernelCost costPrefillCombine(const PrefillCombineShape& shape);

} // namespace waferscope::core
