// Closed form of the prefill norm of the cycle-level run.
//
// It follows the kernel's programs (core/cyclelevel/kernels/prefillnormkernel.cpp) with the block
// timer of prefillringtiming.h. The tiles move one ring position up the columns a step, g - 1
// steps a pass, so at step s of pass p PE (x, y) holds token band
// ring(x) + ring(y) + bandOffset + p (g - 1) + s of hidden block x.
#include "core/kernels/prefillnorm.h"
#include "core/kernels/prefillringtiming.h"

#include <algorithm>
#include <vector>

namespace waferscope::core {

using prefillring::elementwise;

KernelCost costPrefillNorm(const PrefillNormShape& shape)
{
    const int g = shape.grid;
    if (g < 1 || shape.tokens < 1 || shape.hidden < 1)
        return {};
    const int simd = std::max(1, shape.simdWidth);
    prefillring::BlockTimer timer(g);
    const prefillring::Ring& ring = timer.ring();
    const prefillring::EvenSplit bands(shape.tokens, g);
    const prefillring::EvenSplit blocks(shape.hidden, g);
    const int offset = ((shape.bandOffset % g) + g) % g;
    const auto block = [&](int x) { return blocks.size(x); };
    const auto tokens = [&](int x, int y, int moved) {
        return bands.size((ring.position(x) + ring.position(y) + moved + offset) % g);
    };
    const int passes = shape.layerNorm ? 2 : 1;
    for (int pass = 0; pass < passes; ++pass) {
        const int ops = shape.layerNorm && pass == 0 ? 1 : 2; // the sums; the squares or centred squares
        for (int s = 0; s < g; ++s) {
            const int moved = pass * (g - 1) + s;
            timer.compute([&](int x, int y) {
                const std::int64_t size = tokens(x, y, moved) * block(x);
                return size > 0 ? elementwise(size, ops, simd) : 0.0;
            });
            if (s + 1 == g)
                break;
            timer.shift(true, [&](int x, int y) { return tokens(x, y, moved); });
            timer.shift(false, [&](int x, int y) { return tokens(x, y, moved) * block(x); });
            if (pass == 1)
                timer.shift(false, [&](int x, int y) { return tokens(x, y, moved); });
        }
        if (pass == 0 && passes == 2) // the means
            timer.compute([&](int x, int y) {
                const std::int64_t rows = tokens(x, y, g - 1);
                return rows > 0 ? elementwise(rows, 1, simd) : 0.0;
            });
    }
    const int moved = passes * (g - 1);
    timer.compute([&](int x, int y) {
        const std::int64_t rows = tokens(x, y, moved);
        if (rows == 0)
            return 0.0;
        double cycles = elementwise(rows, 2, simd); // the inverse deviations
        if (block(x) > 0)
            cycles += elementwise(rows * block(x), shape.layerNorm ? 2 : 1, simd)
                + elementwise(rows * block(x), shape.bias ? 2 : 1, simd);
        return cycles;
    });
    return timer.cost();
}

} // namespace waferscope::core
