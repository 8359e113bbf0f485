#pragma once

#include "core/kernels/kernelcost.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace waferscope::core {

// Decode attention: `rowsPerHead` rows of `width` PEs per query head, each row a part of the
// head's dimensions (the partial scores summed down each column and sent back up), cache position
// j at column j mod width.
struct DecodeAttentionShape {
    int width = 1;
    int height = 0; // region rows, at least rowsPerHead per head (0: as many)
    int heads = 1;
    int headDim = 1;
    std::int64_t position = 0; // of the token: it attends positions 0..position
    int simdWidth = 8;
    int rowsPerHead = 1;
};
KernelCost costDecodeAttention(const DecodeAttentionShape& shape);

} // namespace waferscope::core
