// Closed form of the weight-streaming GEMM: each row's stream passes its C PEs, the last of them
// taking the first wavelet C + 1 cycles after the feed starts and then the stream at its own pace,
// a cycle a marker and max(1, ceil(T / SIMD)) a weight.
#include "core/kernels/streamgemm.h"

#include "core/kernels/closedform.h"

#include <algorithm>

namespace waferscope::core {

KernelCost costStreamGemm(const StreamGemmShape& shape)
{
    const int rows = int(shape.weights.size());
    if (rows < 1 || shape.columns < 1 || shape.outputs.size() != shape.weights.size())
        return {};
    const double perWeight = closedform::elementwise(shape.tokensPerPe, 1, shape.simdWidth);
    double last = 0.0;
    double busy = 0.0;
    double busiest = 0.0;
    double links = 0.0;
    double busiestLink = 0.0;
    double fmacs = 0.0;
    for (int r = 0; r < rows; ++r) {
        const auto weights = double(shape.weights[std::size_t(r)]);
        const auto markers = double(shape.outputs[std::size_t(r)]);
        const double engine = weights * perWeight + markers;
        if (weights + markers <= 0.0)
            continue;
        last = std::max(last, 1.0 + double(shape.columns) + engine);
        busy += double(shape.columns) * engine;
        busiest = std::max(busiest, engine);
        links += double(shape.columns - 1) * (weights + markers); // a hop between each two PEs of the row
        busiestLink = std::max(busiestLink, weights + markers);
        fmacs += double(shape.columns) * weights * double(shape.tokensPerPe);
    }
    // The fabric is quiescent the cycle after the last engine is free.
    KernelCost cost
        = closedform::decodeCost(last + 1.0, busy, double(rows) * double(shape.columns), busiest, busiestLink, links);
    cost.fmacs = fmacs;
    return cost;
}

KernelCost costStreamGradient(const StreamGradientShape& shape)
{
    const int rows = int(shape.kept.size());
    if (rows < 1 || shape.columns < 1)
        return {};
    const double perWeight = closedform::elementwise(shape.tokensPerPe, 1, shape.simdWidth);
    const int C = shape.columns;
    double last = 0.0;
    double busy = 0.0;
    double busiest = 0.0;
    double links = 0.0;
    double busiestLink = 0.0;
    double fmacs = 0.0;
    for (int r = 0; r < rows; ++r) {
        const auto kept = double(shape.kept[std::size_t(r)]);
        if (kept <= 0.0)
            continue;
        const double shares = kept * perWeight;
        double done = shares;
        if (C > 1) // the chain's last PE takes the first sum at its head, then one a cycle
            done = closedform::chainHead(shares, std::vector<double>(std::size_t(C), shares)) + kept;
        last = std::max(last, done);
        busy += double(C) * shares + double(C - 1) * kept;
        busiest = std::max(busiest, shares + (C > 1 ? kept : 0.0));
        links += double(C - 1) * kept;
        busiestLink = std::max(busiestLink, C > 1 ? kept : 0.0);
        fmacs += double(C) * kept * double(shape.tokensPerPe);
    }
    // The fabric is quiescent the cycle after the last engine is free.
    KernelCost cost = closedform::decodeCost(last + 1.0, busy, double(rows) * double(C), busiest, busiestLink, links);
    cost.fmacs = fmacs;
    return cost;
}

} // namespace waferscope::core
