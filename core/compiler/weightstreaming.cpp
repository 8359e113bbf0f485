// No header of its own: planWeightStreaming, one of the compiler's execution modes, declared in compiler.h.
// Weight streaming: each op runs on the whole usable fabric with the micro-batch's activations
// resident; its weights stream in from MemoryX (forward, and again for backward) and its weight
// gradients stream back out.
#include "core/common/units.h"
#include "core/compiler/checkpointing.h"
#include "core/compiler/compiler.h"
#include "core/compiler/units.h"

#include <algorithm>
#include <limits>

namespace waferscope::core::compiler {

namespace {

// Bytes of one streamed copy of an op's weights: dense at the weight precision, or for a
// sparse op each non-zero with its 16-bit column index (the wavelet the fabric receives).
std::int64_t streamedBytes(const Op& op, int weightBytesPerParam)
{
    if (op.params <= 0)
        return 0;
    if (op.nonzeroParams >= op.params)
        return op.weightBytes;
    return op.nonzeroParams * (weightBytesPerParam + 2);
}

// What MemoryX stores for an op: its weights and optimizer state, or for a trained op the
// preset's bytes per parameter when that is more (Cerebras sizes MemoryX's tiers at about 50 B
// per parameter, weights plus optimizer state).
double memoryxBytes(const Op& op, const MemoryXSpec& memoryx)
{
    const double own = double(op.weightBytes + op.optimizerStateBytes);
    return op.frozen ? own : std::max(own, double(op.params) * memoryx.bytesPerParam);
}

// Where MemoryX holds each unit's state: its DRAM tier filled in the units' order (the order
// the weights stream in), then its flash tier. Returns each unit's share held in flash.
std::vector<double> placeInMemoryX(
    const std::vector<Unit>& units, const ModelGraph& graph, const MemoryXSpec& memoryx, ExecutionPlan& plan)
{
    std::vector<double> flashShare(units.size(), 0.0);
    double dramLeft = memoryx.dramBytes;
    plan.memoryxStoredBytes = 0.0;
    plan.memoryxFlashBytes = 0.0;
    for (std::size_t u = 0; u < units.size(); ++u) {
        double stored = memoryxBytes(graph.ops[std::size_t(units[u].op)], memoryx);
        for (int index : units[u].fused)
            stored += memoryxBytes(graph.ops[std::size_t(index)], memoryx);
        const double inDram = std::min(stored, dramLeft);
        dramLeft -= inDram;
        plan.memoryxStoredBytes += stored;
        plan.memoryxFlashBytes += stored - inDram;
        flashShare[u] = stored > 0.0 ? (stored - inDram) / stored : 0.0;
    }
    return flashShare;
}

// What the checkpointing choice weighs: per-stage outputs, FLOPs and weights, the SRAM, the
// batch, and the wafer's and the links' rates.
StreamingProfile streamingProfile(const std::vector<Unit>& units, const std::vector<std::int64_t>& workingPerSample,
    const ModelGraph& graph, const SystemSpec& system, std::int64_t sram, int numSystems,
    const std::vector<double>& flashShare)
{
    StreamingProfile profile;
    const int stages = units.empty() ? 0 : units.back().stage + 1;
    profile.stageOutputBytes.assign(std::size_t(stages), 0);
    profile.stageForwardFlopsPerSample.assign(std::size_t(stages), 0.0);
    profile.stageWeightBytes.assign(std::size_t(stages), 0.0);
    profile.workingBytes = workingPerSample;
    double flashWeightBytes = 0.0; // of one pass, read from MemoryX's flash tier
    for (std::size_t u = 0; u < units.size(); ++u) {
        const auto stage = std::size_t(units[u].stage);
        // A stage's output is that of the last op it runs (a fused activation or loss after a
        // matrix, say), which is what the next stage reads.
        int last = units[u].op;
        for (int index : units[u].fused)
            last = std::max(last, index);
        const Op& output = graph.ops[std::size_t(last)];
        if (u + 1 == units.size() || units[u + 1].stage != units[u].stage)
            profile.stageOutputBytes[stage] = output.activationBytesPerToken * output.tokensPerSample;
        std::vector<int> members = units[u].fused;
        members.push_back(units[u].op);
        for (int index : members) {
            const Op& member = graph.ops[std::size_t(index)];
            profile.stageForwardFlopsPerSample[stage] += member.fwdFlopsPerToken * double(member.tokensPerSample);
            profile.stageWeightBytes[stage] += double(streamedBytes(member, graph.config.weightBytes));
            flashWeightBytes += flashShare[u] * double(streamedBytes(member, graph.config.weightBytes));
            profile.forwardFlopsPerSample += member.fwdFlopsPerToken * double(member.tokensPerSample);
            profile.backwardFlopsPerSample += member.bwdFlopsPerToken * double(member.tokensPerSample);
        }
    }
    for (double bytes : profile.stageWeightBytes)
        profile.weightBytesPerPass += bytes;
    profile.sramBytes = sram;
    profile.samplesPerSystem = std::max<std::int64_t>(1, graph.config.batchSize / std::max(1, numSystems));
    profile.requestedMicroBatch = graph.config.microBatchSize;
    profile.peakFlopsPerS = system.wafer.peakFlopsPerS();
    // Weights are broadcast through the narrowest of the CS-X port, SwarmX and the MemoryX tier
    // they are read from (the pass's average rate over both tiers); each system's checkpoints
    // are its own, over its port and its share of MemoryX.
    double path = system.ioBytesPerS;
    if (system.swarmx.linkBytesPerS > 0.0)
        path = std::min(path, system.swarmx.linkBytesPerS);
    const double dram = system.memoryx.dramReadBytesPerS();
    const double flash = system.memoryx.flashReadBytesPerS();
    const double dramRate = dram > 0.0 ? std::min(path, dram) : path;
    const double flashRate = flash > 0.0 ? std::min(path, flash) : dramRate;
    const double passS = (profile.weightBytesPerPass - flashWeightBytes) / dramRate + flashWeightBytes / flashRate;
    profile.weightStreamBytesPerS = passS > 0.0 ? profile.weightBytesPerPass / passS : dramRate;
    profile.checkpointBytesPerS = system.ownDataBytesPerS(numSystems);
    return profile;
}

// The working set of each unit for one sample: its op's inputs and outputs while it runs. A loss
// fused into the LM head consumes the logits as they are made, one fabric column (of `cols`) of
// tokens at a time, so the full logit tensor never exists.
std::vector<std::int64_t> workingBytesPerSample(const std::vector<Unit>& units, const ModelGraph& graph, int cols)
{
    const int activationBytes = 2;
    std::vector<std::int64_t> workingPerSample(units.size());
    for (std::size_t u = 0; u < units.size(); ++u) {
        const Op& op = graph.ops[std::size_t(units[u].op)];
        const bool fusedLoss = std::any_of(units[u].fused.begin(), units[u].fused.end(),
            [&](int index) { return graph.ops[std::size_t(index)].kind == Op::Kind::Loss; });
        const std::int64_t outputTokens
            = fusedLoss ? std::min<std::int64_t>(op.tokensPerSample, cols) : op.tokensPerSample;
        const std::int64_t inputWidth = op.inputWidth > 0 ? op.inputWidth : op.inFeatures;
        workingPerSample[u] = isMatrixOp(op.kind)
            ? (inputWidth * op.tokensPerSample + op.outFeatures * outputTokens) * activationBytes
            : 2 * op.activationBytesPerToken * op.tokensPerSample;
    }
    return workingPerSample;
}

// The micro-batch the plan runs, the one asked for when it fits (else the largest that does, with
// a note), or the system's share of the batch, and the checkpointing chosen for it.
void adoptMicroBatch(const CheckpointChoice& checkpoints, const ModelConfig& config, ExecutionPlan& plan)
{
    const std::int64_t maxMicroBatch = checkpoints.maxMicroBatch;
    const std::int64_t perSystem = std::max<std::int64_t>(1, config.batchSize / std::max(1, plan.numSystems));
    std::int64_t microBatch = config.microBatchSize > 0 ? config.microBatchSize : std::min(maxMicroBatch, perSystem);
    if (microBatch > maxMicroBatch) {
        plan.notes.push_back("micro_batch_size " + std::to_string(microBatch) + " does not fit: the largest is "
            + std::to_string(maxMicroBatch) + ", which this plan uses");
        microBatch = maxMicroBatch;
    }
    plan.microBatch = microBatch;
    plan.maxMicroBatch = maxMicroBatch;
    plan.checkpointStrategy = checkpoints.strategy;
    plan.checkpointEvery = checkpoints.every;
    plan.recomputeFlopsPerSample = checkpoints.recomputeFlopsPerSample;
    plan.checkpointBytesPerSample = checkpoints.memoryxBytesPerSample;
}

// A unit's region: the whole usable rectangle, `bytesPerSample` of activations for each sample of
// the plan's micro-batch, and the kernel and compute cycles of its op and the ops fused into it.
Region streamedRegion(const Unit& unit, const ModelGraph& graph, const SystemSpec& system, const ExecutionPlan& plan,
    std::int64_t bytesPerSample)
{
    const Op& op = graph.ops[std::size_t(unit.op)];
    const std::int64_t usablePes = plan.usable.area();
    const int simd = std::max(1, system.wafer.fmacPerPePerCycle);
    const int rows = plan.usable.h;
    const int cols = plan.usable.w;
    const std::int64_t microBatch = plan.microBatch;
    Region region;
    region.op = unit.op;
    region.fused = unit.fused;
    region.opName = op.name;
    region.role = op.role;
    region.layer = op.layer;
    region.stage = unit.stage;
    region.rect = plan.usable;
    region.activationBytes = microBatch * bytesPerSample;
    region.sramBytesPerPe = ceilDiv(region.activationBytes, usablePes);
    // Every op: its matrix (or features) over rows, the micro-batch's tokens over columns,
    // operands multicast along rows from the west edge, partial sums reduced down columns.
    KernelPlan& kernel = region.kernel;
    const std::int64_t tokens = microBatch * op.tokensPerSample;
    const bool streamedMatrix = isMatrixOp(op.kind);
    kernel.kind = streamedMatrix             ? KernelPlan::Kind::StreamedGemm
        : op.kind == Op::Kind::AttentionCore ? KernelPlan::Kind::Attention
                                             : KernelPlan::Kind::Gather;
    kernel.matrixRows = streamedMatrix ? op.outFeatures : op.tokensPerSample;
    kernel.matrixCols = streamedMatrix ? op.inFeatures : graph.config.hiddenSize;
    kernel.tileRows = ceilDiv(kernel.matrixCols, rows);
    kernel.tileCols = ceilDiv(tokens, cols);
    kernel.broadcast = fabric::East;
    kernel.reduce = fabric::South;
    kernel.broadcastHops = cols - 1;
    kernel.reduceHops = rows - 1;
    kernel.colors = { 0, 1, 2, 3 };
    double work = 0.0;
    for (int index : unit.fused) {
        const Op& fused = graph.ops[std::size_t(index)];
        work += (fused.fwdFlopsPerToken + fused.bwdFlopsPerToken) * double(fused.tokensPerSample);
    }
    if (isMatrixOp(op.kind) && op.kind != Op::Kind::Experts) {
        // Input features over rows, tokens over columns: PE (r, c) holds x[k in block r, t in
        // block c]. A weight w[n, k] enters row r(k) from the west edge and is multicast
        // along it; every PE multiplies it into its tokens, and the partial y[n, t] are
        // reduced down the columns.
        const double density = op.params > 0 ? double(op.nonzeroParams) / double(op.params) : 1.0;
        const double perBatch
            = double(kernel.tileRows) * double(op.outFeatures) * density * double(ceilDiv(kernel.tileCols, simd));
        region.computeCycles = 3.0 * perBatch / double(microBatch) + work / (2.0 * simd * double(usablePes));
    } else {
        // Experts (top_k of them per token, in the FLOPs) and the unweighted ops: by FLOPs.
        work += (op.fwdFlopsPerToken + op.bwdFlopsPerToken) * double(op.tokensPerSample);
        region.computeCycles = work / (2.0 * simd * double(usablePes));
    }
    return region;
}

// What unit `u` streams: its op's weights and those of the ops fused into it (norm scales,
// position tables) in, their gradients out, and with MemoryX checkpoints its stage's output.
StreamedLayer streamedLayer(const std::vector<Unit>& units, std::size_t u, const ModelGraph& graph,
    const CheckpointChoice& checkpoints, const StreamingProfile& profile, double flashShare)
{
    const Unit& unit = units[u];
    const Op& op = graph.ops[std::size_t(unit.op)];
    const ModelConfig& config = graph.config;
    StreamedLayer layer;
    std::int64_t streamed = streamedBytes(op, config.weightBytes);
    std::int64_t gradients = op.gradientParams() * config.weightBytes;
    for (int index : unit.fused) {
        streamed += streamedBytes(graph.ops[std::size_t(index)], config.weightBytes);
        gradients += graph.ops[std::size_t(index)].gradientParams() * config.weightBytes;
    }
    layer.bytesInForward = streamed;
    // A frozen op with nothing trainable before it has no backward pass to stream weights for.
    layer.bytesInBackward = op.frozen && op.bwdFlopsPerToken == 0.0 ? 0 : streamed;
    layer.bytesOutGradients = gradients;
    const bool stageEnd = u + 1 == units.size() || units[u + 1].stage != unit.stage;
    layer.recomputed = checkpoints.recomputedStage[std::size_t(unit.stage)];
    layer.flashShare = flashShare;
    if (checkpoints.strategy == CheckpointStrategy::MemoryX && stageEnd) {
        // Written when the stage finishes; its input read back before its backward starts.
        if (u + 1 < units.size())
            layer.checkpointOutBytesPerSample = profile.stageOutputBytes[std::size_t(unit.stage)];
        if (unit.stage > 0)
            layer.checkpointInBytesPerSample = profile.stageOutputBytes[std::size_t(unit.stage - 1)];
    }
    return layer;
}

// The plan's notes on how it streams, and where MemoryX spills into its flash tier.
void noteStreaming(const std::vector<Unit>& units, const ModelGraph& graph, const SystemSpec& system,
    const CheckpointChoice& checkpoints, const std::vector<double>& flashShare, ExecutionPlan& plan)
{
    const std::string kept = checkpoints.strategy == CheckpointStrategy::AllBlocks
        ? "block outputs kept for backward, the rest recomputed"
        : checkpoints.strategy == CheckpointStrategy::EveryK
        ? "a checkpoint every " + std::to_string(checkpoints.every) + " blocks, the rest recomputed"
        : "block outputs kept in MemoryX, the rest recomputed";
    plan.notes.push_back("weight streaming: one op at a time on all " + std::to_string(plan.usable.w) + " x "
        + std::to_string(plan.usable.h) + " usable PEs; weights stream in from MemoryX for forward and again for "
        + "backward, gradients stream out; micro-batch " + std::to_string(plan.microBatch) + " of at most "
        + std::to_string(plan.maxMicroBatch) + " (" + kept + ")");
    if (plan.memoryxFlashBytes > 0.0) {
        std::size_t first = 0;
        while (first < units.size() && flashShare[first] <= 0.0)
            ++first;
        plan.notes.push_back("MemoryX holds " + formatBytes(plan.memoryxStoredBytes)
            + " of weights and optimizer state, more than its " + formatBytes(system.memoryx.dramBytes)
            + " DRAM tier: " + formatBytes(plan.memoryxFlashBytes) + " (from "
            + graph.ops[std::size_t(units[first].op)].name + " on) is in its flash tier, whose weights stream at "
            + formatSi(system.memoryx.flashReadBytesPerS(), "B/s"));
    }
}

} // namespace

std::string planWeightStreaming(const std::vector<Unit>& units, const ModelGraph& graph, const SystemSpec& system,
    std::int64_t capacity, ExecutionPlan& plan)
{
    const std::int64_t sram = plan.usable.area() * capacity;
    const std::vector<std::int64_t> workingPerSample = workingBytesPerSample(units, graph, plan.usable.w);
    const std::vector<double> flashShare = placeInMemoryX(units, graph, system.memoryx, plan);
    const StreamingProfile profile
        = streamingProfile(units, workingPerSample, graph, system, sram, plan.numSystems, flashShare);
    const CheckpointChoice checkpoints = chooseCheckpointing(profile);
    if (checkpoints.maxMicroBatch < 1)
        return checkpoints.why;
    if (!checkpoints.why.empty())
        plan.notes.push_back(checkpoints.why);
    adoptMicroBatch(checkpoints, graph.config, plan);
    for (std::size_t u = 0; u < units.size(); ++u) {
        const std::int64_t bytesPerSample = checkpoints.keptBytesPerSample + workingPerSample[u];
        Region region = streamedRegion(units[u], graph, system, plan, bytesPerSample);
        StreamedLayer layer = streamedLayer(units, u, graph, checkpoints, profile, flashShare[u]);
        layer.region = int(plan.regions.size());
        layer.activationSramBytes = region.activationBytes;
        layer.maxMicroBatch = sram / std::max<std::int64_t>(1, bytesPerSample);
        plan.streamed.push_back(layer);
        plan.regions.push_back(std::move(region));
    }
    noteStreaming(units, graph, system, checkpoints, flashShare, plan);
    return {};
}

} // namespace waferscope::core::compiler

namespace waferscope::core {

double memoryxStateBytes(const ModelGraph& graph, const MemoryXSpec& memoryx)
{
    double total = 0.0;
    for (const Op& op : graph.ops)
        total += compiler::memoryxBytes(op, memoryx);
    return total;
}

} // namespace waferscope::core
