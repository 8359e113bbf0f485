// Closed forms of the decode kernels of the cycle-level run (declared in costmodel.h).
//
// Each closed form follows its kernel's program (core/cyclelevel/regionkernels.cpp) through the
// fabric's timing rules (core/fabric/pe.cpp, staticcolorfabric.cpp): a wavelet takes a cycle a
// hop; a Send step's first wavelet enters the router the cycle after the step and reaches the
// neighbour's task one later; a task takes a wavelet only when its engine is free (FMAC: a cycle
// per SIMD width of its outputs for a wavelet it uses, one for one it drops; store, add, max: one);
// the program shares the engine with the tasks, so a step after a compute step (a Send too) runs
// the cycle the compute ends, and a Send after a task's last wavelet once that task is done with
// it. A forwarding task's wavelet leaves the cycle it arrives or the next: the
// router serves colors round-robin from a start that moves every cycle, so of a chain's two
// alternating colors one order leaves at once and the other, but for one start of the round, a
// cycle later. The forms are max-plus recurrences over a region's rows or columns: first-wavelet
// latencies, then a pipelined stream of one wavelet per cycle behind them.
#include "core/engine/costmodel.h"
#include "core/fabric/kernels.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

namespace waferscope::core::engine {

namespace {

std::int64_t ceilDiv(std::int64_t a, std::int64_t b)
{
    return b > 0 ? (a + b - 1) / b : 0;
}

constexpr double kSendToNeighbour = 2.0; // from a Send step to the neighbour's task
constexpr double kChainHop = 1.5; // a forwarding hop of a chain, on average over its two colors

// computesteps' elementwiseCycles: n elements at `ops` SIMD operations each (also the FMAC of one
// wavelet into n outputs: ops = 1).
double elementwise(std::int64_t elements, int ops, int simd)
{
    return double(std::max<std::int64_t>(1, ceilDiv(elements * ops, std::max(1, simd))));
}

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

// The GEMV as the closed forms walk it: a GemvSpec's geometry with rows counted from the region's
// top, and its dispatch (the experts' pieces are such GEMVs too).
struct DecodeGemvShape {
    int width = 1; // region columns; the input lanes pass the first `firstColumn` of them
    int height = 1; // region rows
    int firstColumn = 0;
    std::vector<DecodeLane> inputs;
    std::vector<DecodeLane> outputs; // on distinct rows; Logits: consecutive rows
    Epilogue epilogue = Epilogue::Round;
    int simdWidth = 8;
    std::optional<double> routedAt; // GemvDispatch's
    int experts = 0;
    bool chosen = true;
    bool inputsStored = false;
    bool treeReduced = false;
};

// The GEMV's geometry as GemvKernel deals it, and the cycle its last FMAC ends at each PE.
struct GemvGeometry {
    explicit GemvGeometry(const DecodeGemvShape& gemv)
        : shape(gemv)
        , simd(std::max(1, gemv.simdWidth))
        , columns(gemv.width - gemv.firstColumn)
        , lanes(int(gemv.inputs.size()))
        , side(gemv.epilogue == Epilogue::Residual || gemv.epilogue == Epilogue::Gated)
        , outputAt(std::size_t(std::max(0, gemv.height)), -1)
    {
        std::int64_t widest = 0;
        for (std::size_t k = 0; k < gemv.outputs.size(); ++k) {
            const int row = gemv.outputs[k].row;
            outputAt[std::size_t(row)] = int(k);
            firstRow = std::min(firstRow, row);
            lastRow = std::max(lastRow, row);
            widest = std::max(widest, gemv.outputs[k].size);
        }
        // A lane a single column takes streams through its FMACs: perUsed cycles a wavelet (the
        // widest output row; also the cycles of the zero step before the FMACs). A lane split
        // over several columns is stored as it passes, a cycle a wavelet, and each column
        // multiplies its part once the lane is in.
        perUsed = elementwise(widest, 1, simd);
    }
    bool valid() const { return columns >= 1 && lanes >= 1 && !shape.outputs.empty() && shape.height >= 1; }
    // With at least as many columns as lanes, lane l is split into parts over columns l,
    // l + lanes, ...; with fewer, column t takes the whole lanes t, t + columns, ..., each turned
    // down it on a color of its own.
    bool wide() const { return columns >= lanes; }
    int parts(int lane) const { return wide() ? (columns - 1 - lane) / lanes + 1 : 1; }
    bool split(int lane) const { return parts(lane) > 1; }
    int lastTap(int lane) const { return wide() ? lane + lanes * (parts(lane) - 1) : lane % columns; }
    struct Share {
        const DecodeLane* in;
        std::int64_t use; // the elements of it the column multiplies
        bool split;
    };
    std::vector<Share> sharesOf(int t) const
    {
        if (!wide()) {
            std::vector<Share> shares;
            for (int lane = t; lane < lanes; lane += columns)
                shares.push_back({ &shape.inputs[std::size_t(lane)], shape.inputs[std::size_t(lane)].size, false });
            return shares;
        }
        const int lane = t % lanes;
        const std::int64_t size = shape.inputs[std::size_t(lane)].size;
        const int count = parts(lane);
        return { { &shape.inputs[std::size_t(lane)], size * (t / lanes + 1) / count - size * (t / lanes) / count,
            split(lane) } };
    }
    // The side input on a row: sent before the row's input lane, so it holds that lane back.
    std::int64_t sideOn(int row) const
    {
        const int k = outputAt[std::size_t(row)];
        return side && k >= 0 ? shape.outputs[std::size_t(k)].size : 0;
    }
    // The cycle GEMV column t's PE on `row` is done with its inputs, less the FMAC of one
    // wavelet into its `outputs` (so that adding it gives the cycle its engine is free): the
    // lane's first wavelet reaches its first tap after the send, the hops and the row's side
    // input (or the zero step); then a wavelet every perUsed cycles (every cycle when split);
    // then the hops down the column, one more to leave the turn. A split lane's column then
    // multiplies its part.
    double fmacDone(int t, int row, std::int64_t outputs) const
    {
        if (shape.routedAt)
            return dispatchedFmacDone(t, row, outputs);
        if (!wide()) {
            // Whole lanes on colors of their own into one engine, a wavelet at a time: from the
            // first lane's arrival, every lane's wavelets back to back.
            double first = std::numeric_limits<double>::max();
            double total = 0.0;
            for (int lane = t; lane < lanes; lane += columns) {
                const DecodeLane& in = shape.inputs[std::size_t(lane)];
                const int hops = std::abs(row - in.row);
                first = std::min(first, 2.0 + double(sideOn(in.row) + shape.firstColumn + t) + (hops ? hops + 1 : 0));
                total += double(in.size) * perUsed;
            }
            return std::max(first, perUsed) + total - perUsed;
        }
        const int lane = t % lanes;
        const DecodeLane& in = shape.inputs[std::size_t(lane)];
        const double start = std::max(2.0 + double(sideOn(in.row) + shape.firstColumn + lane), perUsed);
        const int apart = std::abs(row - in.row);
        const double pace = split(lane) ? 1.0 : perUsed;
        const double last = start + double(t - lane) + double(in.size - 1) * pace + (apart ? apart + 1 : 0);
        if (!split(lane))
            return last;
        const double perWavelet = elementwise(outputs, 1, simd);
        return last + 1.0 + double(sharesOf(t).front().use) * perWavelet - perWavelet;
    }
    // Dispatch: every wavelet stored as it comes (a cycle each, into one engine), then the
    // routing weights stored and the expert selected (a cycle), then the FMACs from the buffers
    // if chosen.
    double dispatchedFmacDone(int t, int row, std::int64_t outputs) const
    {
        double stored = 0.0;
        if (!shape.inputsStored) {
            double first = std::numeric_limits<double>::max();
            double total = 0.0;
            for (const Share& share : sharesOf(t)) {
                const DecodeLane& in = *share.in;
                const int hops = std::abs(row - in.row);
                first = std::min(first, 2.0 + double(shape.firstColumn + t) + (hops ? hops + 1 : 0));
                total += double(in.size);
            }
            stored = first + total;
        }
        const double routed = *shape.routedAt + double(shape.firstColumn + t + row + shape.experts);
        const double perWavelet = elementwise(outputs, 1, simd);
        double multiply = 0.0;
        for (const Share& share : sharesOf(t))
            multiply += shape.chosen ? double(share.use) * perWavelet : 0.0;
        return std::max(stored, routed) + 1.0 + multiply - perWavelet;
    }
    // The exit's compute steps after the chain: the bias and rounding, then the epilogue's own.
    double epilogueCycles(std::int64_t size) const
    {
        const double round = elementwise(size, 1, simd);
        switch (shape.epilogue) {
        case Epilogue::Rotary:
            return round + elementwise(size, 6, simd);
        case Epilogue::Activation:
        case Epilogue::Gated:
            return round + elementwise(size, 8, simd);
        case Epilogue::Residual: // then the residual's add and rounding
        case Epilogue::Logits: // the bias alone, then the lane's argmax
            return 2.0 * round;
        case Epilogue::Route: // the bias alone, then softmax, top-k and renormalisation
            return round + elementwise(size, 12, simd);
        case Epilogue::Round:
        // An expert's down projection: costDecodeExperts times it as Round and adds its combine
        // chain (the weight's product, the running sum's add) itself.
        case Epilogue::Combine:
            break;
        }
        return round;
    }

    const DecodeGemvShape& shape;
    int simd; // FP16 lanes of a PE's engine
    int columns; // GEMV columns
    int lanes; // input lanes
    bool side; // the epilogue takes a side input
    std::vector<int> outputAt; // per row: output block or -1
    int firstRow = std::numeric_limits<int>::max(); // the output rows' span
    int lastRow = -1;
    double perUsed = 1.0; // cycles a lane's wavelet takes at its slowest tap
};

struct Work {
    double busy = 0.0; // every PE's engine cycles
    double busiestPe = 0.0;
    void add(double pe)
    {
        busy += pe;
        busiestPe = std::max(busiestPe, pe);
    }
};

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

struct Traffic {
    double links = 0.0; // wavelets over all links
    double busiestLink = 0.0;
};

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

std::vector<DecodeLane> decodeLanes(const Lanes& lanes, int top)
{
    std::vector<DecodeLane> out;
    for (const Lane& lane : lanes)
        out.push_back({ lane.y - top, std::int64_t(lane.size()) });
    return out;
}

} // namespace

KernelCost costDecodeGemv(const GemvSpec& spec, int simdWidth, const GemvDispatch& dispatch)
{
    DecodeGemvShape shape;
    shape.width = spec.frame.w;
    shape.height = spec.frame.h;
    shape.firstColumn = spec.firstColumn;
    shape.inputs = decodeLanes(spec.input, spec.frame.y0);
    shape.outputs = decodeLanes(spec.output, spec.frame.y0);
    shape.epilogue = spec.epilogue;
    shape.simdWidth = simdWidth;
    shape.routedAt = dispatch.routedAt;
    shape.experts = spec.experts;
    shape.chosen = dispatch.chosen;
    shape.inputsStored = dispatch.inputsStored;
    shape.treeReduced = spec.treeReduced;
    return gemvCost(shape);
}

namespace {

// An experts region's pieces: expert e's up, (gate,) down on consecutive column ranges.
struct ExpertsGeometry {
    explicit ExpertsGeometry(const DecodeExpertsShape& experts)
        : shape(experts)
        , simd(std::max(1, experts.simdWidth))
        , count(std::max(1, experts.experts))
        , parts(experts.gatedFfn ? 3 : 2)
        , pieces(count * parts)
    {
        for (const DecodeLane& lane : shape.hidden) {
            widest = std::max(widest, lane.size);
            hiddenTotal += lane.size;
        }
        round = elementwise(widest, 1, simd);
    }
    int begin(int piece) const { return int(std::int64_t(shape.width) * piece / pieces); }
    double exitColumn(int e) const { return double(begin((e + 1) * parts) - 1); }
    bool isChosen(int e) const { return std::find(shape.chosen.begin(), shape.chosen.end(), e) != shape.chosen.end(); }
    // Piece `index` as a dispatched GEMV from `in` to `out`.
    DecodeGemvShape piece(int index, const std::vector<DecodeLane>& in, const std::vector<DecodeLane>& out) const
    {
        constexpr double kRoutedAt = 2.0; // the router's Send step to its first wavelet at column 0
        DecodeGemvShape gemv;
        gemv.width = begin(index + 1) - begin(index);
        gemv.height = shape.height;
        gemv.inputs = in;
        gemv.outputs = out;
        gemv.simdWidth = simd;
        gemv.experts = count;
        gemv.treeReduced = shape.treeReduced;
        if (shape.routed)
            gemv.routedAt = kRoutedAt + double(begin(index));
        return gemv;
    }

    const DecodeExpertsShape& shape;
    int simd;
    int count; // experts
    int parts; // projections an expert
    int pieces;
    std::int64_t widest = 0;
    std::int64_t hiddenTotal = 0;
    double round = 0.0; // a hidden lane's rounding step
};

double latest(const std::vector<double>& times)
{
    return *std::max_element(times.begin(), times.end());
}

// Expert e's weighted output ready to join the sum at its down's exit, chosen or not.
double expertDone(const ExpertsGeometry& geometry, int e, bool chosen)
{
    const DecodeExpertsShape& shape = geometry.shape;
    const int parts = geometry.parts;
    const int simd = geometry.simd;
    DecodeGemvShape up = geometry.piece(e * parts, shape.hidden, shape.ffn);
    up.inputsStored = true;
    up.chosen = chosen;
    up.epilogue = shape.gatedFfn ? Epilogue::Round : Epilogue::Activation;
    // Unrouted, the input lanes stream in and reach a piece as they pass the ones before it.
    const auto reach = [&](int index) { return shape.routed ? 0.0 : double(geometry.begin(index)); };
    const GemvGeometry upGeometry(up);
    std::vector<double> inner = gemvSumsIn(upGeometry);
    for (std::size_t k = 0; k < inner.size(); ++k)
        inner[k] += reach(e * parts) + upGeometry.epilogueCycles(shape.ffn[k].size);
    if (shape.gatedFfn) {
        // The gate rounds its sums, then takes up's lane (its side input) and applies the
        // activation to one and multiplies by the other.
        DecodeGemvShape gate = geometry.piece(e * parts + 1, shape.hidden, shape.ffn);
        gate.inputsStored = true;
        gate.chosen = chosen;
        const std::vector<double> sums = gemvSumsIn(GemvGeometry(gate));
        const double apart = double(geometry.begin(e * parts + 2) - geometry.begin(e * parts + 1));
        for (std::size_t k = 0; k < inner.size(); ++k) {
            const std::int64_t size = shape.ffn[k].size;
            const double sideIn = inner[k] + 1.0 + apart + double(size);
            inner[k] = std::max(reach(e * parts + 1) + sums[k] + elementwise(size, 1, simd), sideIn)
                + elementwise(size, 8, simd);
        }
    }
    // The inner lanes leave the exits west of the down piece as the last is ready.
    const double sent = latest(inner);
    DecodeGemvShape down = geometry.piece(e * parts + parts - 1, shape.ffn, shape.hidden);
    down.chosen = chosen;
    if (down.routedAt)
        *down.routedAt -= sent;
    const std::vector<double> sums = gemvSumsIn(GemvGeometry(down));
    return sent + latest(sums) + 2.0 * geometry.round; // the bias and rounding, the scaling by its weight
}

// The sum from exit to exit (a wavelet a cycle behind the first, each exit adding as it forwards),
// then the last exit's rounding and residual: a max-plus chain, so the token's cycles are the
// largest over experts of its ready cycle plus the chain's tail after it. Given the chosen experts,
// exact; else the expectation over a uniform set of topK.
double expertsCycles(const ExpertsGeometry& geometry)
{
    const DecodeExpertsShape& shape = geometry.shape;
    const int experts = geometry.count;
    std::vector<double> tail(std::size_t(experts), 0.0);
    for (int e = experts - 2; e >= 0; --e)
        tail[std::size_t(e)] = tail[std::size_t(e + 1)] + 1.0 + (geometry.exitColumn(e + 1) - geometry.exitColumn(e));
    const double finish = double(geometry.widest) + 2.0 * geometry.round; // the adds, rounding and the residual
    std::vector<double> ifChosen; // each expert's path to the end, chosen or not
    std::vector<double> ifIdle;
    for (int e = 0; e < experts; ++e) {
        ifChosen.push_back(expertDone(geometry, e, true) + tail[std::size_t(e)] + finish);
        ifIdle.push_back(expertDone(geometry, e, false) + tail[std::size_t(e)] + finish);
    }
    const double idle = latest(ifIdle);
    const int k = std::clamp(shape.topK, 1, experts);
    double cycles = 0.0;
    if (!shape.chosen.empty()) { // exact: the chosen's and the others' max-plus paths
        for (int e = 0; e < experts; ++e)
            cycles = std::max(cycles, geometry.isChosen(e) ? ifChosen[std::size_t(e)] : ifIdle[std::size_t(e)]);
        return cycles;
    }
    // The i-th smallest is the largest chosen with probability C(i, k - 1) / C(E, k) (i from 0).
    std::sort(ifChosen.begin(), ifChosen.end());
    double probability = 0.0; // C(i, k - 1) / C(E, k), updated as i grows
    for (int i = k - 1; i < experts; ++i) {
        if (i == k - 1) {
            probability = 1.0;
            for (int j = 0; j < k; ++j)
                probability *= double(k - j) / double(experts - j);
        } else {
            probability *= double(i) / double(i - k + 1);
        }
        cycles += probability * std::max(ifChosen[std::size_t(i)], idle);
    }
    return cycles;
}

struct ExpertsLoad {
    double busy = 0.0;
    double busiestPe = 0.0;
    double links = 0.0;
    double busiestLink = 0.0;
};

// Engine cycles: each piece as a dispatched GEMV, its FMACs by the chance its expert is chosen;
// the gate's side stores and activation; the downs' scaling and the chain's adds; the last exit's
// rounding, residual and its side stores. Links: each piece's GEMV traffic, the input lanes' runs
// across the region, the routing weights, up's lanes to the gates, the running sum, the residual.
ExpertsLoad expertsLoad(const ExpertsGeometry& geometry)
{
    const DecodeExpertsShape& shape = geometry.shape;
    const int parts = geometry.parts;
    const int experts = geometry.count;
    const double chosenShare
        = shape.routed ? double(std::clamp(shape.topK, 1, experts)) / double(experts) : 1.0;
    ExpertsLoad load;
    std::vector<int> farthestTap(shape.hidden.size(), 0); // region column of each input lane's last tap
    for (int p = 0; p < geometry.pieces; ++p) {
        const bool isDown = p % parts == parts - 1;
        DecodeGemvShape gemv
            = isDown ? geometry.piece(p, shape.ffn, shape.hidden) : geometry.piece(p, shape.hidden, shape.ffn);
        gemv.epilogue = isDown || (shape.gatedFfn && p % parts == 0) ? Epilogue::Round
            : shape.gatedFfn                                         ? Epilogue::Gated
                                                                     : Epilogue::Activation;
        const double share = shape.chosen.empty() ? chosenShare : geometry.isChosen(p / parts) ? 1.0 : 0.0;
        for (const bool chosen : { true, false }) {
            gemv.chosen = chosen;
            const Work work = gemvWork(GemvGeometry(gemv));
            load.busy += (chosen ? share : 1.0 - share) * work.busy;
            load.busiestPe = std::max(load.busiestPe, work.busiestPe);
        }
        gemv.epilogue = Epilogue::Round; // the gate's side input is up's lane, counted below
        const GemvGeometry pieceGeometry(gemv);
        const Traffic traffic = gemvTraffic(pieceGeometry);
        load.links += traffic.links;
        load.busiestLink = std::max(load.busiestLink, traffic.busiestLink);
        // The input lanes' runs: the hidden lanes cross the region from column 0 once, to the
        // last piece that takes them; an inner lane crosses from the exit before the piece.
        for (std::size_t lane = 0; lane < gemv.inputs.size(); ++lane) {
            const double size = double(gemv.inputs[lane].size);
            const int tap = pieceGeometry.lastTap(int(lane));
            load.links -= size * double(tap);
            if (isDown)
                load.links += size * double(tap + 1);
            else
                farthestTap[lane] = std::max(farthestTap[lane], geometry.begin(p) + tap);
        }
        if (isDown) // the scaling, and the add of the running sum at every exit but the first
            for (const DecodeLane& out : shape.hidden)
                load.busy += elementwise(out.size, 1, geometry.simd) + (p >= parts ? double(out.size) : 0.0);
    }
    for (std::size_t lane = 0; lane < shape.hidden.size(); ++lane)
        load.links += double(shape.hidden[lane].size) * double(farthestTap[lane]);
    std::int64_t lowest = 0; // the routing weights go down every column to its lowest worker
    for (const DecodeLane& lane : shape.hidden)
        lowest = std::max<std::int64_t>(lowest, lane.row);
    for (const DecodeLane& lane : shape.ffn)
        lowest = std::max<std::int64_t>(lowest, lane.row);
    load.links += double(experts) * (double(shape.width - 1) + double(shape.width) * double(lowest));
    const auto hiddenTotal = double(geometry.hiddenTotal);
    for (int e = 0; e < experts; ++e) {
        if (shape.gatedFfn) // up's lanes to the gate's exits
            for (const DecodeLane& lane : shape.ffn)
                load.links
                    += double(lane.size) * double(geometry.begin(e * parts + 2) - geometry.begin(e * parts + 1));
        if (e > 0)
            load.links += hiddenTotal * (geometry.exitColumn(e) - geometry.exitColumn(e - 1));
    }
    load.links += hiddenTotal * double(shape.width - 1); // the residual to the last exit
    load.busy += hiddenTotal + 2.0 * hiddenTotal / double(geometry.simd); // its stores, rounding, add
    return load;
}

} // namespace

KernelCost costDecodeExperts(const DecodeExpertsShape& shape)
{
    const ExpertsGeometry geometry(shape);
    if (shape.width < geometry.pieces || shape.hidden.empty() || shape.ffn.empty())
        return {};
    const double cycles = expertsCycles(geometry);
    const ExpertsLoad load = expertsLoad(geometry);
    const double pes = double(shape.width) * double(shape.height);
    KernelCost cost = decodeCost(cycles, load.busy, pes, load.busiestPe, load.busiestLink, load.links);
    const int k = std::clamp(shape.topK, 1, geometry.count);
    for (const DecodeLane& out : shape.ffn)
        for (const DecodeLane& in : shape.hidden)
            cost.fmacs += double(geometry.parts) * double(in.size) * double(out.size) * double(k);
    return cost;
}

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

} // namespace waferscope::core::engine
