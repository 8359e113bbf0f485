#include "core/kernels/norm.h"

#include "core/kernels/closedform.h"

#include <algorithm>
#include <cstdlib>

namespace waferscope::core {

using namespace closedform;

KernelCost costNormColumn(const NormColumnShape& shape)
{
    const int simd = std::max(1, shape.simdWidth);
    const auto count = std::int64_t(shape.laneSizes.size());
    if (count == 0)
        return {};
    const std::int64_t size = *std::max_element(shape.laneSizes.begin(), shape.laneSizes.end());
    const double reductions = shape.layerNorm ? 2.0 : 1.0;
    // Per PE: store the lane; partial sums (and centred squares); the chain's adds, the
    // statistics' stores, the last PE's mean and inverse deviation; apply.
    double busy = 0.0;
    double busiestPe = 0.0;
    for (std::int64_t i = 0; i < count; ++i) {
        const std::int64_t n = shape.laneSizes[std::size_t(i)];
        double pe = double(n) + elementwise(n, 1, simd) + elementwise(n, shape.layerNorm ? 3 : 2, simd)
            + (shape.layerNorm ? elementwise(n, 2, simd) : 0.0);
        pe += reductions * ((i > 0 ? 1.0 : 0.0) + (i + 1 < count ? 1.0 : 0.0));
        pe += i + 1 == count ? (shape.layerNorm ? 3.0 : 2.0) : 0.0;
        busy += pe;
        busiestPe = std::max(busiestPe, pe);
    }
    const double links = reductions * 2.0 * double(count - 1); // a chain down and a broadcast up each
    const double stored = double(size) + 1.0; // the lane's last wavelet taken
    const double sums = elementwise(size, 1, simd);
    const double apply = elementwise(size, shape.layerNorm ? 3 : 2, simd);
    double cycles = 0.0;
    if (count == 1) {
        // Every step on the one PE, back to back: partial sum, (mean, centred squares,) inverse
        // deviation (2 cycles), apply.
        cycles = stored + 1.0 + sums + 2.0 + apply + (shape.layerNorm ? 1.0 + elementwise(size, 2, simd) : 0.0);
    } else {
        // A reduction: the top PE sends its partial once it has computed it, and the second,
        // done with its own by then, takes it two cycles later. A broadcast: the last PE computes
        // the statistic (the mean in a cycle, the inverse deviation in two), sends it, and it
        // climbs the column a hop a cycle.
        const double hops = double(count - 2) * kChainHop;
        const auto broadcast = [&](double statistic) { return 2.0 + statistic + double(count - 1); };
        cycles = stored + 3.0 + sums + hops + broadcast(shape.layerNorm ? 1.0 : 2.0);
        if (shape.layerNorm)
            cycles += 3.0 + elementwise(size, 2, simd) + hops + broadcast(2.0);
        cycles += 1.0 + apply; // at the top PE, which hears the statistic last
    }
    return decodeCost(cycles, busy, double(count), busiestPe, count > 1 ? reductions : 0.0, links);
}

} // namespace waferscope::core
