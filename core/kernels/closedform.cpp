#include "core/kernels/closedform.h"

#include "core/fabric/kernels.h"

namespace waferscope::core::closedform {

KernelCost decodeCost(double cycles, double busy, double pes, double busiestPe, double busiestLink, double links)
{
    KernelCost cost;
    cost.cycles = cycles;
    cost.computeCycles = busiestPe;
    cost.fabricCycles = busiestLink;
    cost.latencyCycles = std::max(0.0, cycles - std::max(busiestPe, busiestLink));
    cost.linkWavelets = links;
    cost.peBusyFraction = cycles > 0.0 && pes > 0.0 ? std::min(1.0, busy / (pes * cycles)) : 0.0;
    cost.bound = cost.latencyCycles > std::max(cost.computeCycles, cost.fabricCycles) ? Bound::Latency
        : cost.fabricCycles > cost.computeCycles                                      ? Bound::Fabric
                                                                                      : Bound::Compute;
    return cost;
}

// The cycle a chain's last PE takes the first wavelet: the head sends at headSend, PE p > 0 is
// free at ready[p], and each hop forwards the wavelet unless the next PE is still busy.
double chainHead(double headSend, const std::vector<double>& ready)
{
    double at = headSend + kSendToNeighbour;
    for (std::size_t p = 1; p < ready.size(); ++p)
        at = std::max(p == 1 ? at : at + kChainHop, ready[p]);
    return at;
}

// A tree-reduced row (GemvSpec::treeReduced): the cycle its root's engine is free for the
// epilogue, its `size` sums in, given the cycle each column's engine is free of its FMACs. A node
// takes its children's vectors level by level, a cycle a wavelet: each level whole but the last
// (then a cycle to arm the next level's task), the last's sums forwarded as they are added. That
// stream reaches the parent as a forwarding hop of a chain reaches the next PE, plus a cycle a
// router it passes. A leaf sends once its FMACs end.
double treeRoot(const std::vector<double>& ready, std::int64_t size)
{
    const int count = int(ready.size());
    std::vector<double> arrives(ready.size(), 0.0); // per position: its first wavelet at its parent's task
    double root = 0.0;
    for (int d = count - 1; d >= 0; --d) {
        const fabric::ReductionTreeNode node = fabric::reductionTreeNode(d, count);
        double free = ready[std::size_t(count - 1 - d)];
        double first = free + kSendToNeighbour - 1.0; // a leaf's Send
        for (std::size_t i = 0; i < node.childLevels.size(); ++i) {
            const double heard = std::max(free, arrives[std::size_t(d + (1 << node.childLevels[i]))]);
            if (i + 1 < node.childLevels.size())
                free = heard + double(size) + 1.0;
            else
                first = heard + kChainHop - 1.0;
            root = heard + double(size);
        }
        if (node.sendLevel >= 0)
            arrives[std::size_t(d)] = first + double(1 << node.sendLevel);
    }
    return root;
}

// Engine cycles PE by PE: zero the accumulators, an FMAC per wavelet used and a cycle per one
// dropped (a turn with no outputs drops them all), an add per partial sum of the chain, and at
// the exit the side input's stores, the epilogue and the argmax's store and combine.
Work gemvWork(const GemvGeometry& geometry)
{
    const DecodeGemvShape& shape = geometry.shape;
    Work work;
    for (int t = 0; t < geometry.columns; ++t) {
        const std::vector<GemvGeometry::Share> shares = geometry.sharesOf(t);
        for (int row = 0; row < shape.height; ++row) {
            const int k = geometry.outputAt[std::size_t(row)];
            // Dispatch: the routing weights' stores and the selection at every PE with work.
            const bool dispatch = shape.routedAt.has_value();
            const double routing = dispatch ? double(shape.experts) + 1.0 : 0.0;
            if (k < 0) {
                double turned = 0.0;
                for (const GemvGeometry::Share& share : shares)
                    turned += row == share.in->row ? double(share.in->size) : 0.0;
                if (turned > 0.0)
                    work.add(turned + routing);
                continue;
            }
            const std::int64_t size = shape.outputs[std::size_t(k)].size;
            const double perWavelet = elementwise(size, 1, geometry.simd);
            // A split lane's column (and a dispatched one's) stores every wavelet, then multiplies
            // its part; a whole lane's multiplies each as it comes.
            // The reduction's adds: the chain's, once at every column but the first; the tree's,
            // once a child.
            const double adds = shape.treeReduced
                ? double(fabric::reductionTreeNode(geometry.columns - 1 - t, geometry.columns).childLevels.size())
                : (t > 0 ? 1.0 : 0.0);
            double pe = perWavelet + adds * double(size) + routing;
            for (const GemvGeometry::Share& share : shares) {
                const auto use = double(share.use);
                if (dispatch)
                    pe += (shape.chosen ? use * perWavelet : 0.0) + double(share.in->size);
                else
                    pe += use * perWavelet + (share.split ? double(share.in->size) : double(share.in->size) - use);
            }
            if (t + 1 == geometry.columns) {
                pe += geometry.epilogueCycles(size) + (geometry.side ? double(size) : 0.0);
                pe += shape.epilogue == Epilogue::Logits && k > 0 ? 3.0 : 0.0;
            }
            work.add(pe);
        }
    }
    return work;
}

// The input lanes along their rows to their last taps, down (and up) the columns from the
// turns, the chains along the output rows, the side inputs to the exits, the argmax pairs.
Traffic gemvTraffic(const GemvGeometry& geometry)
{
    const DecodeGemvShape& shape = geometry.shape;
    Traffic traffic;
    std::vector<double> east(std::size_t(shape.height) * std::size_t(shape.width), 0.0);
    const auto along = [&](int row, int from, int to, double wavelets) { // links out of columns [from, to)
        for (int u = from; u < to; ++u)
            east[std::size_t(row) * std::size_t(shape.width) + std::size_t(u)] += wavelets;
        traffic.links += wavelets * double(std::max(0, to - from));
    };
    for (int lane = 0; lane < geometry.lanes; ++lane) {
        const DecodeLane& in = shape.inputs[std::size_t(lane)];
        along(in.row, 0, shape.firstColumn + geometry.lastTap(lane), double(in.size));
    }
    for (const DecodeLane& out : shape.outputs) {
        if (!shape.treeReduced)
            along(out.row, shape.firstColumn, shape.width - 1, double(out.size));
        for (int d = 1; shape.treeReduced && d < geometry.columns; ++d) { // to the parent 2^level ahead
            const int from = shape.firstColumn + geometry.columns - 1 - d;
            along(out.row, from, from + (1 << fabric::reductionTreeNode(d, geometry.columns).sendLevel),
                double(out.size));
        }
        if (geometry.side)
            along(out.row, 0, shape.width - 1, double(out.size));
    }
    for (const double load : east)
        traffic.busiestLink = std::max(traffic.busiestLink, load);
    for (int t = 0; t < geometry.columns; ++t)
        for (const GemvGeometry::Share& share : geometry.sharesOf(t)) {
            const DecodeLane& in = *share.in;
            const int hops = std::max(0, in.row - geometry.firstRow) + std::max(0, geometry.lastRow - in.row);
            traffic.links += double(hops) * double(in.size);
            if (hops > 0)
                traffic.busiestLink = std::max(traffic.busiestLink, double(in.size));
        }
    if (shape.epilogue == Epilogue::Logits)
        traffic.links += 2.0 * double(shape.outputs.size() - 1);
    return traffic;
}

// Each output row's chain starts as its columns finish their FMACs and carries the block behind
// its first wavelet; the exit then runs the epilogue. Logits: the (value, id) pair goes down the
// exits, each storing it (two wavelets), combining it (a cycle) and sending it the cycle after.
// Per output block: the cycle its exit's engine is free for the epilogue, the row's sums in.
std::vector<double> gemvSumsIn(const GemvGeometry& geometry)
{
    std::vector<double> in;
    for (const DecodeLane& out : geometry.shape.outputs) {
        double last = geometry.fmacDone(0, out.row, out.size);
        if (geometry.columns > 1) {
            std::vector<double> ready;
            for (int t = 0; t < geometry.columns; ++t)
                ready.push_back(geometry.fmacDone(t, out.row, out.size) + elementwise(out.size, 1, geometry.simd));
            if (geometry.shape.treeReduced) {
                in.push_back(treeRoot(ready, out.size));
                continue;
            }
            // The head sends once its engine is done with its inputs.
            last = chainHead(ready[0], ready) + double(out.size - 1);
        }
        in.push_back(last + 1.0);
    }
    return in;
}

double gemvCycles(const GemvGeometry& geometry)
{
    const DecodeGemvShape& shape = geometry.shape;
    std::vector<double> done = gemvSumsIn(geometry); // per block: its exit's last step
    for (std::size_t k = 0; k < done.size(); ++k)
        done[k] += geometry.epilogueCycles(shape.outputs[k].size);
    double cycles = *std::max_element(done.begin(), done.end());
    if (shape.epilogue == Epilogue::Logits) {
        double send = done[0];
        for (std::size_t k = 1; k < done.size(); ++k) {
            const double stored = std::max(send + kSendToNeighbour, done[k]) + 1.0;
            send = stored + 2.0;
            cycles = std::max(cycles, stored + 2.0);
        }
    }
    return cycles;
}

KernelCost gemvCost(const DecodeGemvShape& shape)
{
    const GemvGeometry geometry(shape);
    if (!geometry.valid())
        return {};
    const Work work = gemvWork(geometry);
    const Traffic traffic = gemvTraffic(geometry);
    KernelCost cost = decodeCost(gemvCycles(geometry), work.busy, double(shape.width) * double(shape.height),
        work.busiestPe, traffic.busiestLink, traffic.links);
    for (const DecodeLane& out : shape.outputs)
        for (const DecodeLane& in : shape.inputs)
            cost.fmacs += double(in.size) * double(out.size);
    return cost;
}

} // namespace waferscope::core::closedform
