// Closed form of the prefill's cache move: per row of the block, the round's stream of 2 d
// values a position leaves the row's last PE a wavelet a cycle; each region PE of the head's row
// takes the whole stream (a cycle a wavelet) and keeps its own position's.
#include "core/kernels/prefillcachemove.h"

#include "core/kernels/closedform.h"

#include <algorithm>

namespace waferscope::core {

KernelCost costPrefillCacheMove(const PrefillCacheMoveShape& shape)
{
    const int g = shape.grid;
    if (g < 1 || shape.headDim < 1 || shape.tokens < 1 || shape.regionWidth < 1)
        return {};
    const auto d2 = 2.0 * double(shape.headDim);
    const std::int64_t w = shape.regionWidth;
    const std::int64_t columns = std::min(shape.tokens, w);
    const double stream = d2 * double(shape.tokens); // every round's, one after another
    double busy = 0.0;
    double links = 0.0;
    // The chain: the band of positions of the PE at chain index x passes the g - 1 - x hops after it
    // (the bands split the prompt evenly), relayed at each PE it passes.
    for (int x = 0; x < g; ++x) {
        const double band = double(shape.tokens * (x + 1) / g - shape.tokens * x / g);
        busy += d2 * band * double(g - 1 - x);
        links += d2 * band * double(g - 1 - x);
    }
    busy *= double(g); // every row alike
    links *= double(g);
    busy += double(g) * double(columns) * stream; // every region PE of a head's row takes every round
    links += double(g) * stream * double(shape.hops);
    const double cycles = stream + double(g - 1) * closedform::kChainHop + double(shape.hops) + 2.0;
    return closedform::decodeCost(cycles, busy, double(g) * double(g + columns), stream, stream, links);
}

} // namespace waferscope::core
