// Closed form of the weight-streaming GEMM: each row's stream passes its C PEs, the last of them
// taking the first wavelet C + 1 cycles after the feed starts and then the stream at its own pace,
// a cycle a marker and max(1, ceil(T / SIMD)) a weight.
#include "core/kernels/streamgemm.h"

#include "core/kernels/closedform.h"

#include <algorithm>
#include <cmath>

namespace waferscope::core {

namespace {

// A streaming kernel's accounts, row by row of PEs: when each row's last engine is free, what
// its engines and links carry; then its cost over all rows.
struct RowAccounts {
    void add(
        double done, double engines, double busiestEngine, double wavelets, double busiestWavelets, double rowFmacs)
    {
        last = std::max(last, done);
        busy += engines;
        busiest = std::max(busiest, busiestEngine);
        links += wavelets;
        busiestLink = std::max(busiestLink, busiestWavelets);
        fmacs += rowFmacs;
    }
    // The fabric is quiescent the cycle after the last engine is free.
    KernelCost cost(int rows, int columns) const
    {
        KernelCost cost
            = closedform::decodeCost(last + 1.0, busy, double(rows) * double(columns), busiest, busiestLink, links);
        cost.fmacs = fmacs;
        return cost;
    }

    double last = 0.0;
    double busy = 0.0;
    double busiest = 0.0;
    double links = 0.0;
    double busiestLink = 0.0;
    double fmacs = 0.0;
};

} // namespace

KernelCost costStreamGemm(const StreamGemmShape& shape)
{
    const int rows = int(shape.weights.size());
    if (rows < 1 || shape.columns < 1 || shape.outputs.size() != shape.weights.size())
        return {};
    const double perWeight = closedform::elementwise(shape.tokensPerPe, 1, shape.simdWidth);
    const auto C = double(shape.columns);
    RowAccounts accounts;
    for (int r = 0; r < rows; ++r) {
        const auto weights = double(shape.weights[std::size_t(r)]);
        const auto markers = double(shape.outputs[std::size_t(r)]);
        if (weights + markers <= 0.0)
            continue;
        const double engine = weights * perWeight + markers;
        // The edge: nothing before ioStart; at its pace, the last wavelet due at
        // ioStart + ceil(n ioCycles / ioWavelets) - 1, then across the row and its marker's cycle.
        double done = 1.0 + C + engine;
        if (shape.ioStart > 0 || shape.ioWavelets != shape.ioCycles) {
            const double n = weights + markers;
            const double due = double(shape.ioStart)
                + std::ceil(n * double(shape.ioCycles) / double(std::max<std::uint32_t>(1, shape.ioWavelets))) - 1.0;
            done = std::max(double(shape.ioStart) + done, due + C + 1.0);
        }
        // Its stream a hop between each two PEs of the row (the feeder's hop is not the region's).
        accounts.add(done, C * engine, engine, (C - 1.0) * (weights + markers), weights + markers,
            C * weights * double(shape.tokensPerPe));
    }
    return accounts.cost(rows, shape.columns);
}

KernelCost costStreamGradient(const StreamGradientShape& shape)
{
    const int rows = int(shape.kept.size());
    if (rows < 1 || shape.columns < 1)
        return {};
    const double perWeight = closedform::elementwise(shape.tokensPerPe, 1, shape.simdWidth);
    const int C = shape.columns;
    const double pace = double(shape.exitCycles) / double(std::max<std::uint32_t>(1, shape.exitWavelets));
    RowAccounts accounts;
    for (int r = 0; r < rows; ++r) {
        const auto kept = double(shape.kept[std::size_t(r)]);
        if (kept <= 0.0)
            continue;
        const double shares = kept * perWeight;
        // The chain's last PE (the region's first) takes the first sum at its head, then one a
        // cycle, and keeps them; then it sends them off the wafer, the I/O taking one every `pace`
        // cycles (a cycle at the link's pace). A later chunk's shares come from the other PEs while
        // the first PE sends the one before, so only the first PE's own share steps and its adds
        // follow each exit.
        const double chunk = std::min(kept, double(shape.chunk));
        const auto chunks = std::ceil(kept / chunk);
        const double first = chunk * perWeight;
        const double summed
            = C > 1 ? closedform::chainHead(first, std::vector<double>(std::size_t(C), first)) + chunk : first;
        double done = summed + 1.0 + std::ceil((chunk - 1.0) * std::max(1.0, pace));
        for (double k = 1.0; k < chunks; k += 1.0) {
            const double size = std::min(chunk, kept - k * chunk);
            done += size * perWeight + (C > 1 ? size : 0.0) + 1.0 + std::ceil((size - 1.0) * std::max(1.0, pace));
        }
        const double chained = C > 1 ? kept : 0.0;
        accounts.add(done, double(C) * shares + double(C - 1) * kept, shares + chained, double(C) * kept, kept,
            double(C) * kept * double(shape.tokensPerPe));
    }
    return accounts.cost(rows, C);
}

KernelCost costColumnGather(const ColumnGatherShape& shape)
{
    const int rows = int(shape.bands.size());
    if (rows < 1 || shape.columns < 1)
        return {};
    const auto T = double(shape.tokensPerPe);
    std::vector<double> before(std::size_t(rows) + 1, 0.0); // values a token in the bands above row r
    for (int r = 0; r < rows; ++r)
        before[std::size_t(r) + 1] = before[std::size_t(r)] + double(shape.bands[std::size_t(r)]);
    const double total = before.back();
    // A sweep's stream into the next PE: what the PE passes on (arriving behind what it received,
    // a chain's hop later), then its own band once its store is in and its send step comes.
    struct Stream {
        double first = 0.0; // the cycle its first wavelet reaches the PE's task
        double stored = 0.0; // the cycle the PE's store of it ends
    };
    // A PE passes a wavelet on the cycle it stores it or the next, as its two colors' order goes
    // (closedform.h): the sweeps' colors are placed in the order down, then up, each pair
    // alternating by row, so an even row, whose color in is the later of its pair, passes a cycle
    // later (but for the one start of the router's round that serves it first).
    const auto next = [](const Stream& in, double passed, double ownFrom, double own, int row) {
        Stream out;
        const double hop = row % 2 == 0 ? 2.0 : 1.0;
        // What it passes on leaves as it is stored: the last of it reaches the next PE a hop after
        // this PE stored it.
        const double passedEnd = passed > 0.0 ? std::max(in.first + hop + passed, in.stored + hop) : 0.0;
        out.first = passed > 0.0 ? in.first + hop : ownFrom + closedform::kSendToNeighbour;
        out.stored = std::max(passedEnd, own > 0.0 ? ownFrom + closedform::kSendToNeighbour + own : 0.0);
        return out;
    };
    // Down: row r's store of bands 0..r-1 ends at down[r].stored; its own band goes after it.
    std::vector<Stream> down(std::size_t(rows), Stream {});
    std::vector<double> downSent(std::size_t(rows), 0.0); // its own band's send has drained
    for (int r = 0; r < rows; ++r) {
        const double own = double(shape.bands[std::size_t(r)]) * T;
        const double ready = r == 0 ? 0.0 : std::max(down[std::size_t(r)].stored, 0.0);
        downSent[std::size_t(r)] = r + 1 < rows && own > 0.0 ? ready + own : ready;
        if (r + 1 < rows)
            down[std::size_t(r) + 1] = next(down[std::size_t(r)], before[std::size_t(r)] * T, ready, own, r);
    }
    // Up: row r sends once its up store is in and its band has gone down.
    std::vector<Stream> up(std::size_t(rows), Stream {});
    double last = 0.0;
    for (int r = rows - 1; r >= 0; --r) {
        const double own = double(shape.bands[std::size_t(r)]) * T;
        const double below = (total - before[std::size_t(r) + 1]) * T;
        const double ready = std::max(downSent[std::size_t(r)], r + 1 < rows ? up[std::size_t(r)].stored : 0.0);
        last = std::max({ last, ready + (r > 0 ? own : 0.0), down[std::size_t(r)].stored });
        if (r > 0)
            up[std::size_t(r) - 1] = next(up[std::size_t(r)], below, ready, own, r);
    }
    RowAccounts accounts;
    const double stores = double(rows - 1) * total * T; // every PE stores all but its own band
    const double busiestStore = (total - [&] {
        double smallest = total;
        for (const std::int64_t band : shape.bands)
            smallest = std::min(smallest, double(band));
        return smallest;
    }()) * T;
    for (int c = 0; c < shape.columns; ++c) {
        double busiestLink = 0.0;
        for (int r = 0; r + 1 < rows; ++r)
            busiestLink
                = std::max({ busiestLink, before[std::size_t(r) + 1] * T, (total - before[std::size_t(r) + 1]) * T });
        accounts.add(last, stores, busiestStore, double(rows - 1) * total * T, busiestLink, 0.0);
    }
    return accounts.cost(rows, shape.columns);
}

KernelCost costLocalStep(const LocalStepShape& shape)
{
    const int rows = int(shape.operations.size());
    if (rows < 1 || shape.columns < 1)
        return {};
    RowAccounts accounts;
    for (int r = 0; r < rows; ++r) {
        const std::int64_t operations = shape.operations[std::size_t(r)];
        if (operations <= 0)
            continue;
        const double engine = closedform::elementwise(operations, 1, shape.simdWidth);
        // Its compute step holds the engine from cycle 0, its last busy cycle engine - 1; the
        // program, done with its last step in cycle 0, is seen to be done in cycle 1 at the earliest.
        accounts.add(std::max(engine, 2.0) - 1.0, double(shape.columns) * engine, engine, 0.0, 0.0, 0.0);
    }
    return accounts.cost(rows, shape.columns);
}

KernelCost costRowAttention(const RowAttentionShape& shape)
{
    if (shape.columns < 1 || shape.heads < 1 || shape.segment < 1)
        return {};
    constexpr double kHop = 1.0; // a block's first wavelet's hop to the store
    const double L = shape.segment;
    const double B = shape.tileWavelets;
    RowAccounts accounts;
    // Its last step holds the engine to cycle done (closedform's count, as costLocalStep's).
    const double done = shape.prepareCycles + shape.blockCycles + (L - 1.0) * (B + shape.blockCycles + kHop)
        + shape.finishCycles - 1.0;
    // A PE i blocks into its segment takes i blocks (from the near end): its engine's steps and
    // stores; the link out of it carries its own block and the i it passes on.
    const double segments = double(shape.columns) / L;
    double engines = 0.0;
    double links = 0.0;
    for (int i = 0; i < shape.segment; ++i) {
        engines += shape.prepareCycles + double(i + 1) * shape.blockCycles + shape.finishCycles + double(i) * B;
        if (i + 1 < shape.segment)
            links += double(i + 1) * B;
    }
    const double busiest = shape.prepareCycles + L * shape.blockCycles + shape.finishCycles + (L - 1.0) * B;
    for (int h = 0; h < shape.heads; ++h)
        accounts.add(done, segments * engines, busiest, segments * links, (L - 1.0) * B, 0.0);
    return accounts.cost(shape.rows, shape.columns);
}

} // namespace waferscope::core
