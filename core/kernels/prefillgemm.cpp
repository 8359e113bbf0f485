// Closed form of the prefill GEMM of the cycle-level run.
//
// It follows the kernel's programs (core/cyclelevel/kernels/prefillgemmkernel.cpp) through the
// fabric's timing rules, with the ring phase of the prefill attention's closed form
// (prefillringtiming.h, whose header gives the rules):
//  - the feed: a block row's lane passes each of its PEs at a wavelet a cycle, each PE taking it
//    whole; PE x has the last at 2 + x + the lane's length;
//  - g ring steps: a tile product, then the row shift of the partial outputs, then the column
//    shift of the input tiles (none after the last product); a PE that receives without sending
//    first waits for its sends to drain (its two buffers of each tile alternate);
//  - the epilogue at each PE: bias and rounding, and the activation.
// Engine cycles and link wavelets are counted exactly: the kernel fixes every tile's size and
// route, each task's cycles per wavelet and each compute step's cycles.
#include "core/kernels/prefillgemm.h"
#include "core/kernels/prefillringtiming.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace waferscope::core {

using prefillring::elementwise;
using prefillring::tileProduct;

namespace {

// The kernel's tiling: block row y holds output band y, block column x input block x; PE (x, y)
// holds token band (ring(x) + ring(y) + s) mod g at step s (PrefillGrid::blockAt).
class GemmTiling : public prefillring::Ring {
public:
    explicit GemmTiling(const PrefillGemmShape& shape)
        : Ring(shape.grid)
        , simd(std::max(1, shape.simdWidth))
        , activation(shape.activation)
        , rotary(shape.rotary)
        , offset(((shape.bandOffset % shape.grid) + shape.grid) % shape.grid)
    {
        for (int b = 0; b <= g; ++b) {
            m_tokens.push_back(shape.tokens * b / g);
            m_ins.push_back(shape.inFeatures * b / g);
            m_outs.push_back(shape.outFeatures * b / g);
        }
    }
    std::int64_t in(int x) const { return m_ins[std::size_t(x) + 1] - m_ins[std::size_t(x)]; }
    std::int64_t out(int y) const { return m_outs[std::size_t(y) + 1] - m_outs[std::size_t(y)]; }
    std::int64_t tokens(int x, int y, int s) const
    {
        const auto band = std::size_t((position(x) + position(y) + s + offset) % g);
        return m_tokens[band + 1] - m_tokens[band];
    }
    // Wavelets PE (x, y) sends at step s: partial outputs along its row, its input tile up its column.
    std::int64_t partialOut(int x, int y, int s) const { return tokens(x, y, s) * out(y); }
    std::int64_t inputOut(int x, int y, int s) const { return tokens(x, y, s) * in(x); }
    std::int64_t lane(int y) const
    {
        std::int64_t total = 0;
        for (int x = 0; x < g; ++x)
            total += inputOut(x, y, 0);
        return total;
    }
    double product(int x, int y, int s) const
    {
        const std::int64_t rows = tokens(x, y, s);
        return rows > 0 && out(y) > 0 && in(x) > 0 ? tileProduct(rows, out(y), in(x), simd) : 0.0;
    }
    double epilogue(int x, int y) const
    {
        const std::int64_t size = tokens(x, y, g - 1) * out(y);
        if (size == 0)
            return 0.0;
        return elementwise(size, 1, simd) + (activation ? elementwise(size, 8, simd) : 0.0)
            + (rotary ? elementwise(size, 6, simd) : 0.0);
    }

    int simd;
    bool activation;
    bool rotary;
    int offset;

private:
    std::vector<std::int64_t> m_tokens, m_ins, m_outs; // g + 1 boundaries each
};

prefillring::Accounts account(const GemmTiling& tiling, bool inPlace)
{
    const int g = tiling.g;
    prefillring::Accounts accounts(g);
    for (int y = 0; y < g; ++y) {
        const double lane = inPlace ? 0.0 : double(tiling.lane(y));
        accounts.addPath(0, y, g - 1, y, lane); // every PE of the row takes every wavelet
        for (int x = 0; x < g; ++x) {
            double& engine = accounts.engine[std::size_t(y * g + x)];
            engine += lane + tiling.epilogue(x, y);
            for (int s = 0; s < g; ++s) {
                engine += tiling.product(x, y, s);
                if (s + 1 == g)
                    continue;
                engine += double(tiling.partialOut(tiling.source(x), y, s) + tiling.inputOut(x, tiling.source(y), s));
                accounts.addPath(x, y, tiling.target(x), y, double(tiling.partialOut(x, y, s)));
                accounts.addPath(x, y, x, tiling.target(y), double(tiling.inputOut(x, y, s)));
            }
        }
    }
    return accounts;
}

} // namespace

KernelCost costPrefillGemm(const PrefillGemmShape& shape)
{
    if (shape.grid < 1 || shape.tokens < 1 || shape.inFeatures < 1 || shape.outFeatures < 1)
        return {};
    const GemmTiling tiling(shape);
    const int g = tiling.g;

    prefillring::Times ready(std::size_t(g) * std::size_t(g), 0.0);
    for (int y = 0; y < g && !shape.inputInPlace; ++y) {
        const std::int64_t lane = tiling.lane(y);
        for (int x = 0; x < g; ++x)
            ready[std::size_t(y * g + x)] = lane > 0 ? 2.0 + double(x) + double(lane) : 0.0;
    }
    ready = prefillring::ringPhase(
        tiling, ready, [&](int x, int y, int s) { return tiling.product(x, y, s); },
        [&](int x, int y, int s) { return tiling.partialOut(x, y, s); },
        [&](int x, int y, int s) { return tiling.inputOut(x, y, s); });
    double last = 0.0;
    for (int y = 0; y < g; ++y)
        for (int x = 0; x < g; ++x)
            last = std::max(last, ready[std::size_t(y * g + x)] + tiling.epilogue(x, y));

    // The fabric is quiescent the cycle after the last engine is free.
    KernelCost cost = account(tiling, shape.inputInPlace).cost(last + 1.0, 1.0);
    cost.fmacs = double(shape.tokens) * double(shape.inFeatures) * double(shape.outFeatures);
    return cost;
}

} // namespace waferscope::core
