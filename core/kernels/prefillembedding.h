#pragma once

#include "core/kernels/kernelcost.h"

#include <cstdint>
#include <span>

namespace waferscope::core {

// The prefill embedding on the cycle-level fabric
// (core/cyclelevel/kernels/prefillembeddingkernel.h): the closed form of a whole prompt's lookup
// on a g x g block, the token table split by rows over the block's rows and by hidden blocks over
// its columns. Each block row's lane of ids is fed along the row (from the PE before its first
// column, a wavelet a cycle from cycle 0, every PE taking it whole); each token band's tile then
// goes round its column's ring, taking its rows at every PE that holds some, and ends with the
// learned positions added. Cross-checked against the fabric in
// tests/core/cyclelevel/test_prefilllayer.cpp; engine cycles and link wavelets are exact. A
// lookup step's cycles depend on how many of the band's ids fall in the PE's share of the table,
// so the form takes the prompt's ids.
struct PrefillEmbeddingShape {
    int grid = 1; // g
    std::span<const std::int32_t> ids; // the prompt
    std::int64_t vocab = 1;
    std::int64_t hidden = 1;
    bool positions = false; // learned positions added
    int simdWidth = 8;
};
KernelCost costPrefillEmbedding(const PrefillEmbeddingShape& shape);

} // namespace waferscope::core
