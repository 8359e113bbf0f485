// Closed form of the prefill ring attention of the cycle-level run.
//
// It follows the kernel's programs (core/cyclelevel/kernels/prefillringattentionkernel.cpp) with
// the block timer of prefillringtiming.h: at step s of a pass, PE x of row y holds the keys of the
// PE s ring positions on (its own at step 0) and computes with them when that band starts at or
// before its own; every step, the last too, ends with the shift of those keys (the second pass:
// then of the values) to the ring target, so that after g steps the tiles are home again.
#include "core/kernels/prefillringattention.h"
#include "core/kernels/prefillringtiming.h"

#include <algorithm>

namespace waferscope::core {

using prefillring::elementwise;
using prefillring::tileProduct;

KernelCost costPrefillRingAttention(const PrefillRingAttentionShape& shape)
{
    const int g = shape.grid;
    if (g < 1 || shape.headDim < 1 || shape.bands.size() != std::size_t(g) * std::size_t(g))
        return {};
    const int simd = std::max(1, shape.simdWidth);
    const std::int64_t hd = shape.headDim;
    prefillring::BlockTimer timer(g);
    const prefillring::Ring& ring = timer.ring();
    const auto band = [&](int x, int y) { return shape.bands[std::size_t(y) * std::size_t(g) + std::size_t(x)]; };
    // The keys PE (x, y) holds at step s.
    const auto keys = [&](int x, int y, int s) { return band(ring.member(ring.position(x) + s), y); };
    const auto visible = [&](int x, int y, int s) {
        const PrefillBand own = band(x, y);
        const PrefillBand other = keys(x, y, s);
        return own.tokens > 0 && other.tokens > 0 && other.first <= own.first;
    };
    double fmacs = 0.0;
    for (const bool weighted : { false, true }) {
        for (int s = 0; s < g; ++s) {
            timer.compute([&](int x, int y) {
                if (!visible(x, y, s))
                    return 0.0;
                const std::int64_t rows = band(x, y).tokens;
                const std::int64_t cols = keys(x, y, s).tokens;
                fmacs += double(rows * cols * hd) * (weighted ? 2.0 : 1.0);
                double cycles = tileProduct(rows, cols, hd, simd) + elementwise(rows * cols, 2, simd);
                if (weighted)
                    cycles += elementwise(rows * cols, 9, simd) + tileProduct(rows, hd, cols, simd);
                return cycles;
            });
            if (g < 2)
                continue;
            const auto out = [&](int x, int y) { return keys(x, y, s).tokens * hd; };
            timer.shift(true, out);
            if (weighted)
                timer.shift(true, out);
        }
    }
    timer.compute([&](int x, int y) {
        const std::int64_t rows = band(x, y).tokens;
        return rows > 0 ? elementwise(rows * hd, 2, simd) : 0.0;
    });
    KernelCost cost = timer.cost();
    cost.fmacs = fmacs;
    return cost;
}

} // namespace waferscope::core
