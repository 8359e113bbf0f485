// Weight-streaming training and evaluation: one op at a time on the whole wafer, weights
// streamed from MemoryX through SwarmX to every system, gradients streamed back and reduced,
// the optimizer in MemoryX.
//
// Per step each system runs its share of the global batch in micro-batches. For each
// micro-batch: forward through every op (its weights streamed in), then backward in reverse
// (weights streamed in again; delta and weight-gradient GEMMs, plus the forward recomputed
// from the block's checkpoint), each op's gradients streamed out and reduced by the SwarmX
// tree on the way to MemoryX. After the last micro-batch MemoryX updates the op's weights.
//
// Coarse pipelining: an op's weights may stream in while the previous op computes (one op of
// prefetch); the op computes as its weights arrive, so it takes the longer of its compute and
// its stream. Fine pipelining: op l of the next step waits only for op l's optimizer update,
// so the one bubble is at the step boundary, where the first op waits for its own update.
#include "core/engine/enginedetail.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace waferscope::core::engine::detail {

namespace {

struct OpCost {
    double forwardS = 0.0; // one micro-batch
    double backwardS = 0.0;
    double forwardFabricS = 0.0; // the on-wafer link part of the above
    double backwardFabricS = 0.0;
    double forwardFlops = 0.0; // model FLOPs of one micro-batch, non-zero weights only
    double backwardFlops = 0.0; // delta and weight-gradient GEMMs (train)
    double recomputeFlops = 0.0; // the forward again, from the block's checkpoint (train)
    bool fabricBound = false;
};

// The cost of region `r` for a micro-batch of `samples`.
OpCost costOp(const Context& c, const Region& region, std::int64_t samples, bool train, bool recomputed)
{
    const Op& op = c.graph.ops[std::size_t(region.op)];
    const int rows = c.plan.usable.h;
    const int cols = c.plan.usable.w;
    const double pes = double(rows) * double(cols);
    const double tokens = double(samples) * double(op.tokensPerSample);
    const double peak = 2.0 * c.simd * pes; // FLOPs per cycle
    OpCost cost;
    double fwdCycles = 0.0;
    double fwdFabric = 0.0;
    double density = 1.0;
    if (isStreamedMatrix(op.kind)) {
        density = op.params > 0 ? double(op.nonzeroParams) / double(op.params) : 1.0;
        const StreamedGemmCost gemm
            = costStreamedGemm({ op.outFeatures, op.inFeatures, std::int64_t(samples) * op.tokensPerSample, density },
                rows, cols, c.simd, c.calibration, c.hop);
        fwdCycles = gemm.cycles;
        fwdFabric = gemm.fabricCycles;
        cost.fabricBound = gemm.bound == Bound::Fabric;
    } else {
        // Attention, experts, lookups: their FLOPs at the wafer's SIMD rate, plus one crossing of
        // the wafer for the operands and one for the reductions.
        fwdCycles = op.fwdFlopsPerToken * tokens / peak + double(rows + cols) * c.hop;
    }
    double bwdCycles = fwdCycles * (op.fwdFlopsPerToken > 0.0 ? op.bwdFlopsPerToken / op.fwdFlopsPerToken : 2.0);
    // Elementwise ops fused into the region: one SIMD lane per element operation.
    double fusedFwd = 0.0;
    double fusedBwd = 0.0;
    for (int index : region.fused) {
        const Op& fused = c.graph.ops[std::size_t(index)];
        fusedFwd += fused.fwdFlopsPerToken * double(samples) * double(fused.tokensPerSample);
        fusedBwd += fused.bwdFlopsPerToken * double(samples) * double(fused.tokensPerSample);
    }
    fwdCycles += fusedFwd / (c.simd * pes);
    bwdCycles += fusedBwd / (c.simd * pes);
    const double opDensity = isStreamedMatrix(op.kind) ? density : 1.0;
    const double fwdFlops = (op.fwdFlopsPerToken * tokens) * opDensity + fusedFwd;
    const double bwdFlops = (op.bwdFlopsPerToken * tokens) * opDensity + fusedBwd;
    cost.forwardS = fwdCycles / c.clockHz;
    cost.forwardFabricS = fwdFabric / c.clockHz;
    cost.forwardFlops = fwdFlops;
    if (train) {
        // Backward recomputes the forward from the block's checkpoint first; with a checkpoint
        // only every k blocks, the block's output is rebuilt from the segment's once more.
        const double forwards = recomputed ? 2.0 : 1.0;
        cost.backwardS = (bwdCycles + forwards * fwdCycles) / c.clockHz;
        cost.backwardFabricS = (2.0 + forwards) * fwdFabric / c.clockHz;
        cost.backwardFlops = bwdFlops;
        cost.recomputeFlops = forwards * fwdFlops;
    }
    return cost;
}

struct Item {
    int layer = 0;
    bool backward = false;
    int micro = 0;
    std::int64_t samples = 0;
};

} // namespace

Expected<RunResult> runWeightStreaming(const Context& c)
{
    const ExecutionPlan& plan = c.plan;
    const ModelConfig& config = c.graph.config;
    const bool train = c.options.mode == RunKind::Train;
    const int systems = std::max(1, plan.numSystems);
    RunResult result;
    Metrics& m = result.metrics;
    const Expected<BatchSplit> batch = splitBatch(c, plan.microBatch * systems, m);
    if (!batch)
        return batch.error();
    const std::int64_t globalBatch = batch->global;
    const std::int64_t perSystem = batch->perSystem;
    const std::int64_t micro = std::max<std::int64_t>(1, std::min(plan.microBatch, perSystem));
    const std::int64_t microCount = (perSystem + micro - 1) / micro;
    if (plan.maxMicroBatch > 0 && plan.maxMicroBatch < perSystem && microCount > 1)
        m.notes.push_back("SRAM holds the activations of " + std::to_string(plan.maxMicroBatch)
            + " samples at most: " + std::to_string(perSystem) + " samples per system run as "
            + std::to_string(microCount) + " micro-batches, each streaming every weight again");

    const StreamPath path = streamPath(c.system, systems);
    const int layers = int(plan.streamed.size());
    // Costs for the full micro-batch and for the last, possibly smaller, one.
    const std::int64_t lastMicro = perSystem - (microCount - 1) * micro;
    const auto count = std::size_t(layers);
    std::vector<OpCost> full(count);
    std::vector<OpCost> tail(count);
    std::vector<double> optimizerS(count);
    for (int l = 0; l < layers; ++l) {
        const Region& region = plan.regions[std::size_t(plan.streamed[std::size_t(l)].region)];
        const bool recomputed = plan.streamed[std::size_t(l)].recomputed;
        full[std::size_t(l)] = costOp(c, region, micro, train, recomputed);
        tail[std::size_t(l)] = costOp(c, region, lastMicro, train, recomputed);
        std::int64_t params = c.graph.ops[std::size_t(region.op)].nonzeroParams;
        std::int64_t updated = c.graph.ops[std::size_t(region.op)].gradientParams();
        for (int index : region.fused) {
            params += c.graph.ops[std::size_t(index)].nonzeroParams;
            updated += c.graph.ops[std::size_t(index)].gradientParams();
        }
        optimizerS[std::size_t(l)]
            = c.system.memoryx.optimizerParamsPerS > 0.0 ? double(updated) / c.system.memoryx.optimizerParamsPerS : 0.0;
        LayerMetrics layer;
        layer.region = plan.streamed[std::size_t(l)].region;
        layer.name = region.opName;
        layer.kind = toString(c.graph.ops[std::size_t(region.op)].kind);
        layer.params = params;
        m.layers.push_back(layer);
    }

    // One step's work, in order. A forward item emits at most six events (three stream-in
    // lanes, compute, a checkpoint out on two lanes), a backward one ten (stream-in, a checkpoint
    // in on two lanes, two compute phases, gradients out on two lanes, the update).
    const int shown = c.options.maxSteps;
    const auto itemCount = std::size_t(microCount) * std::size_t(layers) * (train ? 2 : 1);
    if (std::optional<Diagnostic> refused = reserveTimeline(result.timeline, itemCount * (train ? 8 : 4), shown))
        return *refused;
    std::vector<Item> items;
    items.reserve(itemCount);
    for (std::int64_t mb = 0; mb < microCount; ++mb) {
        const std::int64_t samples = mb + 1 == microCount ? lastMicro : micro;
        for (int l = 0; l < layers; ++l)
            items.push_back({ l, false, int(mb), samples });
        if (train)
            for (int l = layers - 1; l >= 0; --l)
                items.push_back({ l, true, int(mb), samples });
    }

    const int simulated = std::max(2, shown); // the last step is the steady state
    std::vector<double> optimizerDone(count, 0.0);
    std::vector<double> layerTime(count, 0.0);
    std::vector<std::map<Bound, double>> layerBoundTime(count); // time per bound
    std::vector<double> layerFlops(count, 0.0);
    std::vector<double> layerModelFlops(count, 0.0);
    double linkInFree = 0.0;
    double linkOutFree = 0.0;
    double computeFree = 0.0;
    double optimizerFree = 0.0;
    double previousComputeStart = 0.0;
    double stepEnd = 0.0;
    std::vector<double> stepTimes;
    double bytesIn = 0.0;
    double bytesOut = 0.0;
    double optimizerBusy = 0.0;
    double fabricBusy = 0.0;
    double checkpointBytes = 0.0; // to MemoryX and back, one system, steady step
    double checkpointWritesDone = 0.0;
    const double checkpointBytesPerS = c.system.ownDataBytesPerS(systems);
    const auto emit = [&](int step, LaneKind lane, Phase phase, const Item& item, double start, double end,
                          double bytes, double flops) {
        if (step < shown && end > start)
            result.timeline.events.push_back(
                { lane, 0, phase, item.layer, step, item.micro, start, end, bytes, flops });
    };
    for (int step = 0; step < simulated; ++step) {
        const bool steady = step + 1 == simulated;
        const double stepStart = stepEnd;
        for (const Item& item : items) {
            const std::size_t l = std::size_t(item.layer);
            const OpCost& cost = item.micro + 1 == microCount ? tail[l] : full[l];
            const StreamedLayer& streamed = plan.streamed[l];
            // A recomputed layer's weights come in once more for the forward run again in backward.
            const double inBytes
                = double(item.backward ? streamed.bytesInBackward + (streamed.recomputed ? streamed.bytesInForward : 0)
                                       : streamed.bytesInForward);
            // Prefetch depth one: the stream starts once the op before has started computing,
            // and not before this op's weights were updated (first forward of a step).
            double streamStart = std::max(linkInFree, previousComputeStart);
            double optimizerWait = 0.0;
            if (!item.backward && item.micro == 0 && step > 0) {
                optimizerWait = std::max(0.0, optimizerDone[l] - streamStart);
                streamStart += optimizerWait;
            }
            const double streamS = inBytes / path.bytesPerS;
            double streamEnd = streamStart + streamS;
            // Before its backward, a stage reads its input back from MemoryX (memoryx checkpoints),
            // once the forward's writes are out.
            const double checkpointIn
                = item.backward ? double(streamed.checkpointInBytesPerSample) * double(item.samples) : 0.0;
            if (checkpointIn > 0.0) {
                const double readStart = std::max(streamEnd, checkpointWritesDone);
                const double readEnd = readStart + checkpointIn / checkpointBytesPerS;
                emit(step, LaneKind::MemoryX, Phase::CheckpointIn, item, readStart, readEnd, checkpointIn, 0.0);
                emit(step, LaneKind::CsxIo, Phase::CheckpointIn, item, readStart + path.latencyS,
                    readEnd + path.latencyS, checkpointIn, 0.0);
                streamEnd = readEnd;
                if (steady)
                    checkpointBytes += checkpointIn;
            }
            linkInFree = streamEnd;
            const double computeS = item.backward ? cost.backwardS : cost.forwardS;
            const double computeStart = std::max(computeFree, streamStart + path.latencyS);
            const double computeEnd = std::max(computeStart + computeS, streamEnd + path.latencyS);
            const double flops = item.backward ? cost.backwardFlops + cost.recomputeFlops : cost.forwardFlops;
            const double modelFlops = item.backward ? cost.backwardFlops : cost.forwardFlops;
            emit(step, LaneKind::MemoryX, Phase::StreamIn, item, streamStart, streamEnd, inBytes, 0.0);
            emit(step, LaneKind::SwarmX, Phase::StreamIn, item, streamStart + c.system.swarmx.levelLatencyS,
                streamEnd + path.latencyS, inBytes, 0.0);
            emit(step, LaneKind::CsxIo, Phase::StreamIn, item, streamStart + path.latencyS, streamEnd + path.latencyS,
                inBytes, 0.0);
            if (!item.backward) {
                emit(step, LaneKind::CsxCompute, Phase::Forward, item, computeStart, computeEnd, 0.0, flops);
            } else {
                // Recompute and delta first, then the weight gradient (half the backward GEMMs).
                const double share = flops > 0.0 ? (cost.recomputeFlops + cost.backwardFlops / 2.0) / flops : 0.5;
                const double mid = computeStart + (computeEnd - computeStart) * share;
                emit(step, LaneKind::CsxCompute, Phase::BackwardDelta, item, computeStart, mid, 0.0, flops * share);
                emit(step, LaneKind::CsxCompute, Phase::BackwardGradient, item, mid, computeEnd, 0.0,
                    flops * (1.0 - share));
            }
            if (steady) {
                const double held = computeEnd - std::max(computeFree, stepStart);
                layerTime[l] += held;
                // Holding the wafer longer than its compute (beyond a tenth, for the crossing
                // latencies): the stream path bound it (or MemoryX's optimizer, when most of the
                // wait was for the op's update); otherwise the wafer (its FMACs, or its links when
                // the partial-sum chains are the longer part).
                const double stall = std::max(0.0, held - computeS);
                const Bound bound = stall > 0.1 * held ? (optimizerWait > 0.5 * stall ? Bound::MemoryX : path.bound)
                    : cost.fabricBound                 ? Bound::Fabric
                                                       : Bound::Compute;
                layerBoundTime[l][bound] += held;
                result.metrics.boundTimeS[bound] += held;
                layerFlops[l] += flops;
                layerModelFlops[l] += modelFlops;
                bytesIn += inBytes;
                fabricBusy += item.backward ? cost.backwardFabricS : cost.forwardFabricS;
            }
            previousComputeStart = computeStart;
            computeFree = computeEnd;
            if (!item.backward) {
                // memoryx checkpoints: a stage's output leaves for MemoryX when the stage is done.
                const double checkpointOut = double(streamed.checkpointOutBytesPerSample) * double(item.samples);
                if (checkpointOut > 0.0) {
                    const double writeStart = std::max(computeEnd, linkOutFree);
                    const double writeEnd = writeStart + checkpointOut / checkpointBytesPerS;
                    linkOutFree = writeEnd;
                    checkpointWritesDone = writeEnd + path.latencyS;
                    emit(step, LaneKind::CsxIo, Phase::CheckpointOut, item, writeStart, writeEnd, checkpointOut, 0.0);
                    emit(step, LaneKind::MemoryX, Phase::CheckpointOut, item, writeStart + path.latencyS,
                        writeEnd + path.latencyS, checkpointOut, 0.0);
                    if (steady)
                        checkpointBytes += checkpointOut;
                }
                continue;
            }
            // Gradients out through the SwarmX reduction tree to MemoryX.
            const double outBytes = double(streamed.bytesOutGradients);
            const double outStart = std::max(computeEnd, linkOutFree);
            const double outEnd = outStart + outBytes / path.bytesPerS;
            linkOutFree = outEnd;
            emit(step, LaneKind::CsxIo, Phase::GradientOut, item, outStart, outEnd, outBytes, 0.0);
            emit(step, LaneKind::SwarmX, Phase::Reduce, item, outStart + c.system.swarmx.levelLatencyS,
                outEnd + path.latencyS, outBytes * (systems > 1 ? 1.0 : 0.0), outBytes / 2.0 * (systems - 1));
            if (steady)
                bytesOut += outBytes;
            if (item.micro + 1 == microCount) {
                const double updateStart = std::max(outEnd + path.latencyS, optimizerFree);
                const double updateEnd = updateStart + optimizerS[l];
                optimizerFree = updateEnd;
                optimizerDone[l] = updateEnd;
                emit(step, LaneKind::MemoryX, Phase::OptimizerUpdate, item, updateStart, updateEnd, 0.0,
                    double(m.layers[l].params) * 10.0);
                if (steady)
                    optimizerBusy += optimizerS[l];
            }
        }
        // The step ends when the wafer is done and, for training, the last update is in.
        stepEnd = std::max(computeFree, train ? optimizerFree : 0.0);
        stepTimes.push_back(stepEnd - stepStart);
    }
    for (const TimelineEvent& event : result.timeline.events)
        result.timeline.span = std::max(result.timeline.span, event.end);

    m.stepTimesS.assign(stepTimes.begin(), stepTimes.begin() + shown);
    m.stepTimeS = stepTimes.back();
    m.numCsx = systems;
    m.numSystems = systems;
    m.batchPerSystem = perSystem;
    m.microBatch = micro;
    m.microBatchesPerStep = microCount;
    const double sequence = double(std::max<std::int64_t>(1, config.sequenceLength));
    m.tokensPerStep = double(globalBatch) * sequence;
    m.samplesPerS = double(globalBatch) / m.stepTimeS;
    m.tokensPerS = m.tokensPerStep / m.stepTimeS;
    const double peakPerSystem = c.system.wafer.peakFlopsPerS();
    m.peakFlopsPerS = peakPerSystem * systems;
    m.linkBytesPerS = path.bytesPerS;
    m.linkBound = path.bound;
    m.streamedBytesPerStep = bytesIn + bytesOut;
    double modelFlops = 0.0;
    double hardwareFlops = 0.0;
    for (int l = 0; l < layers; ++l) {
        LayerMetrics& layer = m.layers[std::size_t(l)];
        layer.timeS = layerTime[std::size_t(l)];
        layer.flops = layerModelFlops[std::size_t(l)] * systems;
        layer.utilization
            = layer.timeS > 0.0 ? std::min(1.0, layerFlops[std::size_t(l)] / (peakPerSystem * layer.timeS)) : 0.0;
        double most = -1.0;
        for (const auto& [bound, time] : layerBoundTime[std::size_t(l)])
            if (time > most) {
                most = time;
                layer.bound = bound;
            }
        modelFlops += layerModelFlops[std::size_t(l)];
        hardwareFlops += layerFlops[std::size_t(l)];
    }
    m.modelFlopsPerStep = modelFlops * systems;
    m.hardwareFlopsPerStep = hardwareFlops * systems;
    if (train) {
        m.checkpointStrategy = toString(plan.checkpointStrategy);
        m.checkpointEvery = plan.checkpointEvery;
        m.recomputeFlopsPerStep = m.hardwareFlopsPerStep - m.modelFlopsPerStep;
        m.checkpointBytesPerStep = checkpointBytes * systems;
    }
    m.utilization.compute = std::min(1.0, hardwareFlops / (peakPerSystem * m.stepTimeS));
    m.utilization.fabric = std::min(1.0, fabricBusy / m.stepTimeS);
    m.utilization.io
        = std::min(1.0, (std::max(bytesIn, bytesOut) + checkpointBytes / 2.0) / (c.system.ioBytesPerS * m.stepTimeS));
    m.utilization.swarmx = c.system.swarmx.linkBytesPerS > 0.0
        ? std::min(1.0, std::max(bytesIn, bytesOut) / (c.system.swarmx.linkBytesPerS * m.stepTimeS))
        : 0.0;
    const double memoryxStream = c.system.memoryx.bandwidthBytesPerS > 0.0
        ? (std::max(bytesIn, bytesOut) + checkpointBytes * systems / 2.0) / c.system.memoryx.bandwidthBytesPerS
        : 0.0;
    m.utilization.memoryx = std::min(1.0, std::max(memoryxStream, optimizerBusy) / m.stepTimeS);
    finishMetrics(m, c);
    return result;
}

} // namespace waferscope::core::engine::detail
