#pragma once

#include "core/common/names.h"
#include "core/engine/calibration.h"
#include "core/fabric/kernels.h"
#include "core/kernels/attention.h"
#include "core/kernels/embedding.h"
#include "core/kernels/experts.h"
#include "core/kernels/gemv.h"
#include "core/kernels/kernelcost.h"
#include "core/kernels/norm.h"
#include "core/kernels/kernelspec.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::core::engine {

// The decode kernels' closed forms are the kernels' own (core/kernels/: gemv.h, experts.h, norm.h,
// attention.h, embedding.h), from the specs the cycle-level kernels are built from.

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

// ---- Prefill attention on the cycle-level fabric (core/cyclelevel/kernels/prefillattentionkernel.h) ----
// The closed form of a whole prompt's causal attention, cross-checked against the fabric in
// tests/core/test_prefillattention.cpp. Each head has a g x g block of PEs (the blocks stacked
// down the region, all alike): Cannon's shifts on MeshGEMM's interleaved rings for S = Q K^T, the
// softmax chains along each block row, then O = E V on the same rings. It assumes the inputs fed
// as there: each block row's query, key and value lanes sent one after another along the row from
// the PE before the region's first column, one wavelet per cycle, the first at cycle 0. The fields
// mean what they mean for the decode kernels above (linkWavelets and the engine cycles behind
// peBusyFraction exact); fmacs counts whole score and value tiles on and below the diagonal.
// Grouped kv heads change nothing here: each query head's block takes its kv head's keys and values.
struct PrefillAttentionShape {
    int grid = 1; // g
    int heads = 1;
    int headDim = 1;
    std::int64_t tokens = 1;
    int simdWidth = 8;
};
KernelCost costPrefillAttention(const PrefillAttentionShape& shape);

} // namespace waferscope::core::engine
