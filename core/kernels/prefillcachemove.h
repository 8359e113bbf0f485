#pragma once

#include "core/kernels/kernelcost.h"

#include <cstdint>

namespace waferscope::core {

// A block's keys and values moved from the prefill block into its attention region's cache
// (WaferDecoder's cache move, core/cyclelevel/waferprefill.cpp), in closed form. In rounds of a
// position a region column: along each row of the prefill block a chain (each PE relays what the
// PEs before it sent, then sends its own positions' keys and values), the last PE into that head's
// tree to the region, where every PE of the head's row takes the round's stream and keeps its
// position's. The rows run side by side, each on its own tree. Cycles: the last PE's stream, a
// wavelet a cycle, behind the chain's and the tree's hops; an estimate at the grain of whole
// streams (the rounds are taken to follow one another without a gap), not checked cycle for cycle.
struct PrefillCacheMoveShape {
    int grid = 1; // g: the prefill block's side, a head a row
    int headDim = 1;
    std::int64_t tokens = 1; // positions moved
    int regionWidth = 1; // the attention region's columns: positions a round
    int hops = 0; // from the block's last column to the farthest region PE a row's tree reaches
};
KernelCost costPrefillCacheMove(const PrefillCacheMoveShape& shape);

} // namespace waferscope::core
