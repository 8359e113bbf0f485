// Closed form of the prefill embedding of the cycle-level run.
//
// It follows the kernel's programs (core/cyclelevel/kernels/prefillembeddingkernel.cpp) with the
// block timer of prefillringtiming.h: at step s PE (x, y) holds token band ring(x) + ring(y) + s,
// headed by its ids, and takes the rows of the ids in its share of the vocabulary (a cycle an id
// and a cycle a SIMD group of the rows it copies), then sends the tile on up its column.
#include "core/kernels/prefillembedding.h"
#include "core/kernels/prefillringtiming.h"

#include <algorithm>
#include <vector>

namespace waferscope::core {

using prefillring::elementwise;

KernelCost costPrefillEmbedding(const PrefillEmbeddingShape& shape)
{
    const int g = shape.grid;
    const auto tokens = std::int64_t(shape.ids.size());
    if (g < 1 || tokens < 1 || shape.vocab < 1 || shape.hidden < 1)
        return {};
    const int simd = std::max(1, shape.simdWidth);
    prefillring::BlockTimer timer(g);
    const prefillring::Ring& ring = timer.ring();
    const prefillring::EvenSplit bands(tokens, g);
    const prefillring::EvenSplit blocks(shape.hidden, g);
    const auto width = [&](int x) { return blocks.size(x); };
    const auto bandAt = [&](int x, int y, int s) { return (ring.position(x) + ring.position(y) + s) % g; };
    const auto rows = [&](int x, int y, int s) { return bands.size(bandAt(x, y, s)); };
    for (int y = 0; y < g; ++y) {
        std::int64_t lane = 0;
        for (int x = 0; x < g; ++x)
            lane += rows(x, y, 0);
        timer.feed(y, lane);
    }
    for (int s = 0; s < g; ++s) {
        timer.compute([&](int x, int y) {
            const std::int64_t n = rows(x, y, s);
            if (n == 0 || width(x) == 0)
                return 0.0;
            const std::int64_t first = shape.vocab * y / g;
            const std::int64_t end = shape.vocab * (y + 1) / g;
            std::int64_t found = 0;
            const int band = bandAt(x, y, s);
            for (std::int64_t t = bands.begin(band); t < bands.begin(band) + bands.size(band); ++t)
                found += shape.ids[std::size_t(t)] >= first && shape.ids[std::size_t(t)] < end;
            return std::max(1.0, double(n) + elementwise(found * width(x), 1, simd));
        });
        if (s + 1 == g)
            break;
        timer.shift(false, [&](int x, int y) { return rows(x, y, s) * (1 + width(x)); });
    }
    if (shape.positions)
        timer.compute([&](int x, int y) {
            const std::int64_t n = rows(x, y, g - 1) * width(x);
            return n > 0 ? elementwise(n, 1, simd) : 0.0;
        });
    return timer.cost();
}

} // namespace waferscope::core
