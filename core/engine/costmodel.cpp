// Closed-form costs of the fabric kernels. Each term names the mechanism of the cycle-level
// engine it stands for; the calibration holds the two task costs the data flow does not fix.
#include "core/engine/costmodel.h"

#include <algorithm>
#include <cmath>

namespace waferscope::core::engine {

namespace {

std::int64_t ceilDiv(std::int64_t a, std::int64_t b)
{
    return b > 0 ? (a + b - 1) / b : 0;
}

// A block distribution of `total` items over `parts` (as the fabric kernels cut them): the
// larger blocks, how many there are, and the smaller ones.
struct Blocks {
    std::int64_t large = 0;
    std::int64_t largeCount = 0;
    std::int64_t small = 0;
    std::int64_t smallCount = 0;
};
Blocks blocks(std::int64_t total, std::int64_t parts)
{
    Blocks b;
    if (parts <= 0)
        return b;
    b.small = total / parts;
    b.largeCount = total % parts;
    b.large = b.largeCount > 0 ? b.small + 1 : b.small;
    b.smallCount = parts - b.largeCount;
    return b;
}

void finish(KernelCost& cost, double busyCycles, double pes)
{
    cost.cycles = std::max(cost.computeCycles, cost.fabricCycles) + cost.latencyCycles;
    cost.bound = cost.latencyCycles > std::max(cost.computeCycles, cost.fabricCycles) ? Bound::Latency
        : cost.fabricCycles > cost.computeCycles                                      ? Bound::Fabric
                                                                                      : Bound::Compute;
    cost.peBusyFraction = cost.cycles > 0.0 && pes > 0.0 ? std::min(1.0, busyCycles / (pes * cost.cycles)) : 0.0;
}

// y = A x: A (m x n) block-distributed over rows x cols, x multicast down each column from the
// top row, every arriving x_j one FMAC instruction over the PE's rows of A; partial y is then
// reduced along each row.
// - Gemv: a chain west to east, each PE adding its own before it forwards.
// - GemvTree: a binary tree into the first column. At level l a vector crosses 2^l columns through
//   routers that only pass it on and is added by its receiver, so the hops add up to cols - 1 but
//   an add task is paid once a level, not once a column. A PE takes its children level by level,
//   each level a whole tile of partial sums (one a cycle) before the next, and sends its sum on
//   only when it has them all: each of the ceil(log2 cols) levels costs the tile's rows.
KernelCost costGemv(const fabric::KernelConfig& config, const Calibration& calibration, int hop)
{
    const std::int64_t m = config.matrixRows;
    const std::int64_t n = config.matrixCols;
    const std::int64_t rows = config.regionRows;
    const std::int64_t cols = config.regionCols;
    const std::int64_t simd = std::max(1, config.simdWidth);
    const Blocks r = blocks(m, rows);
    const Blocks c = blocks(n, cols);
    KernelCost cost;
    cost.fmacs = double(m) * double(n);
    cost.computeCycles = double(c.large) * double(ceilDiv(r.large, simd));
    // The last row hears its x after rows - 1 hops; then its partial sums cross the row.
    cost.latencyCycles = double(rows - 1) * hop;
    double reductionHops = double(cols - 1); // links each output crosses, over the whole row
    if (config.kind == fabric::KernelKind::GemvTree) {
        const std::int64_t levels = fabric::reductionTreeLevels(int(cols));
        if (cols > 1)
            cost.latencyCycles += double(cols - 1) * hop
                + double(levels) * (double(r.large) * std::max(1.0, calibration.reduceAddCycles) + hop);
        // Each PE but the first column's sends its tile once, over 2^l links at its level.
        reductionHops = 0.0;
        for (std::int64_t l = 0; l < levels; ++l) {
            const std::int64_t span = std::int64_t(1) << l;
            reductionHops += double((cols + span - 1) / (2 * span) * span); // senders at span, 3 span, ...
        }
    } else if (cols > 1) {
        // Each hop an add task, and the tile's outputs leave the last column one per cycle.
        cost.latencyCycles += double(cols - 1) * (hop + calibration.reduceAddCycles) + double(r.large);
    }
    cost.linkWavelets = double(n) * double(rows - 1) + double(m) * reductionHops;
    // Task cycles over all PEs: FMACs of every tile, and one add per partial sum received.
    double fmacCycles = 0.0;
    for (const auto& [rowsOfA, rowCount] : { std::pair { r.large, r.largeCount }, std::pair { r.small, r.smallCount } })
        fmacCycles += double(rowCount) * double(ceilDiv(rowsOfA, simd)) * double(n);
    const double addCycles = double(m) * double(cols - 1) * calibration.reduceAddCycles;
    finish(cost, fmacCycles + addCycles, double(rows * cols));
    return cost;
}

// Expected largest of `count` binomial(trials, p) draws: the mean plus the Gaussian extreme of
// the spread (about sigma sqrt(2 ln count)).
double expectedMaxBinomial(double trials, double p, double count)
{
    const double mean = trials * p;
    if (count <= 1.0 || p <= 0.0 || p >= 1.0)
        return mean;
    return std::min(trials, mean + std::sqrt(trials * p * (1.0 - p)) * std::sqrt(2.0 * std::log(count)));
}

// Y = W X with X resident: output rows over the PE rows, tokens over the columns; each row's
// weights enter from the west edge as (value, column) wavelets, non-zeros only, with a marker
// closing each output row, and are multicast along the row.
KernelCost costGemmStream(const fabric::KernelConfig& config, const Calibration& calibration, int hop)
{
    const std::int64_t m = config.matrixRows;
    const std::int64_t n = config.matrixCols;
    const std::int64_t rows = config.regionRows;
    const std::int64_t cols = config.regionCols;
    const std::int64_t simd = std::max(1, config.simdWidth);
    const std::int64_t tokens = config.tokensPerPe > 0 ? config.tokensPerPe : simd;
    const double density = std::clamp(1.0 - config.sparsity, 0.0, 1.0);
    const Blocks r = blocks(m, rows);
    const double perWeight = double(ceilDiv(tokens, simd));
    KernelCost cost;
    cost.fmacs = double(m) * double(n) * density * double(tokens) * double(cols);
    // The slowest row: the most non-zeros among the rows with the larger block.
    const double worstNonzeros = expectedMaxBinomial(double(r.large * n), density, double(r.largeCount));
    cost.computeCycles = worstNonzeros * perWeight + double(r.large) * calibration.streamMarkerCycles;
    cost.fabricCycles = worstNonzeros + double(r.large); // one wavelet per cycle into the row
    cost.latencyCycles = double(cols) * hop; // the edge link, then along the row
    const double streamed = double(m) * double(n) * density + double(m);
    cost.linkWavelets = streamed * double(cols - 1);
    const double busy
        = (double(m) * double(n) * density * perWeight + double(m) * calibration.streamMarkerCycles) * double(cols);
    finish(cost, busy, double(rows * cols));
    return cost;
}

// Row/column broadcast (the first PE sends its vector to the line) and reduce (each PE adds its
// vector to the running sum and forwards it; the last holds the total).
KernelCost costCollective(const fabric::KernelConfig& config, const Calibration& calibration, int hop)
{
    const bool rowWise
        = config.kind == fabric::KernelKind::RowBroadcast || config.kind == fabric::KernelKind::RowReduce;
    const bool reduce = config.kind == fabric::KernelKind::RowReduce || config.kind == fabric::KernelKind::ColumnReduce;
    const std::int64_t lines = rowWise ? config.regionRows : config.regionCols;
    const std::int64_t length = rowWise ? config.regionCols : config.regionRows;
    const double n = double(std::max(0, config.matrixCols));
    KernelCost cost;
    cost.fabricCycles = n;
    cost.computeCycles = reduce ? n * calibration.reduceAddCycles : n;
    cost.latencyCycles = double(length - 1) * (hop + (reduce ? calibration.reduceAddCycles : 0.0));
    cost.linkWavelets = n * double(length - 1) * double(lines);
    const double busy = n * double(length - 1) * double(lines) * (reduce ? calibration.reduceAddCycles : 1.0);
    finish(cost, busy, double(lines * length));
    return cost;
}

} // namespace

KernelCost costKernel(const fabric::KernelConfig& config, const Calibration& calibration, int hopLatencyCycles)
{
    const int hop = std::max(1, hopLatencyCycles);
    switch (config.kind) {
    case fabric::KernelKind::Gemv:
    case fabric::KernelKind::GemvTree:
        return costGemv(config, calibration, hop);
    case fabric::KernelKind::GemmStream:
        return costGemmStream(config, calibration, hop);
    default:
        return costCollective(config, calibration, hop);
    }
}

StreamedGemmCost costStreamedGemm(const StreamedGemmShape& shape, int rows, int cols, int simdWidth,
    const Calibration& calibration, int hopLatencyCycles)
{
    const int hop = std::max(1, hopLatencyCycles);
    const std::int64_t pes = std::max<std::int64_t>(1, std::int64_t(rows) * cols);
    const std::int64_t simd = std::max(1, simdWidth);
    const std::int64_t m = std::max<std::int64_t>(1, shape.outFeatures);
    const std::int64_t k = std::max<std::int64_t>(1, shape.inFeatures);
    const std::int64_t t = std::max<std::int64_t>(1, shape.tokens);
    const double density = std::clamp(shape.density, 0.0, 1.0);
    StreamedGemmCost cost;
    // Token tiles of the SIMD width (fewer if there are fewer tokens), more per PE once every PE
    // holds one; the features of a tile then spread over the PEs left per tile.
    std::int64_t tokenTile = std::min(t, simd);
    std::int64_t tiles = ceilDiv(t, tokenTile);
    if (tiles > pes) {
        tokenTile = ceilDiv(ceilDiv(t, pes), simd) * simd;
        tiles = ceilDiv(t, tokenTile);
    }
    const std::int64_t chain = std::clamp<std::int64_t>(pes / tiles, 1, k); // PEs per token tile
    const std::int64_t featureTile = ceilDiv(k, chain);
    const std::int64_t chainUsed = ceilDiv(k, featureTile);
    cost.featureTile = featureTile;
    cost.tokenTile = tokenTile;
    cost.pesUsed = tiles * chainUsed;
    const bool sparse = density < 1.0;
    const double perWeight = double(ceilDiv(tokenTile, simd));
    const double weightsPerPe = double(m) * double(featureTile) * density;
    const double markers = sparse ? double(m) * calibration.streamMarkerCycles : 0.0;
    cost.fmacs = double(m) * double(k) * double(t) * density;
    cost.computeCycles = weightsPerPe * perWeight + markers;
    // Links: the weight stream of a feature slice (one wavelet per weight, plus the markers),
    // and the partial sums of a token tile along its chain (one FP32 wavelet per output).
    // Dense weights need no index: two 16-bit weights ride in one 32-bit wavelet.
    const double weightWavelets = sparse ? weightsPerPe + double(m) : std::ceil(weightsPerPe / 2.0);
    const double chainWavelets = chainUsed > 1 ? double(m) * double(tokenTile) : 0.0;
    cost.fabricCycles = std::max(weightWavelets, chainWavelets);
    cost.latencyCycles = double(rows + cols) * hop + double(chainUsed - 1) * (hop + calibration.reduceAddCycles);
    cost.linkWavelets = weightWavelets * double(cost.pesUsed) + chainWavelets * double(tiles) * double(chainUsed - 1);
    finish(cost, (weightsPerPe * perWeight + markers) * double(cost.pesUsed), double(pes));
    return cost;
}

} // namespace waferscope::core::engine
