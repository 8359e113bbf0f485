#pragma once

#include "core/kernels/kernelcost.h"

#include <cstdint>
#include <vector>

namespace waferscope::core {

// The token band a PE of a prefill block holds: its first token and how many.
struct PrefillBand {
    std::int64_t first = 0;
    std::int64_t tokens = 0;
};

// Ring attention on the cycle-level fabric (core/cyclelevel/kernels/prefillringattentionkernel.h):
// the closed form of a whole prompt's causal attention on a g x g block, block row y holding head
// y, with the queries, keys and values in place where the projections left them. Two passes round
// each row's ring: the scores and their maxima, then the scores again, their exponentials and
// sums and the weighted values, a shift of the keys (and the values) after every step; then each
// PE's division. Cross-checked against the fabric in
// tests/core/cyclelevel/test_prefillringattention.cpp. Engine cycles and link wavelets are exact;
// fmacs counts three products of every tile on and below the diagonal.
struct PrefillRingAttentionShape {
    int grid = 1; // g
    int headDim = 1;
    std::vector<PrefillBand> bands; // per PE (y * g + x): the tokens it holds; none where empty
    int simdWidth = 8;
};
KernelCost costPrefillRingAttention(const PrefillRingAttentionShape& shape);

} // namespace waferscope::core
