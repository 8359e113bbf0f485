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
    RowAccounts accounts;
    for (int r = 0; r < rows; ++r) {
        const auto kept = double(shape.kept[std::size_t(r)]);
        if (kept <= 0.0)
            continue;
        const double shares = kept * perWeight;
        // The chain's last PE takes the first sum at its head, then one a cycle.
        const double done
            = C > 1 ? closedform::chainHead(shares, std::vector<double>(std::size_t(C), shares)) + kept : shares;
        const double chained = C > 1 ? kept : 0.0;
        accounts.add(done, double(C) * shares + double(C - 1) * kept, shares + chained, double(C - 1) * kept, chained,
            double(C) * kept * double(shape.tokensPerPe));
    }
    return accounts.cost(rows, C);
}

} // namespace waferscope::core
