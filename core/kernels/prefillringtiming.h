#pragma once

// The ring phases of the prefill kernels' closed forms (prefillgemm.cpp, and through BlockTimer
// prefillringattention.cpp, prefillnorm.cpp, prefillembedding.cpp, prefillshift.cpp): Cannon's
// steps on MeshGEMM's interleaved rings (PrefillGrid), as a max-plus recurrence over the PEs of a
// g x g block. A Ring has `g`, and source(i) / target(i): the index a row or column index
// receives its ring tiles from / sends them to. Private to those files.
//
// They follow the kernels' programs through the fabric's timing rules (core/fabric/pe.cpp,
// staticcolorfabric.cpp) at the grain of whole tiles:
//  - a feed: a block row's lane passes each of its PEs at a wavelet a cycle, each PE taking it
//    whole; PE x has the last at 2 + x + the lane's length;
//  - a compute step takes its cycles on the PE's engine, one after the other;
//  - a shift: a PE's Send starts once its program reaches it and its previous send has drained;
//    the receive is armed right after it (a PE that sends nothing first awaits its earlier
//    sends) and stores a wavelet a cycle from the later of the cycle after the arm and the
//    arrival of the sender's first wavelet (its Send + 1 + hops, a ring neighbour being one or
//    two hops away); a send drains n cycles after it starts unless its receiver stores later,
//    when it drains as the receiver stores, ahead by what the queues on the way hold (four
//    wavelets a router);
//  - the fabric is quiescent the cycle after the last engine is free.
// Engine cycles and link wavelets are counted exactly: the kernels fix every tile's size and
// route, each task's cycles per wavelet and each compute step's cycles.

#include "core/kernels/closedform.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

namespace waferscope::core::prefillring {

constexpr double kQueueDepth = 4.0; // wavelets a router's queue holds

using Times = std::vector<double>; // per PE of the block, y * g + x

using closedform::ceilDiv;
using closedform::elementwise;
using closedform::kChainHop;

// prefillsteps' tileProductCycles: an AXPY per (inner index, row or column of the output tile)
// along the output tile's longer side.
inline double tileProduct(std::int64_t rows, std::int64_t cols, std::int64_t inner, int simd)
{
    const std::int64_t alongCols = rows * ceilDiv(cols, simd);
    const std::int64_t alongRows = cols * ceilDiv(rows, simd);
    return double(std::max<std::int64_t>(1, inner * std::min(alongCols, alongRows)));
}

// `total` split into g parts as evenly as they go: part b is [total b / g, total (b + 1) / g), as
// PrefillGrid splits the tokens (bands) and the hidden values (blocks).
class EvenSplit {
public:
    EvenSplit(std::int64_t total, int g)
    {
        for (int b = 0; b <= g; ++b)
            m_bounds.push_back(total * b / g);
    }
    std::int64_t begin(int b) const { return m_bounds[std::size_t(b)]; }
    std::int64_t size(int b) const { return m_bounds[std::size_t(b) + 1] - m_bounds[std::size_t(b)]; }

private:
    std::vector<std::int64_t> m_bounds; // g + 1
};

// MeshGEMM's interleaved ring of g indices, as PrefillGrid orders it: positions 0, 1, ..., g - 1
// hold the indices 0, 2, 4, ..., 5, 3, 1, so that every shift is one or two hops. A tiling of
// the kernels' closed forms is a Ring: shift() reads g, source() and target().
class Ring {
public:
    explicit Ring(int size)
        : g(size)
        , m_member(std::size_t(size))
        , m_position(std::size_t(size))
    {
        for (int position = 0; position < g; ++position) {
            const int index = position < (g + 1) / 2 ? 2 * position : 2 * (g - 1 - position) + 1;
            m_member[std::size_t(position)] = index;
            m_position[std::size_t(index)] = position;
        }
    }
    int member(int position) const { return m_member[std::size_t(((position % g) + g) % g)]; }
    int position(int index) const { return m_position[std::size_t(index)]; }
    int source(int i) const { return member(position(i) + 1); } // the index i receives its ring tiles from
    int target(int i) const { return member(position(i) - 1); } // ... and sends them to

    int g;

private:
    std::vector<int> m_member; // per ring position: index
    std::vector<int> m_position; // per index: ring position
};

// What a block's PEs and links carry over the whole kernel: each PE's engine cycles and each
// link's wavelets (per PE and direction: 0 east, 1 west, 2 south, 3 north).
struct Accounts {
    explicit Accounts(int size)
        : g(size)
        , engine(std::size_t(size) * std::size_t(size), 0.0)
        , links(std::size_t(size) * std::size_t(size) * 4, 0.0)
    {
    }
    // `wavelets` along the XY path from PE (x, y) to (toX, toY).
    void addPath(int x, int y, int toX, int toY, double wavelets)
    {
        while (x != toX || y != toY) {
            const int direction = toX > x ? 0 : toX < x ? 1 : toY > y ? 2 : 3;
            links[(std::size_t(y) * std::size_t(g) + std::size_t(x)) * 4 + std::size_t(direction)] += wavelets;
            linkWavelets += wavelets;
            x += direction == 0 ? 1 : direction == 1 ? -1 : 0;
            y += direction == 2 ? 1 : direction == 3 ? -1 : 0;
        }
    }
    // The kernel's cost over `blocks` blocks alike, done at `cycles` (fmacs left to the caller).
    KernelCost cost(double cycles, double blocks) const
    {
        double busy = 0.0;
        for (const double pe : engine)
            busy += pe;
        return closedform::decodeCost(cycles, blocks * busy, blocks * double(g) * double(g),
            *std::max_element(engine.begin(), engine.end()), *std::max_element(links.begin(), links.end()),
            blocks * linkWavelets);
    }

    int g;
    std::vector<double> engine; // per PE, y * g + x
    std::vector<double> links;
    double linkWavelets = 0.0;
};

// One ring shift of every PE of the block, along the rows or up the columns. A PE's Send starts
// once its program reaches it (`reached`) and its previous send has drained (`free`); its receive
// is armed right after the Send; a PE that sends nothing but receives awaits its earlier sends
// first, at max(reached, free); one that neither sends nor receives arms it at `reached`.
struct ShiftTimes {
    Times received; // the program passes the receive's Await
    Times drained; // the send has put its last wavelet into the router
};

template <typename Ring, typename Out>
ShiftTimes shift(const Ring& tiling, bool alongRows, const Times& reached, const Times& free, Out out)
{
    const int g = tiling.g;
    const auto at = [g](int x, int y) { return std::size_t(y) * std::size_t(g) + std::size_t(x); };
    const auto every = [g](const auto& body) {
        for (int y = 0; y < g; ++y)
            for (int x = 0; x < g; ++x)
                body(x, y);
    };
    // The ring neighbour a PE receives from (source) or sends to.
    const auto neighbour = [&](int x, int y, bool source) {
        if (alongRows)
            return std::pair { source ? tiling.source(x) : tiling.target(x), y };
        return std::pair { x, source ? tiling.source(y) : tiling.target(y) };
    };
    Times send(reached.size());
    Times armed(reached.size());
    every([&](int x, int y) {
        send[at(x, y)] = std::max(reached[at(x, y)], free[at(x, y)]);
        const auto [fromX, fromY] = neighbour(x, y, true);
        const bool waits = out(x, y) > 0 || out(fromX, fromY) > 0;
        armed[at(x, y)] = waits ? send[at(x, y)] : reached[at(x, y)];
    });
    ShiftTimes times { Times(reached.size()), Times(reached.size()) };
    every([&](int x, int y) {
        const auto [fromX, fromY] = neighbour(x, y, true);
        const auto in = double(out(fromX, fromY));
        const double first = send[at(fromX, fromY)] + 1.0 + double(std::abs(fromX - x) + std::abs(fromY - y));
        times.received[at(x, y)] = in > 0 ? std::max(armed[at(x, y)] + 1.0, first) + in : armed[at(x, y)];
        // A send drains as its receiver stores, ahead by what the queues on the way hold.
        const auto [toX, toY] = neighbour(x, y, false);
        const auto sent = double(out(x, y));
        const int hops = std::abs(toX - x) + std::abs(toY - y);
        const double stored = std::max(armed[at(toX, toY)] + 1.0, send[at(x, y)] + 1.0 + double(hops)) + sent;
        times.drained[at(x, y)]
            = sent > 0 ? std::max(send[at(x, y)] + sent, stored - kQueueDepth * double(hops + 1)) : send[at(x, y)];
    });
    return times;
}

// One ring phase from each PE's ready time: g steps of a product, then (but after the last) the
// row shift and the column shift. Returns when each PE's last product ends.
template <typename Ring, typename Product, typename RowOut, typename ColumnOut>
Times ringPhase(const Ring& tiling, Times ready, Product product, RowOut rowOut, ColumnOut columnOut)
{
    Times sendFree(ready.size(), 0.0);
    for (int s = 0; s < tiling.g; ++s) {
        Times computed(ready.size());
        for (std::size_t pe = 0; pe < ready.size(); ++pe)
            computed[pe] = ready[pe] + product(int(pe) % tiling.g, int(pe) / tiling.g, s);
        if (s + 1 == tiling.g)
            return computed;
        const ShiftTimes row = shift(tiling, true, computed, sendFree, [&](int x, int y) { return rowOut(x, y, s); });
        // The column shift, once the row tile is in and the row send has drained.
        const ShiftTimes column
            = shift(tiling, false, row.received, row.drained, [&](int x, int y) { return columnOut(x, y, s); });
        ready = column.received;
        sendFree = column.drained;
    }
    return ready;
}

// Follows a prefill kernel's programs on a g x g block, PE by PE, through the timing rules
// above, for the kernels that take their inputs where the one before left them (every PE ready
// at cycle 0): compute() is a compute step at every PE, shift() one shift on the block's rings
// (each PE sends to its ring target and receives from its ring source, a PE that sends nothing
// awaiting its earlier sends first), feed() a block row's lane passed along the row. It keeps the
// accounts as it goes: a step's cycles and a stored wavelet's cycle are engine cycles, and a
// send's wavelets cross the links from the PE to its target.
class BlockTimer {
public:
    explicit BlockTimer(int size)
        : m_ring(size)
        , m_accounts(size)
        , m_ready(std::size_t(size) * std::size_t(size), 0.0)
        , m_free(m_ready.size(), 0.0)
    {
    }
    const Ring& ring() const { return m_ring; }
    int g() const { return m_ring.g; }

    // Every PE of row y takes a lane of `wavelets` whole, sent along the row from the PE before
    // its first column at a wavelet a cycle from cycle 0: PE x has the last at 2 + x + wavelets.
    void feed(int y, std::int64_t wavelets)
    {
        if (wavelets <= 0)
            return;
        m_accounts.addPath(0, y, g() - 1, y, double(wavelets));
        for (int x = 0; x < g(); ++x) {
            at(m_ready, x, y) = std::max(at(m_ready, x, y), 2.0 + double(x) + double(wavelets));
            at(m_accounts.engine, x, y) += double(wavelets);
        }
    }
    // A compute step of cycles(x, y) at each PE (none where it is 0).
    template <typename Cycles>
    void compute(Cycles cycles)
    {
        every([&](int x, int y) {
            const double c = cycles(x, y);
            at(m_ready, x, y) += c;
            at(m_accounts.engine, x, y) += c;
        });
    }
    // A shift along the rows or up the columns: PE (x, y) sends out(x, y) wavelets to its ring
    // target and stores what its ring source sends.
    template <typename Out>
    void shift(bool alongRows, Out out)
    {
        const ShiftTimes times = prefillring::shift(m_ring, alongRows, m_ready, m_free, out);
        every([&](int x, int y) {
            const auto sent = double(out(x, y));
            if (sent <= 0.0)
                return;
            const int toX = alongRows ? m_ring.target(x) : x;
            const int toY = alongRows ? y : m_ring.target(y);
            m_accounts.addPath(x, y, toX, toY, sent);
            at(m_accounts.engine, toX, toY) += sent;
        });
        m_ready = times.received;
        m_free = times.drained;
    }
    // When PE (x, y)'s program has passed its last step.
    double readyAt(int x, int y) const { return m_ready[std::size_t(y) * std::size_t(g()) + std::size_t(x)]; }
    // The kernel's cost: the fabric is quiescent the cycle after the last engine is free (fmacs
    // left to the caller).
    KernelCost cost() const
    {
        const double last = *std::max_element(m_ready.begin(), m_ready.end());
        return m_accounts.cost(last + 1.0, 1.0);
    }

private:
    double& at(Times& times, int x, int y) const { return times[std::size_t(y) * std::size_t(g()) + std::size_t(x)]; }
    template <typename Body>
    void every(Body body) const
    {
        for (int y = 0; y < g(); ++y)
            for (int x = 0; x < g(); ++x)
                body(x, y);
    }

    Ring m_ring;
    Accounts m_accounts;
    Times m_ready;
    Times m_free;
};

} // namespace waferscope::core::prefillring
