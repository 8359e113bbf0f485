// Closed forms of the prefill block's moves: the shift up the columns (with the block timer of
// prefillringtiming.h; the tile PE (x, y) holds after m shifts is the one the PE m ring positions
// further on started with) and the combine, one compute step a PE.
#include "core/kernels/prefillshift.h"
#include "core/kernels/prefillringtiming.h"

#include <algorithm>

namespace waferscope::core {

KernelCost costPrefillShift(const PrefillShiftShape& shape)
{
    const int g = shape.grid;
    if (g < 1 || shape.sizes.size() != std::size_t(g) * std::size_t(g))
        return {};
    prefillring::BlockTimer timer(g);
    const prefillring::Ring& ring = timer.ring();
    for (int s = 0; g > 1 && s < shape.steps; ++s)
        timer.shift(false, [&](int x, int y) {
            const int from = ring.member(ring.position(y) + s);
            return shape.sizes[std::size_t(from) * std::size_t(g) + std::size_t(x)];
        });
    return timer.cost();
}

KernelCost costPrefillCombine(const PrefillCombineShape& shape)
{
    double busy = 0.0;
    double busiest = 0.0;
    for (const std::int64_t size : shape.sizes) {
        const double cycles = size > 0 ? prefillring::elementwise(size, shape.opsPerValue, shape.simdWidth) : 0.0;
        busy += cycles;
        busiest = std::max(busiest, cycles);
    }
    // The fabric is quiescent the cycle after the last engine is free.
    return closedform::decodeCost(busiest + 1.0, busy, double(shape.grid) * double(shape.grid), busiest, 0.0, 0.0);
}

} // namespace waferscope::core
