#pragma once

#include "core/kernels/kernelcost.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace waferscope::core {

// A LayerNorm or RMSNorm down one column, a lane per PE on consecutive rows.
struct NormColumnShape {
    std::vector<std::int64_t> laneSizes; // from the top PE down
    bool layerNorm = true; // else RMSNorm: one reduction and broadcast instead of two
    int simdWidth = 8;
};
KernelCost costNormColumn(const NormColumnShape& shape);

} // namespace waferscope::core
