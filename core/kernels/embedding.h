#pragma once

#include "core/kernels/kernelcost.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace waferscope::core {

// The embedding: output lane i summed by a chain over its block of the region's columns (every
// row, serpentine), the token id multicast from the region's first PE.
struct EmbeddingLookupShape {
    int width = 1; // region columns, at least one per lane
    int height = 1;
    std::vector<std::int64_t> laneSizes;
    int simdWidth = 8;
};
KernelCost costEmbeddingLookup(const EmbeddingLookupShape& shape);

} // namespace waferscope::core
