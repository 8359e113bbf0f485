// Closed form of the prefill attention kernel of the cycle-level run.
//
// It follows the kernel's programs (core/cyclelevel/kernels/prefillattentionkernel.cpp) through the
// fabric's timing rules (core/fabric/pe.cpp, staticcolorfabric.cpp), at the grain of whole tiles,
// as a max-plus recurrence over the PEs of one head's block (every head's block runs alike):
//  - the feed: a block row's lanes pass each of its PEs at a wavelet a cycle, each PE taking
//    them all; PE x has the last at 2 + x + the lanes' length;
//  - a ring step of a PE: its tile product, then the row shift, then the column shift. A shift's
//    Send starts once the PE's previous send has drained; the receive is armed right after it (or
//    where the send would be) and stores a wavelet a cycle from the later of the cycle after the
//    arm and the arrival of the sender's first wavelet (its Send + 1 + hops, a ring neighbour
//    being one or two hops away); a send drains n cycles after it starts unless its receiver
//    stores later, when it drains as the receiver stores, ahead by what the queues on the way
//    hold (four wavelets a router);
//  - the softmax along each block row: its chains as the decode attention's (chain hops of 1.5
//    cycles on average over the router's round-robin), the back broadcasts a hop a cycle;
//  - the divisions of the finished outputs at the end of each PE's program.
// Engine cycles and link wavelets are counted exactly: the kernel fixes every tile's size and
// route, and each task's wavelet and each compute step's cycles.
#include "core/kernels/prefillattention.h"
#include "core/kernels/prefillringtiming.h"

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

namespace waferscope::core {

using prefillring::ringPhase;
using prefillring::Times;

using prefillring::elementwise;
using prefillring::kChainHop;
using prefillring::tileProduct;

namespace {

// The kernel's tiling and shift schedule (PrefillGrid), for one head's block.
class Tiling : public prefillring::Ring {
public:
    explicit Tiling(const PrefillAttentionShape& shape)
        : Ring(shape.grid)
        , simd(std::max(1, shape.simdWidth))
    {
        for (int b = 0; b <= g; ++b) {
            m_bands.push_back(shape.tokens * b / g);
            m_blocks.push_back(std::int64_t(shape.headDim) * b / g);
        }
    }
    std::int64_t band(int b) const { return m_bands[std::size_t(b) + 1] - m_bands[std::size_t(b)]; }
    std::int64_t block(int b) const { return m_blocks[std::size_t(b) + 1] - m_blocks[std::size_t(b)]; }
    int blockAt(int x, int y, int s) const { return (position(x) + position(y) + s) % g; }
    bool computes(int x, int y) const { return x <= y && band(x) > 0 && band(y) > 0; }
    // Whether a PE the tile at (x, y) meets after step s along the row (the column) computes;
    // whether one it met before did.
    bool rowLater(int x, int y, int s) const
    {
        for (int t = 1; t < g - s; ++t)
            if (computes(member(position(x) - t), y))
                return true;
        return false;
    }
    bool rowBefore(int x, int y, int s) const
    {
        for (int t = 1; t <= s; ++t)
            if (computes(member(position(x) + t), y))
                return true;
        return false;
    }
    bool columnLater(int x, int y, int s) const
    {
        for (int t = 1; t < g - s; ++t)
            if (computes(x, member(position(y) - t)))
                return true;
        return false;
    }
    std::int64_t queryTile(int x, int y, int s) const { return band(y) * block(blockAt(x, y, s)); }
    std::int64_t keyTile(int x, int y, int s) const { return band(x) * block(blockAt(x, y, s)); }
    // Wavelets PE (x, y) sends at step s: query tiles and partial outputs along its row, key and
    // value tiles up its column.
    std::int64_t queryOut(int x, int y, int s) const { return rowLater(x, y, s) ? queryTile(x, y, s) : 0; }
    std::int64_t partialOut(int x, int y, int s) const
    {
        return (computes(x, y) || rowBefore(x, y, s)) && rowLater(x, y, s) ? queryTile(x, y, s) : 0;
    }
    std::int64_t columnOut(int x, int y, int s) const { return columnLater(x, y, s) ? keyTile(x, y, s) : 0; }
    // The row's three lanes: the step-0 tiles of the PEs that take part or pass them on.
    std::int64_t laneWavelets(int y) const
    {
        std::int64_t total = 0;
        for (int x = 0; x < g; ++x) {
            total += computes(x, y) || rowLater(x, y, 0) ? queryTile(x, y, 0) : 0;
            total += computes(x, y) || columnLater(x, y, 0) ? 2 * keyTile(x, y, 0) : 0;
        }
        return total;
    }
    // Engine cycles of PE (x, y)'s products at step s: scores, then weighted values.
    double scores(int x, int y, int s) const
    {
        const std::int64_t b = block(blockAt(x, y, s));
        return computes(x, y) && b > 0 ? tileProduct(band(y), band(x), b, simd) : 0.0;
    }
    double weightedValues(int x, int y, int s) const
    {
        const std::int64_t b = block(blockAt(x, y, s));
        return computes(x, y) && b > 0 ? tileProduct(band(y), b, band(x), simd) : 0.0;
    }
    // The divisions of the outputs that end at PE (x, y).
    double normalise(int x, int y) const
    {
        double cycles = 0.0;
        for (int s = 0; s < g; ++s) {
            const std::int64_t b = block(blockAt(x, y, s));
            if (computes(x, y) && b > 0 && !rowLater(x, y, s))
                cycles += elementwise(band(y) * b, 2, simd);
        }
        return cycles;
    }
    double rowMax(int x, int y) const { return elementwise(band(y) * band(x), 2, simd); }
    double exponentials(int x, int y) const { return elementwise(band(y) * band(x), 9, simd); }

    int simd;

private:
    std::vector<std::int64_t> m_bands;
    std::vector<std::int64_t> m_blocks;
};

// The cycle a chain's last PE takes the first wavelet (decodekernelcosts.cpp's chainHead).
double chainHead(double headSend, const std::vector<double>& ready)
{
    double at = headSend + 2.0;
    for (std::size_t p = 1; p < ready.size(); ++p)
        at = std::max(p == 1 ? at : at + kChainHop, ready[p]);
    return at;
}

// Each block row's softmax over PEs 0..y: the row maxima, a max chain to the diagonal PE and
// back, the exponentials, a sum chain and back.
void softmaxPhase(const Tiling& tiling, Times& ready)
{
    const int g = tiling.g;
    for (int y = 0; y < g; ++y) {
        const auto queries = double(tiling.band(y));
        if (queries == 0.0)
            continue;
        std::vector<double> t;
        for (int x = 0; x <= y; ++x)
            t.push_back(ready[std::size_t(y * g + x)]);
        for (const bool maximum : { true, false }) {
            for (int x = 0; x <= y; ++x)
                t[std::size_t(x)] += maximum ? tiling.rowMax(x, y) : tiling.exponentials(x, y);
            if (y == 0)
                continue;
            std::vector<double> chainReady = t;
            chainReady[0] = 0.0;
            const double last = chainHead(t[0], chainReady) + queries;
            for (int x = 0; x <= y; ++x)
                t[std::size_t(x)] = x == y ? last : last + 1.0 + double(y - x) + queries;
        }
        for (int x = 0; x <= y; ++x)
            ready[std::size_t(y * g + x)] = t[std::size_t(x)];
    }
}

prefillring::Accounts account(const Tiling& tiling)
{
    const int g = tiling.g;
    prefillring::Accounts accounts(g);
    for (int y = 0; y < g; ++y) {
        const auto lanes = double(tiling.laneWavelets(y));
        accounts.addPath(0, y, g - 1, y, lanes); // every PE of the row takes every wavelet
        const auto queries = double(tiling.band(y));
        if (y > 0 && queries > 0.0) { // two chains to the diagonal PE, two broadcasts back
            accounts.addPath(0, y, y, y, 2.0 * queries);
            accounts.addPath(y, y, 0, y, 2.0 * queries);
        }
        for (int x = 0; x < g; ++x) {
            double& engine = accounts.engine[std::size_t(y * g + x)];
            engine += lanes + tiling.normalise(x, y);
            for (int s = 0; s < g; ++s) {
                engine += tiling.scores(x, y, s) + tiling.weightedValues(x, y, s);
                if (s + 1 == g)
                    continue;
                const int row = tiling.source(x);
                const int column = tiling.source(y);
                engine += double(
                    tiling.queryOut(row, y, s) + tiling.partialOut(row, y, s) + 2 * tiling.columnOut(x, column, s));
                accounts.addPath(
                    x, y, tiling.target(x), y, double(tiling.queryOut(x, y, s) + tiling.partialOut(x, y, s)));
                accounts.addPath(x, y, x, tiling.target(y), double(2 * tiling.columnOut(x, y, s)));
            }
            if (x <= y && queries > 0.0) {
                engine += tiling.rowMax(x, y) + tiling.exponentials(x, y);
                engine += y > 0 ? 2.0 * ((x > 0 ? queries : 0.0) + (x < y ? queries : 0.0)) : 0.0;
            }
        }
    }
    return accounts;
}

} // namespace

KernelCost costPrefillAttention(const PrefillAttentionShape& shape)
{
    if (shape.grid < 1 || shape.heads < 1 || shape.headDim < 1 || shape.tokens < 1)
        return {};
    const Tiling tiling(shape);
    const int g = tiling.g;

    // The feed, then the three phases.
    Times ready(std::size_t(g) * std::size_t(g), 0.0);
    for (int y = 0; y < g; ++y) {
        const std::int64_t lanes = tiling.laneWavelets(y);
        for (int x = 0; x < g; ++x)
            ready[std::size_t(y * g + x)] = lanes > 0 ? 2.0 + double(x) + double(lanes) : 0.0;
    }
    const auto queryOut = [&](int x, int y, int s) { return tiling.queryOut(x, y, s); };
    const auto partialOut = [&](int x, int y, int s) { return tiling.partialOut(x, y, s); };
    const auto columnOut = [&](int x, int y, int s) { return tiling.columnOut(x, y, s); };
    ready = ringPhase(
        tiling, ready, [&](int x, int y, int s) { return tiling.scores(x, y, s); }, queryOut, columnOut);
    softmaxPhase(tiling, ready);
    ready = ringPhase(
        tiling, ready, [&](int x, int y, int s) { return tiling.weightedValues(x, y, s); }, partialOut, columnOut);
    double last = 0.0;
    for (int y = 0; y < g; ++y)
        for (int x = 0; x < g; ++x)
            last = std::max(last, ready[std::size_t(y * g + x)] + tiling.normalise(x, y));

    const auto heads = double(shape.heads);
    // The fabric is quiescent the cycle after the last engine is free.
    KernelCost cost = account(tiling).cost(last + 1.0, heads);
    for (int y = 0; y < g; ++y)
        for (int x = 0; x <= y; ++x)
            if (tiling.computes(x, y))
                cost.fmacs += heads * 2.0 * double(tiling.band(y) * tiling.band(x) * shape.headDim);
    return cost;
}

} // namespace waferscope::core
