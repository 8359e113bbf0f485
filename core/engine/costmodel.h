#pragma once

#include "core/common/names.h"
#include "core/engine/calibration.h"
#include "core/fabric/kernels.h"
#include "core/kernels/kernelcost.h"

#include <cstdint>

namespace waferscope::core::engine {

// The engine's cost model: the closed forms of the kernels it times with the calibration's task
// costs. The region kernels' closed forms (decode and prefill) are the kernels' own, in
// core/kernels/ (gemv.h, experts.h, norm.h, attention.h, embedding.h, and the prefill
// kernels' prefill*.h), from the specs the cycle-level kernels are built from.

// The fabric kernels as core/fabric builds them (GEMV, streamed GEMM, row/column broadcast and
// reduce), for the same KernelConfig.
KernelCost costKernel(const fabric::KernelConfig& config, const Calibration& calibration, int hopLatencyCycles = 1);

// A weight-streaming op on the whole wafer (rows x cols PEs): Y (out x tokens) = W (out x in)
// X (in x tokens) with X resident and W streamed in. The engine's mapping: tokens in tiles of
// (at least) the SIMD width, the input features of a token tile split over as many PEs as the
// wafer has room for; each PE multiplies every arriving weight of its feature slice into its
// tokens, and the partial sums of a token tile are reduced along its chain of PEs. Sparse
// weights stream as (value, index) with a marker per output row; zeros cost nothing.
struct StreamedGemmShape {
    std::int64_t outFeatures = 0;
    std::int64_t inFeatures = 0;
    std::int64_t tokens = 0;
    double density = 1.0; // non-zero share of the weights
};
struct StreamedGemmCost : KernelCost {
    std::int64_t featureTile = 0; // input features per PE
    std::int64_t tokenTile = 0; // tokens per PE
    std::int64_t pesUsed = 0;
};
StreamedGemmCost costStreamedGemm(const StreamedGemmShape& shape, int rows, int cols, int simdWidth,
    const Calibration& calibration, int hopLatencyCycles = 1);

} // namespace waferscope::core::engine
