#pragma once

#include "core/kernels/kernelcost.h"

#include <cstdint>

namespace waferscope::core {

// Prefill GEMM on the cycle-level fabric (core/cyclelevel/kernels/prefillgemmkernel.h): the
// closed form of Y = X W^T + b over a whole prompt on a g x g block, cross-checked against the
// fabric in tests/core/cyclelevel/test_prefillgemm.cpp: W stationary (loaded), Cannon's shifts of the
// partial outputs along the rows and of the input tiles up the columns on MeshGEMM's interleaved
// rings, the epilogue where each output tile ends. It assumes the input fed as there: each block
// row's lane sent along the row from the PE before the block's first column, one wavelet per
// cycle, the first at cycle 0; or the input in place where the kernel before left it (a prefill
// block's GEMMs). A transposed GEMM swaps the block's rows and columns, which the interleaved
// rings leave alike: its cost is the plain one's. linkWavelets and the engine cycles behind peBusyFraction are
// exact; fmacs counts tokens x outFeatures x inFeatures.
struct PrefillGemmShape {
    int grid = 1; // g
    std::int64_t tokens = 1;
    std::int64_t inFeatures = 1;
    std::int64_t outFeatures = 1;
    bool activation = false; // an activation after the bias and rounding
    int simdWidth = 8;
    bool rotary = false; // rotary after them
    bool inputInPlace = false; // else fed in lanes
    int bandOffset = 0; // PE (x, y) holds token band ring(x) + ring(y) + bandOffset at step 0
};
KernelCost costPrefillGemm(const PrefillGemmShape& shape);

} // namespace waferscope::core
