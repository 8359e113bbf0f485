#pragma once

// Closed forms of the decode kernels of the cycle-level run (core/kernels: gemv, experts, norm, attention, embedding).
//
// Each closed form follows its kernel's program (core/cyclelevel/kernels/) through the
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
//
// Closed forms of one token's kernel on its region, cross-checked against the fabric in
// tests/core/cyclelevel/test_decodekernels.cpp. They assume the inputs the kernel is fed there: each lane
// is sent along its row, one wavelet per cycle, from the PE before the region's first column,
// the first send at cycle 0; a row's streams follow one another (a side input first). Outputs
// stay at the exits. cycles: until the last PE's engine is done; linkWavelets: over the links
// out of the region's PEs (exact); peBusyFraction: the engines' task and compute cycles (exact)
// over PEs x cycles; computeCycles and fabricCycles: the busiest PE's engine cycles and the
// busiest link's wavelets; fmacs: the multiply-adds of the kernel's dot products.
//
// Private to the closed forms: the timing helpers and the GEMV's timing, which the experts' closed
// form walks piece by piece.

#include "core/kernels/kernelcost.h"
#include "core/kernels/kernelspec.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <vector>

namespace waferscope::core::closedform {

inline std::int64_t ceilDiv(std::int64_t a, std::int64_t b)
{
    return b > 0 ? (a + b - 1) / b : 0;
}

constexpr double kSendToNeighbour = 2.0; // from a Send step to the neighbour's task
constexpr double kChainHop = 1.5; // a forwarding hop of a chain, on average over its two colors

// computesteps' elementwiseCycles: n elements at `ops` SIMD operations each (also the FMAC of one
// wavelet into n outputs: ops = 1).
inline double elementwise(std::int64_t elements, int ops, int simd)
{
    return double(std::max<std::int64_t>(1, ceilDiv(elements * ops, std::max(1, simd))));
}

KernelCost decodeCost(double cycles, double busy, double pes, double busiestPe, double busiestLink, double links);

// The cycle a chain's last PE takes the first wavelet: the head sends at headSend, PE p > 0 is
// free at ready[p], and each hop forwards the wavelet unless the next PE is still busy.
double chainHead(double headSend, const std::vector<double>& ready);

// A tree-reduced row (GemvSpec::treeReduced): the cycle its root's engine is free for the
// epilogue, its `size` sums in, given the cycle each column's engine is free of its FMACs. A node
// takes its children's vectors level by level, a cycle a wavelet: each level whole but the last
// (then a cycle to arm the next level's task), the last's sums forwarded as they are added. That
// stream reaches the parent as a forwarding hop of a chain reaches the next PE, plus a cycle a
// router it passes. A leaf sends once its FMACs end.
double treeRoot(const std::vector<double>& ready, std::int64_t size);

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
Work gemvWork(const GemvGeometry& geometry);

struct Traffic {
    double links = 0.0; // wavelets over all links
    double busiestLink = 0.0;
};

// The input lanes along their rows to their last taps, down (and up) the columns from the
// turns, the chains along the output rows, the side inputs to the exits, the argmax pairs.
Traffic gemvTraffic(const GemvGeometry& geometry);

// Each output row's chain starts as its columns finish their FMACs and carries the block behind
// its first wavelet; the exit then runs the epilogue. Logits: the (value, id) pair goes down the
// exits, each storing it (two wavelets), combining it (a cycle) and sending it the cycle after.
// Per output block: the cycle its exit's engine is free for the epilogue, the row's sums in.
std::vector<double> gemvSumsIn(const GemvGeometry& geometry);

double gemvCycles(const GemvGeometry& geometry);

// The GEMV's closed form from its timing shape.
KernelCost gemvCost(const DecodeGemvShape& shape);

} // namespace waferscope::core::closedform
