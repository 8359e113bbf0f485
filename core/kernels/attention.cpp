#include "core/kernels/attention.h"

#include "core/kernels/closedform.h"

#include <algorithm>
#include <cstdlib>

namespace waferscope::core {

using namespace closedform;

KernelCost costDecodeAttention(const DecodeAttentionShape& shape)
{
    const int simd = std::max(1, shape.simdWidth);
    const int w = std::max(1, shape.width);
    const int rows = std::max(1, shape.rowsPerHead);
    const std::int64_t p = shape.position;
    const auto held = [&](int u) { return p >= u ? (p - u) / w + 1 : std::int64_t(0); };
    const auto sent = [&](int u) { return double(std::max<std::int64_t>(1, held(u))); }; // down a head's column
    const auto part = [&](int r) { return shape.headDim * (r + 1) / rows - shape.headDim * r / rows; };
    // Row r of a head: its part d of the dimensions. Per PE: store q, k and v; append (one PE);
    // scores; with several rows, the column's adds (rows below the first), the sums' store (rows
    // above the last) and their max; the row chains' max and adds, the max's store; softmax; the
    // output at the last PE.
    struct Row {
        double busy = 0.0; // engine cycles of its PEs
        double busiestPe = 0.0;
        double local = 0.0; // cycles at which column u's PE is ready for the row's max chain: [u]
    };
    const auto rowOf = [&](int r, std::vector<double>& local) {
        const std::int64_t d = part(r);
        const double dot = elementwise(d, 1, simd);
        const double append = elementwise(2 * d, 1, simd);
        const double output = elementwise(d, 2, simd);
        const auto scores = [&](int u) { return std::max(1.0, double(held(u)) * (dot + 1.0)); };
        const auto softmax = [&](int u) { return std::max(1.0, double(held(u)) * (8.0 + dot)); };
        const auto appends = [&](int u) { return p % w == u ? append : 0.0; };
        const auto scoresMax = [&](int u) { return rows > 1 ? elementwise(held(u), 1, simd) : 0.0; };
        Row row;
        for (int u = 0; u < w; ++u) {
            double pe = 3.0 * double(d) + appends(u) + scores(u) + softmax(u) + scoresMax(u);
            if (rows > 1)
                pe += (r > 0 ? sent(u) : 0.0) + (r + 1 < rows ? sent(u) : 0.0);
            pe += u > 0 ? 1.0 + double(d + 1) : 0.0;
            pe += u + 1 < w ? 1.0 : output;
            row.busy += pe;
            row.busiestPe = std::max(row.busiestPe, pe);
            // q, k, v along the row, 3d wavelets over every link: the last stored at column u at
            // 3d + 1 + u; the engine is free for the max chain after its scores.
            local[std::size_t(u)] = 3.0 * double(d) + 1.0 + double(u) + 1.0 + appends(u) + scores(u);
        }
        return row;
    };
    std::vector<std::vector<double>> local(std::size_t(rows), std::vector<double>(std::size_t(w), 0.0));
    std::vector<Row> parts;
    for (int r = 0; r < rows; ++r)
        parts.push_back(rowOf(r, local[std::size_t(r)]));
    if (rows > 1) {
        // Each column's partial scores down the head's rows, pipelined behind the first (a wavelet
        // a cycle), then the sums back up a hop a cycle, stored as they come; then their max.
        for (int u = 0; u < w; ++u) {
            std::vector<double> ready;
            for (int r = 0; r < rows; ++r)
                ready.push_back(local[std::size_t(r)][std::size_t(u)]);
            const double summed = chainHead(ready[0], ready) + sent(u);
            for (int r = 0; r < rows; ++r) {
                const double have = r + 1 == rows ? summed : summed + 1.0 + double(rows - 1 - r) + sent(u) - 1.0;
                local[std::size_t(r)][std::size_t(u)] = have + 1.0 + elementwise(held(u), 1, simd);
            }
        }
    }
    double cycles = 0.0;
    for (int r = 0; r < rows; ++r) {
        const std::int64_t d = part(r);
        const double dot = elementwise(d, 1, simd);
        const double output = elementwise(d, 2, simd);
        const auto softmax = [&](int u) { return std::max(1.0, double(held(u)) * (8.0 + dot)); };
        const std::vector<double>& ready = local[std::size_t(r)];
        double done = 0.0;
        if (w == 1) {
            done = ready[0] + softmax(0) + output;
        } else {
            // The head sends its max once its scores are final.
            std::vector<double> chain { 0.0 };
            for (int u = 1; u < w; ++u)
                chain.push_back(ready[std::size_t(u)]);
            const double max = chainHead(ready[0], chain);
            // Back along the row a hop a cycle; each PE then computes its partials, and the sum
            // chain (d + 1 wavelets) runs behind the first.
            const auto heard = [&](int u) { return u + 1 == w ? max : max + 1.0 + double(w - 1 - u); };
            std::vector<double> free;
            for (int u = 0; u < w; ++u)
                free.push_back(heard(u) + 1.0 + softmax(u));
            done = chainHead(free[0], free) + double(d) + 1.0 + output;
        }
        cycles = std::max(cycles, done);
    }
    double busy = 0.0;
    double busiestPe = 0.0;
    double rowLinks = 0.0; // wavelets over the links along the rows, and the busiest of them
    double busiestLink = 0.0;
    for (int r = 0; r < rows; ++r) {
        busy += parts[std::size_t(r)].busy;
        busiestPe = std::max(busiestPe, parts[std::size_t(r)].busiestPe);
        const double d = double(part(r));
        if (w > 1) {
            rowLinks += double(w - 1) * (4.0 * d + 3.0); // q, k, v, the max and the d + 1 partial sums east
            busiestLink = std::max(busiestLink, 4.0 * d + 2.0);
        }
    }
    double columnLinks = 0.0; // the partial scores down and their sums up
    for (int u = 0; u < w && rows > 1; ++u) {
        columnLinks += 2.0 * double(rows - 1) * sent(u);
        busiestLink = std::max(busiestLink, sent(u));
    }
    const double heads = double(std::max(1, shape.heads));
    const double regionRows = std::max(heads * rows, double(shape.height));
    KernelCost cost = decodeCost(
        cycles, busy * heads, double(w) * regionRows, busiestPe, busiestLink, heads * (rowLinks + columnLinks));
    cost.fmacs = heads * 2.0 * double(p + 1) * double(shape.headDim);
    return cost;
}

} // namespace waferscope::core
