// Placement units, their costs in each mode, PE allocation and per-region kernel plans.
#include "core/compiler/units.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace waferscope::core::compiler {

std::int64_t ceilDiv(std::int64_t a, std::int64_t b)
{
    return b > 0 ? (a + b - 1) / b : 0;
}

namespace {

bool fusable(Op::Kind kind)
{
    return kind == Op::Kind::Norm || kind == Op::Kind::Activation || kind == Op::Kind::PositionEmbedding
        || kind == Op::Kind::Loss;
}

// Elementwise ops that consume their producer's output run where it was produced.
bool fusesBackward(Op::Kind kind)
{
    return kind == Op::Kind::Activation || kind == Op::Kind::Loss || kind == Op::Kind::PositionEmbedding;
}

} // namespace

bool isMatrixOp(Op::Kind kind)
{
    return kind == Op::Kind::Linear || kind == Op::Kind::LmHead || kind == Op::Kind::Pooler
        || kind == Op::Kind::PatchEmbedding || kind == Op::Kind::Convolution || kind == Op::Kind::Upsampling
        || kind == Op::Kind::MoeRouter || kind == Op::Kind::Experts;
}

std::vector<Unit> buildUnits(const ModelGraph& graph, const SystemSpec& system, int& stages)
{
    std::vector<Unit> units;
    std::vector<int> pending; // fusable ops waiting for the next unit
    stages = 0;
    int lastLayer = -2;
    Op::Stack lastStack = Op::Stack::None; // lastLayer's -2 starts the first stage whatever the stack
    for (int i = 0; i < int(graph.ops.size()); ++i) {
        const Op& op = graph.ops[std::size_t(i)];
        // A new stage at each block boundary; a fusable op outside the blocks (a final norm)
        // goes with the unit it is fused into instead.
        if ((op.layer != lastLayer || op.stack != lastStack) && !(fusable(op.kind) && op.layer < 0)) {
            lastLayer = op.layer;
            lastStack = op.stack;
            ++stages;
        }
        if (fusable(op.kind)) {
            if (fusesBackward(op.kind) && !units.empty())
                units.back().fused.push_back(i);
            else
                pending.push_back(i);
            continue;
        }
        Unit unit;
        unit.op = i;
        unit.stage = std::max(0, stages - 1);
        unit.fused = std::move(pending);
        pending.clear();
        const std::int64_t simd = std::max(1, system.wafer.fmacPerPePerCycle);
        if (isMatrixOp(op.kind))
            unit.maxUsefulPes = std::max<std::int64_t>(
                1, op.kind == Op::Kind::Experts ? op.params / simd : op.inFeatures * op.outFeatures / simd);
        else if (op.kind == Op::Kind::AttentionCore)
            unit.maxUsefulPes = std::numeric_limits<std::int64_t>::max();
        else
            unit.maxUsefulPes = 1; // lookups: only memory sizes them
        units.push_back(std::move(unit));
    }
    if (!pending.empty() && !units.empty())
        for (int op : pending)
            units.back().fused.push_back(op);
    stages = units.empty() ? 0 : units.back().stage + 1;
    return units;
}

namespace {

// Sums an op and its fused ops.
template <typename F>
auto sumOps(const Unit& unit, const ModelGraph& graph, F value)
{
    auto total = value(graph.ops[std::size_t(unit.op)]);
    for (int op : unit.fused)
        total += value(graph.ops[std::size_t(op)]);
    return total;
}

std::int64_t kvCacheBytes(const Op& op, const ModelConfig& config)
{
    if (op.kind != Op::Kind::AttentionCore || config.numHeads <= 0)
        return 0;
    const std::int64_t headDim = config.dKv > 0 ? config.dKv : config.hiddenSize / config.numHeads;
    const std::int64_t groups = config.numKvGroups > 0 ? config.numKvGroups : config.numHeads;
    // Keys and values for every position of one user's context, at the activation precision (2 B).
    return 2 * groups * headDim * op.tokensPerSample * 2;
}

} // namespace

void costUnitsPipelined(std::vector<Unit>& units, const ModelGraph& graph, int stages)
{
    for (Unit& unit : units) {
        // Layer pipelining: a sample enters stage s, runs forward to the last stage and comes
        // back; stage s holds the activations of the 2(S - s) - 1 samples in between.
        const std::int64_t inFlight = 2 * (stages - unit.stage) - 1;
        unit.work = sumOps(unit, graph,
            [](const Op& op) { return (op.fwdFlopsPerToken + op.bwdFlopsPerToken) * double(op.tokensPerSample); });
        unit.weightBytes = sumOps(unit, graph, [](const Op& op) { return op.weightBytes; });
        unit.stateBytes = sumOps(unit, graph, [](const Op& op) { return op.weightBytes + op.optimizerStateBytes; });
        unit.activationBytes = inFlight
            * sumOps(unit, graph, [](const Op& op) { return op.activationBytesPerToken * op.tokensPerSample; });
    }
}

void costUnitsInference(std::vector<Unit>& units, const ModelGraph& graph)
{
    for (Unit& unit : units) {
        unit.work = sumOps(unit, graph, [](const Op& op) { return op.fwdFlopsPerToken; });
        unit.weightBytes = sumOps(unit, graph, [](const Op& op) { return op.weightBytes; });
        unit.stateBytes = 0;
        // One token's activations on the way through (decode); prefill streams through them.
        unit.activationBytes = sumOps(unit, graph, [](const Op& op) { return op.activationBytesPerToken; });
        unit.kvCacheBytes = sumOps(unit, graph, [&](const Op& op) { return kvCacheBytes(op, graph.config); });
    }
}

std::int64_t memoryPes(const Unit& unit, std::int64_t capacityPerPe)
{
    return std::max<std::int64_t>(1, ceilDiv(unit.bytes(), capacityPerPe));
}

void planKernel(Region& region, const Unit& unit, const ModelGraph& graph, const SystemSpec& system, bool training)
{
    const Op& op = graph.ops[std::size_t(unit.op)];
    const int simd = std::max(1, system.wafer.fmacPerPePerCycle);
    const std::int64_t h = region.rect.h;
    const std::int64_t w = region.rect.w;
    const std::int64_t pes = std::max<std::int64_t>(1, h * w);
    KernelPlan& kernel = region.kernel;
    const double tokens = training ? double(op.tokensPerSample) : 1.0;
    // Matrices fused in on the same input (a stacked plan's k and v in q's region) are rows of
    // the one GEMV.
    const auto stackedRows = [&](int index) {
        const Op& fused = graph.ops[std::size_t(index)];
        return isMatrixOp(fused.kind) && fused.kind != Op::Kind::Experts && fused.inFeatures == op.inFeatures;
    };
    if (isMatrixOp(op.kind) && op.kind != Op::Kind::Experts) {
        // y = A x per token, as the fabric's GEMV: A (outputs x inputs) block-distributed, x
        // multicast down the columns from the top row, partial y reduced west to east; or the
        // same kernel turned a quarter (x along rows, y reduced down columns), whichever is
        // faster on this rectangle.
        std::int64_t outFeatures = op.outFeatures;
        for (int index : unit.fused)
            outFeatures += stackedRows(index) ? graph.ops[std::size_t(index)].outFeatures : 0;
        kernel.kind = KernelPlan::Kind::Gemv;
        kernel.matrixRows = outFeatures;
        kernel.matrixCols = op.inFeatures;
        const auto cyclesPerToken = [&](std::int64_t outputsPerPe, std::int64_t inputsPerPe) {
            // Each arriving x_j costs one FMAC instruction over the tile's outputs, SIMD wide.
            return double(inputsPerPe) * double(ceilDiv(outputsPerPe, simd));
        };
        // A dimension longer than the matrix leaves PEs idle: the kernel uses the part it can.
        const double down = cyclesPerToken(
            ceilDiv(outFeatures, std::min(h, outFeatures)), ceilDiv(op.inFeatures, std::min(w, op.inFeatures)));
        const double across = cyclesPerToken(
            ceilDiv(outFeatures, std::min(w, outFeatures)), ceilDiv(op.inFeatures, std::min(h, op.inFeatures)));
        const bool turned = across < down;
        kernel.tileRows = ceilDiv(outFeatures, std::min(turned ? w : h, outFeatures));
        kernel.tileCols = ceilDiv(op.inFeatures, std::min(turned ? h : w, op.inFeatures));
        kernel.broadcast = turned ? fabric::East : fabric::South;
        kernel.reduce = turned ? fabric::South : fabric::East;
        kernel.colors = { 0, 1, 2, 3 };
        kernel.broadcastHops = turned ? w - 1 : h - 1;
        kernel.reduceHops = turned ? h - 1 : w - 1;
        const double perToken = std::min(down, across);
        region.computeCycles = perToken * tokens * (training ? 3.0 : 1.0);
    } else {
        // Experts: each token visits top_k of the experts held here (FLOPs already say so).
        kernel.kind = op.kind == Op::Kind::AttentionCore ? KernelPlan::Kind::Attention
            : op.kind == Op::Kind::Experts               ? KernelPlan::Kind::Gemv
                                                         : KernelPlan::Kind::Gather;
        kernel.matrixRows = op.kind == Op::Kind::Experts ? op.outFeatures : op.tokensPerSample;
        kernel.matrixCols = op.kind == Op::Kind::Experts ? op.inFeatures : graph.config.hiddenSize;
        kernel.tileRows = ceilDiv(kernel.matrixRows, h);
        kernel.tileCols = ceilDiv(kernel.matrixCols, w);
        kernel.broadcast = fabric::South;
        kernel.reduce = fabric::East;
        kernel.colors = { 0, 1, 2, 3 };
        kernel.broadcastHops = h - 1;
        kernel.reduceHops = w - 1;
        const double flops = unit.work; // already per sample (training) or per token
        region.computeCycles = flops / (2.0 * simd * double(pes));
        return;
    }
    // Fused elementwise ops run on the same PEs.
    double fusedFlops = 0.0;
    for (int fused : unit.fused) {
        if (stackedRows(fused))
            continue; // rows of the GEMV above
        const Op& f = graph.ops[std::size_t(fused)];
        fusedFlops += (f.fwdFlopsPerToken + (training ? f.bwdFlopsPerToken : 0.0)) * double(tokens);
    }
    region.computeCycles += fusedFlops / (2.0 * simd * double(pes));
}

} // namespace waferscope::core::compiler
