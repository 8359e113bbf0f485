// No header of its own: defines buildKernel, declared in kernels.h beside the kernels it builds.
// Kernel builders: operands, routes, tasks and the reference result for each kernel.
#include "core/fabric/half.h"
#include "core/fabric/kernels.h"
#include "core/fabric/staticcolorfabric.h"

#include <utility>

namespace waferscope::core::fabric {

namespace {

constexpr int kMulticastColor = 0; // x down columns, weights along rows, broadcasts
int reduceColor(int position)
{
    return 1 + position % 2;
} // alternates by parity along a chain

// Block distribution that tolerates sizes that do not divide: part i gets [begin(i), begin(i+1)).
std::uint32_t blockBegin(int total, int parts, int part)
{
    return std::uint32_t(std::int64_t(total) * part / parts);
}

// Deterministic operands in [-1, 1) from (seed, stream, index).
double operand(std::uint64_t seed, std::uint64_t stream, std::uint64_t index)
{
    std::uint64_t value = seed * 0x9e3779b97f4a7c15ull ^ (stream << 56) ^ index;
    value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
    value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
    value ^= value >> 31;
    return double(value >> 11) * 0x1.0p-52 - 1.0;
}

// The PEs of one row (East) or one column (South) of the region, in the direction of travel.
std::vector<std::pair<int, int>> line(int fixed, int length, int along)
{
    std::vector<std::pair<int, int>> pes;
    for (int i = 0; i < length; ++i)
        pes.push_back(along == East ? std::pair { i, fixed } : std::pair { fixed, i });
    return pes;
}

// Multicast routes of one color along a line: the first PE takes it from `entry` (its ramp or
// an edge link), every later PE passes it on and delivers it to its own PE.
void routeMulticast(
    StaticColorFabric& fabric, const std::vector<std::pair<int, int>>& pes, int along, int entry, bool deliverFirst)
{
    const auto length = int(pes.size());
    for (int p = 0; p < length; ++p) {
        std::uint8_t tx = p + 1 < length ? directionBit(along) : 0;
        if (p > 0 || deliverFirst)
            tx |= kRampBit;
        if (tx)
            fabric.setRoute(pes[std::size_t(p)].first, pes[std::size_t(p)].second, kMulticastColor,
                p == 0 ? entry : opposite(along), tx);
    }
}

// Chain reduction along a line: PE p adds what arrives from p - 1 to its own vector and sends
// the sum on to p + 1, the colors alternating so that no router receives and sends one color;
// the last PE keeps the total. With `afterLocalWork` the first PE's send and the others' adds
// wait until the PE's local task completes (it activates them).
void buildChainReduce(StaticColorFabric& fabric, const std::vector<std::pair<int, int>>& pes, int along,
    std::uint32_t offset, std::uint32_t length, bool afterLocalWork)
{
    const auto count = int(pes.size());
    for (int p = 0; p < count; ++p) {
        const auto [x, y] = pes[std::size_t(p)];
        PeState& pe = fabric.pe(x, y);
        if (p + 1 < count)
            fabric.setRoute(x, y, reduceColor(p), Fabric::kRampPort, directionBit(along));
        if (p == 0) {
            const SendStream send { std::uint8_t(reduceColor(0)), offset, length, 0 };
            (afterLocalWork ? pe.deferredSend : pe.send) = send;
            continue;
        }
        fabric.setRoute(x, y, reduceColor(p - 1), opposite(along), kRampBit);
        DataTask& task = pe.tasks[std::size_t(reduceColor(p - 1))];
        task.kind = TaskKind::AddForward;
        task.blocked = afterLocalWork;
        task.vector = offset;
        task.expected = length;
        task.outColor = p + 1 < count ? std::uint8_t(reduceColor(p)) : kNoColor;
        task.result = p + 1 == count && length > 0;
        pe.pendingResults += task.result ? 1 : 0;
    }
}

// Tree reduction of each row's partial vectors into its first column (KernelKind::GemvTree), on
// color 1 + l at level l (reductionTreeNode). A PE takes its children's vectors level by level
// once its FMACs are done (each add task unblocks the next), then sends its sum on at its own
// level; column 0 keeps the total.
int treeColor(int level)
{
    return 1 + level;
}

// Wires the tree along one row (`offsets`: each column's partial vector): routes, the add tasks
// (blocked until the PE's FMACs finish), and what the PE's FMAC task does when it completes; a
// column without x elements (`hasWork` false) starts its part at once.
void buildTreeReduce(StaticColorFabric& fabric, int row, int cols, const std::vector<std::uint32_t>& offsets,
    std::uint32_t length, const std::vector<bool>& hasWork)
{
    for (int c = 0; c < cols; ++c) {
        const ReductionTreeNode node = reductionTreeNode(c, cols);
        PeState& pe = fabric.pe(c, row);
        const std::uint32_t offset = offsets[std::size_t(c)];
        if (node.sendLevel >= 0) {
            const int span = 1 << node.sendLevel;
            const auto color = std::uint8_t(treeColor(node.sendLevel));
            fabric.setRoute(c, row, color, Fabric::kRampPort, directionBit(West));
            for (int between = c - span + 1; between < c; ++between)
                fabric.setRoute(between, row, color, East, directionBit(West));
            fabric.setRoute(c - span, row, color, East, kRampBit);
            pe.deferredSend = SendStream { color, offset, length, 0 };
        }
        // The FMAC task (or, without x elements, nothing) hands on to the first child's add, or
        // straight to the send.
        DataTask& fmac = pe.tasks[kMulticastColor];
        ActionKind first = ActionKind::None;
        std::uint8_t firstColor = kNoColor;
        if (!node.childLevels.empty()) {
            first = ActionKind::Unblock;
            firstColor = std::uint8_t(treeColor(node.childLevels.front()));
        } else if (node.sendLevel >= 0) {
            first = ActionKind::StartSend;
            firstColor = std::uint8_t(treeColor(node.sendLevel));
        }
        for (std::size_t i = 0; i < node.childLevels.size(); ++i) {
            DataTask& add = pe.tasks[std::size_t(treeColor(node.childLevels[i]))];
            add.kind = TaskKind::AddForward;
            add.blocked = true;
            add.vector = offset;
            add.expected = length;
            if (i + 1 < node.childLevels.size()) {
                add.then = ActionKind::Unblock;
                add.thenColor = std::uint8_t(treeColor(node.childLevels[i + 1]));
            } else if (node.sendLevel >= 0) {
                add.then = ActionKind::StartSend;
                add.thenColor = std::uint8_t(treeColor(node.sendLevel));
            } else {
                add.result = true; // column 0: the row's total
                ++pe.pendingResults;
            }
        }
        if (c == 0 && node.childLevels.empty()) { // one column: the FMACs are the result
            fmac.result = hasWork[std::size_t(c)];
            pe.pendingResults += fmac.result ? 1 : 0;
        }
        if (hasWork[std::size_t(c)]) {
            fmac.then = first;
            fmac.thenColor = firstColor;
        } else if (first == ActionKind::Unblock) {
            pe.tasks[firstColor].blocked = false;
        } else if (first == ActionKind::StartSend) {
            pe.send = pe.deferredSend;
        }
    }
}

KernelSetup buildGemv(const KernelConfig& config, StaticColorFabric& fabric)
{
    const bool tree = config.kind == KernelKind::GemvTree;
    const int m = config.matrixRows;
    const int n = config.matrixCols;
    const int rows = config.regionRows;
    const int cols = config.regionCols;
    KernelSetup setup;
    std::vector<float> a(std::size_t(m) * std::size_t(n));
    std::vector<float> x(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < a.size(); ++i)
        a[i] = roundToHalf(float(operand(config.seed, 1, i))); // A is held in FP16
    for (std::size_t j = 0; j < x.size(); ++j)
        x[j] = float(operand(config.seed, 2, j));
    setup.reference.assign(std::size_t(m), 0.0);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j)
            setup.reference[std::size_t(i)]
                += double(a[std::size_t(i) * std::size_t(n) + std::size_t(j)]) * x[std::size_t(j)];

    std::vector<std::uint32_t> yOffset(std::size_t(rows) * std::size_t(cols));
    for (int c = 0; c < cols; ++c) {
        const std::uint32_t j0 = blockBegin(n, cols, c);
        const std::uint32_t nc = blockBegin(n, cols, c + 1) - j0;
        routeMulticast(fabric, line(c, rows, South), South, Fabric::kRampPort, true);
        for (int r = 0; r < rows; ++r) {
            const std::uint32_t i0 = blockBegin(m, rows, r);
            const std::uint32_t mr = blockBegin(m, rows, r + 1) - i0;
            PeState& pe = fabric.pe(c, r);
            const std::uint32_t y = pe.allocF32(mr);
            yOffset[std::size_t(r) * std::size_t(cols) + std::size_t(c)] = y;
            const std::uint32_t block = pe.allocF16(std::size_t(mr) * nc); // column-major
            for (std::uint32_t j = 0; j < nc; ++j)
                for (std::uint32_t i = 0; i < mr; ++i)
                    pe.f16[block + j * mr + i] = floatToHalf(a[std::size_t(i0 + i) * std::size_t(n) + j0 + j]);
            if (r == 0) {
                const std::uint32_t xBlock = pe.allocF32(nc);
                for (std::uint32_t j = 0; j < nc; ++j)
                    pe.f32[xBlock + j] = x[j0 + j];
                pe.send = SendStream { kMulticastColor, xBlock, nc, 0 };
            }
            DataTask& task = pe.tasks[kMulticastColor];
            task.kind = TaskKind::FmacColumn;
            task.vector = y;
            task.length = mr;
            task.matrix = block;
            task.expected = nc;
            if (tree) {
                // buildTreeReduce wires what follows.
            } else if (cols == 1) {
                task.result = mr > 0 && nc > 0;
                pe.pendingResults += task.result ? 1 : 0;
            } else {
                task.then = c == 0 ? ActionKind::StartSend : ActionKind::Unblock;
                task.thenColor = std::uint8_t(c == 0 ? reduceColor(0) : reduceColor(c - 1));
            }
        }
    }
    for (int r = 0; r < rows && tree; ++r) {
        const std::uint32_t mr = blockBegin(m, rows, r + 1) - blockBegin(m, rows, r);
        if (mr == 0)
            continue; // a region taller than the matrix: nothing to reduce
        std::vector<bool> hasWork(static_cast<std::size_t>(cols));
        for (int c = 0; c < cols; ++c)
            hasWork[std::size_t(c)] = blockBegin(n, cols, c + 1) > blockBegin(n, cols, c);
        const auto first = yOffset.begin() + std::ptrdiff_t(r) * cols;
        buildTreeReduce(fabric, r, cols, std::vector<std::uint32_t>(first, first + cols), mr, hasWork);
    }
    for (int r = 0; r < rows && !tree; ++r) {
        const std::uint32_t mr = blockBegin(m, rows, r + 1) - blockBegin(m, rows, r);
        if (cols > 1)
            buildChainReduce(fabric, line(r, cols, East), East, yOffset[std::size_t(r) * std::size_t(cols)], mr, true);
        // Columns without x elements (a region wider than the matrix) have no FMAC to wait for.
        for (int c = 0; c < cols && cols > 1; ++c) {
            if (blockBegin(n, cols, c + 1) > blockBegin(n, cols, c))
                continue;
            PeState& pe = fabric.pe(c, r);
            if (c == 0)
                pe.send = pe.deferredSend;
            else
                pe.tasks[std::size_t(reduceColor(c - 1))].blocked = false;
        }
    }
    const int last = tree ? 0 : cols - 1; // the column that holds each row's total
    setup.gather = [m, rows, cols, last, yOffset](const StaticColorFabric& f) {
        std::vector<double> y(static_cast<std::size_t>(m));
        for (int r = 0; r < rows; ++r) {
            const std::uint32_t i0 = blockBegin(m, rows, r);
            const std::uint32_t mr = blockBegin(m, rows, r + 1) - i0;
            const PeState& pe = f.pe(last, r);
            for (std::uint32_t i = 0; i < mr; ++i)
                y[i0 + i] = pe.f32[yOffset[std::size_t(r) * std::size_t(cols) + std::size_t(last)] + i];
        }
        return y;
    };
    return setup;
}

// Weight streaming: PE (c, r) keeps the activations of its tokens (all N inputs, FP16) and
// accumulates its rows of Y; the weights of row band r enter from the west edge (off-wafer
// I/O, as from MemoryX) and are multicast along the row. Each wavelet carries one non-zero
// weight (FP16) and its column index; a marker ends each output row.
KernelSetup buildGemmStream(const KernelConfig& config, StaticColorFabric& fabric)
{
    const int m = config.matrixRows;
    const int n = config.matrixCols;
    const int rows = config.regionRows;
    const int cols = config.regionCols;
    const int tokens = config.tokensPerPe > 0 ? config.tokensPerPe : config.simdWidth;
    const int batch = tokens * cols;
    KernelSetup setup;
    std::vector<float> w(std::size_t(m) * std::size_t(n));
    for (std::size_t i = 0; i < w.size(); ++i) {
        const bool zero = (operand(config.seed, 3, i) + 1.0) * 0.5 < config.sparsity; // unstructured mask
        w[i] = zero ? 0.0f : roundToHalf(float(operand(config.seed, 4, i)));
    }
    std::vector<float> act(std::size_t(n) * std::size_t(batch)); // X, row-major N x batch
    for (std::size_t i = 0; i < act.size(); ++i)
        act[i] = roundToHalf(float(operand(config.seed, 5, i)));
    setup.reference.assign(std::size_t(m) * std::size_t(batch), 0.0);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j)
            if (const double weight = w[std::size_t(i) * std::size_t(n) + std::size_t(j)]; weight != 0.0)
                for (int b = 0; b < batch; ++b)
                    setup.reference[std::size_t(i) * std::size_t(batch) + std::size_t(b)]
                        += weight * act[std::size_t(j) * std::size_t(batch) + std::size_t(b)];

    std::vector<std::uint32_t> outOffset(std::size_t(rows) * std::size_t(cols));
    for (int r = 0; r < rows; ++r) {
        const std::uint32_t i0 = blockBegin(m, rows, r);
        const std::uint32_t mr = blockBegin(m, rows, r + 1) - i0;
        // Sized first: the band's non-zero weights and a marker per row (estimateKernelFootprint
        // counts the streams at their length).
        std::size_t length = mr;
        for (std::size_t i = std::size_t(i0) * std::size_t(n); i < (std::size_t(i0) + mr) * std::size_t(n); ++i)
            length += w[i] != 0.0f ? 1 : 0;
        std::vector<Wavelet> stream;
        stream.reserve(length);
        for (std::uint32_t i = i0; i < i0 + mr; ++i) {
            for (int j = 0; j < n; ++j) {
                const float weight = w[std::size_t(i) * std::size_t(n) + std::size_t(j)];
                if (weight != 0.0f)
                    stream.push_back(Wavelet::colored(
                        kMulticastColor, (std::uint32_t(floatToHalf(weight)) << 16) | std::uint32_t(j)));
            }
            stream.push_back(Wavelet::colored(kMulticastColor, kRowMarker));
        }
        setup.streamedWavelets += stream.size();
        if (!stream.empty())
            fabric.addEdgeSource(0, r, West, std::move(stream));
        routeMulticast(fabric, line(r, cols, East), East, West, true);
        for (int c = 0; c < cols; ++c) {
            PeState& pe = fabric.pe(c, r);
            const std::uint32_t activations = pe.allocF16(std::size_t(n) * std::size_t(tokens));
            for (int j = 0; j < n; ++j)
                for (int t = 0; t < tokens; ++t)
                    pe.f16[activations + std::uint32_t(j * tokens + t)]
                        = floatToHalf(act[std::size_t(j) * std::size_t(batch) + std::size_t(c * tokens + t)]);
            const std::uint32_t out = pe.allocF32(std::size_t(mr) * std::size_t(tokens));
            outOffset[std::size_t(r) * std::size_t(cols) + std::size_t(c)] = out;
            DataTask& task = pe.tasks[kMulticastColor];
            task.kind = TaskKind::FmacStream;
            task.vector = out;
            task.length = std::uint32_t(tokens);
            task.matrix = activations;
            task.expected = mr;
            task.result = mr > 0;
            pe.pendingResults += task.result ? 1 : 0;
        }
    }
    setup.gather = [m, rows, cols, tokens, batch, outOffset](const StaticColorFabric& f) {
        std::vector<double> y(std::size_t(m) * std::size_t(batch));
        for (int r = 0; r < rows; ++r) {
            const std::uint32_t i0 = blockBegin(m, rows, r);
            const std::uint32_t mr = blockBegin(m, rows, r + 1) - i0;
            for (int c = 0; c < cols; ++c) {
                const PeState& pe = f.pe(c, r);
                const std::uint32_t out = outOffset[std::size_t(r) * std::size_t(cols) + std::size_t(c)];
                for (std::uint32_t i = 0; i < mr; ++i)
                    for (int t = 0; t < tokens; ++t)
                        y[std::size_t(i0 + i) * std::size_t(batch) + std::size_t(c * tokens + t)]
                            = pe.f32[out + i * std::uint32_t(tokens) + std::uint32_t(t)];
            }
        }
        return y;
    };
    return setup;
}

// Broadcast or reduce along every row (East) or column (South) of the region. Each line has
// its own vector (length N); outputs are line-major.
KernelSetup buildCollective(const KernelConfig& config, StaticColorFabric& fabric)
{
    const bool rowWise = config.kind == KernelKind::RowBroadcast || config.kind == KernelKind::RowReduce;
    const bool reduce = config.kind == KernelKind::RowReduce || config.kind == KernelKind::ColumnReduce;
    const int along = rowWise ? East : South;
    const int lines = rowWise ? config.regionRows : config.regionCols;
    const int length = rowWise ? config.regionCols : config.regionRows;
    const auto n = std::uint32_t(config.matrixCols);
    KernelSetup setup;
    setup.reference.assign(std::size_t(lines) * std::size_t(length) * n, 0.0);
    std::vector<std::uint32_t> offsets;
    for (int l = 0; l < lines; ++l) {
        const std::vector<std::pair<int, int>> pes = line(l, length, along);
        for (int p = 0; p < length; ++p) {
            PeState& pe = fabric.pe(pes[std::size_t(p)].first, pes[std::size_t(p)].second);
            const std::uint32_t vector = pe.allocF32(n);
            offsets.push_back(vector);
            if (reduce || p == 0)
                for (std::uint32_t k = 0; k < n; ++k)
                    pe.f32[vector + k] = float(
                        operand(config.seed, 6, (std::uint64_t(l) * std::uint64_t(length) + std::uint64_t(p)) * n + k));
        }
        // Reference: every PE of a broadcast line ends with the first PE's vector; the last PE
        // of a reduce line with the sum in chain order.
        const auto value = [&](int p, std::uint32_t k) {
            return double(fabric.pe(pes[std::size_t(p)].first, pes[std::size_t(p)].second)
                              .f32[offsets[std::size_t(l * length + p)] + k]);
        };
        for (std::uint32_t k = 0; k < n; ++k) {
            float sum = float(value(0, k));
            for (int p = 0; p < length; ++p) {
                if (p > 0)
                    sum = float(value(p, k)) + sum;
                setup.reference[(std::size_t(l) * std::size_t(length) + std::size_t(p)) * n + k]
                    = reduce ? (p + 1 == length ? double(sum) : value(p, k)) : value(0, k);
            }
        }
        if (reduce) {
            buildChainReduce(fabric, pes, along, offsets[std::size_t(l * length)], n, false);
            continue;
        }
        routeMulticast(fabric, pes, along, Fabric::kRampPort, false);
        for (int p = 0; p < length; ++p) {
            PeState& pe = fabric.pe(pes[std::size_t(p)].first, pes[std::size_t(p)].second);
            if (p == 0) {
                pe.send = SendStream { kMulticastColor, offsets[std::size_t(l * length)], n, 0 };
                continue;
            }
            DataTask& task = pe.tasks[kMulticastColor];
            task.kind = TaskKind::Store;
            task.vector = offsets[std::size_t(l * length + p)];
            task.expected = n;
            task.result = n > 0;
            pe.pendingResults += task.result ? 1 : 0;
        }
    }
    setup.gather = [lines, length, n, along, offsets](const StaticColorFabric& f) {
        std::vector<double> values(std::size_t(lines) * std::size_t(length) * n);
        for (int l = 0; l < lines; ++l) {
            const std::vector<std::pair<int, int>> pes = line(l, length, along);
            for (int p = 0; p < length; ++p)
                for (std::uint32_t k = 0; k < n; ++k)
                    values[(std::size_t(l) * std::size_t(length) + std::size_t(p)) * n + k]
                        = f.pe(pes[std::size_t(p)].first, pes[std::size_t(p)].second)
                              .f32[offsets[std::size_t(l * length + p)] + k];
        }
        return values;
    };
    return setup;
}

} // namespace

KernelSetup buildKernel(const KernelConfig& config, StaticColorFabric& fabric)
{
    switch (config.kind) {
    case KernelKind::Gemv:
    case KernelKind::GemvTree:
        return buildGemv(config, fabric);
    case KernelKind::GemmStream:
        return buildGemmStream(config, fabric);
    default:
        return buildCollective(config, fabric);
    }
}

} // namespace waferscope::core::fabric
