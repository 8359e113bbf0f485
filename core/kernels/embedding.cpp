#include "core/kernels/embedding.h"

#include "core/kernels/closedform.h"

#include <algorithm>
#include <cstdlib>

namespace waferscope::core {

using namespace closedform;

KernelCost costEmbeddingLookup(const EmbeddingLookupShape& shape)
{
    const int simd = std::max(1, shape.simdWidth);
    const auto lanes = std::int64_t(shape.laneSizes.size());
    if (lanes == 0 || shape.width < lanes)
        return {};
    double busy = 0.0;
    double busiestPe = 0.0;
    double links = double(shape.width) * double(shape.height) - 1.0; // the token id to every PE
    double busiestLink = shape.width * shape.height > 1 ? 1.0 : 0.0;
    double cycles = 0.0;
    for (std::int64_t i = 0; i < lanes; ++i) {
        const std::int64_t size = shape.laneSizes[std::size_t(i)];
        const int from = int(std::int64_t(shape.width) * i / lanes);
        const int to = int(std::int64_t(shape.width) * (i + 1) / lanes);
        // The chain: a serpentine over the rows of its columns; PE k hears the token id at
        // 2 + u + v (a cycle from the root's send, then a hop a cycle), computes its
        // contribution and adds the chain's sum to it.
        const double contribution = elementwise(size, 2, simd);
        std::vector<double> ready;
        for (int v = 0; v < shape.height; ++v)
            for (int k = 0; k < to - from; ++k) {
                const int u = v % 2 == 0 ? from + k : to - 1 - k;
                ready.push_back(2.0 + double(u + v) + 1.0 + contribution);
            }
        const auto chain = double(ready.size());
        const double round = elementwise(size, 1, simd);
        busy += chain * (1.0 + contribution) + (chain - 1.0) * double(size) + round;
        busiestPe = std::max(busiestPe, 1.0 + contribution + (chain > 1.0 ? double(size) : 0.0) + round);
        links += (chain - 1.0) * double(size);
        busiestLink = std::max(busiestLink, chain > 1.0 ? double(size) : 0.0);
        // The head sends its contribution once it has computed it.
        const double last = chain > 1.0 ? chainHead(ready[0], ready) + double(size - 1) : ready[0] - 1.0;
        cycles = std::max(cycles, last + 1.0 + round);
    }
    return decodeCost(cycles, busy, double(shape.width) * double(shape.height), busiestPe, busiestLink, links);
}

} // namespace waferscope::core
