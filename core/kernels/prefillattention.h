#pragma once

#include "core/kernels/kernelcost.h"

#include <cstdint>

namespace waferscope::core {

// Prefill attention on the cycle-level fabric (core/cyclelevel/kernels/prefillattentionkernel.h):
// the closed form of a whole prompt's causal attention, cross-checked against the fabric in
// tests/core/cyclelevel/test_prefillattention.cpp. Each head has a g x g block of PEs (the blocks stacked
// down the region, all alike): Cannon's shifts on MeshGEMM's interleaved rings for S = Q K^T, the
// softmax chains along each block row, then O = E V on the same rings. It assumes the inputs fed
// as there: each block row's query, key and value lanes sent one after another along the row from
// the PE before the region's first column, one wavelet per cycle, the first at cycle 0. The fields
// mean what they mean for the decode kernels (closedform.h: linkWavelets and the engine cycles
// behind peBusyFraction exact); fmacs counts whole score and value tiles on and below the diagonal.
// Grouped kv heads change nothing here: each query head's block takes its kv head's keys and values.
struct PrefillAttentionShape {
    int grid = 1; // g
    int heads = 1;
    int headDim = 1;
    std::int64_t tokens = 1;
    int simdWidth = 8;
};
KernelCost costPrefillAttention(const PrefillAttentionShape& shape);

} // namespace waferscope::core
