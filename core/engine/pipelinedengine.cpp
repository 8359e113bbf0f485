// Layer-pipelined training of a model that fits on the wafer: every op holds its region,
// samples flow forward through the stages and back, and all regions work at once on different
// samples. The slowest region sets the rate; the first sample also pays the pipeline's fill and
// the last its drain. With several systems, each runs its share of the batch and the weight
// gradients are reduced through SwarmX before the optimizer runs on each wafer.
#include "core/engine/enginedetail.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace waferscope::core::engine::detail {

Expected<RunResult> runPipelined(const Context& c)
{
    const ExecutionPlan& plan = c.plan;
    const ModelConfig& config = c.graph.config;
    const bool train = c.options.mode == RunKind::Train;
    const int systems = std::max(1, plan.numSystems);
    RunResult result;
    Metrics& m = result.metrics;
    const Expected<BatchSplit> batch = splitBatch(c, std::int64_t(std::max(1, plan.replicas)) * systems, m);
    if (!batch)
        return batch.error();
    const std::int64_t globalBatch = batch->global;
    const std::int64_t perSystem = batch->perSystem;
    const int replicas = std::max(1, plan.replicas);
    const std::int64_t perReplica = (perSystem + replicas - 1) / replicas;

    // Per-sample cycles of each region (forward + backward for training: the plan's figure is
    // forward 1 + backward 2 parts; eval keeps the forward third).
    const double share = train ? 1.0 : 1.0 / 3.0;
    double slowest = 0.0;
    int slowestRegion = -1;
    std::map<int, double> stageTime; // one sample through each stage, both directions
    for (int r = 0; r < int(plan.regions.size()); ++r) {
        const Region& region = plan.regions[std::size_t(r)];
        if (region.replica != 0)
            continue;
        const double cycles = region.computeCycles * share;
        if (cycles > slowest) {
            slowest = cycles;
            slowestRegion = r;
        }
        stageTime[region.stage] = std::max(stageTime[region.stage], cycles);
    }
    double fill = 0.0;
    for (const auto& [stage, cycles] : stageTime)
        fill += cycles;
    const double clock = c.clockHz;
    const double computeS = (double(perReplica - 1) * slowest + fill) / clock;
    // Data-parallel gradient reduction across systems, then the optimizer on the wafer (a few
    // SIMD operations per weight).
    const StreamPath path = streamPath(c.system, systems);
    double reduceS = 0.0;
    double gradientBytes = 0.0;
    if (train && systems > 1) {
        for (const Op& op : c.graph.ops)
            gradientBytes += double(op.gradientParams()) * config.weightBytes;
        reduceS = gradientBytes / path.bytesPerS + 2.0 * path.latencyS;
    }
    // Pipeline copies on one wafer add up their weight gradients first: each region's gradient
    // values (one per wavelet) flow down the chain of its copies, one strip apart, an add at each.
    double replicaReduceS = 0.0;
    if (train && replicas > 1) {
        double cycles = 0.0;
        for (const Region& region : plan.regions)
            if (region.replica == 0 && region.rect.area() > 0) {
                const double perPe = std::ceil(double(region.weightBytes) / 4.0 / double(region.rect.area()));
                cycles = std::max(cycles, perPe);
            }
        const double stride = double(plan.usable.h) / replicas;
        cycles += double(replicas - 1) * (stride * c.hop + c.calibration.reduceAddCycles);
        replicaReduceS = cycles / c.clockHz;
    }
    const double usablePes = double(plan.usable.area());
    const double optimizerS = train ? double(c.graph.gradientParams) * 8.0 / (c.simd * usablePes * clock) : 0.0;
    const double stepS = computeS + replicaReduceS + reduceS + optimizerS;

    m.numCsx = systems;
    m.numSystems = systems;
    m.batchPerSystem = perSystem;
    m.microBatch = perReplica;
    m.microBatchesPerStep = 1;
    m.stepTimeS = stepS;
    const double sequence = double(std::max<std::int64_t>(1, config.sequenceLength));
    m.tokensPerStep = double(globalBatch) * sequence;
    m.samplesPerS = double(globalBatch) / stepS;
    m.tokensPerS = m.tokensPerStep / stepS;
    m.peakFlopsPerS = c.system.wafer.peakFlopsPerS() * systems;
    m.linkBytesPerS = path.bytesPerS;
    m.linkBound = path.bound;
    m.streamedBytesPerStep = gradientBytes;
    double modelFlopsPerSample = 0.0;
    for (const Op& op : c.graph.ops) {
        const double density
            = op.params > 0 && isStreamedMatrix(op.kind) ? double(op.nonzeroParams) / double(op.params) : 1.0;
        modelFlopsPerSample
            += (op.fwdFlopsPerToken + (train ? op.bwdFlopsPerToken : 0.0)) * density * double(op.tokensPerSample);
    }
    m.modelFlopsPerStep = modelFlopsPerSample * double(globalBatch);
    m.hardwareFlopsPerStep = m.modelFlopsPerStep;
    if (train) {
        m.checkpointStrategy = toString(CheckpointStrategy::AllBlocks); // every activation stays in its stage
        m.checkpointEvery = 1;
    }

    for (int r = 0; r < int(plan.regions.size()); ++r) {
        const Region& region = plan.regions[std::size_t(r)];
        if (region.replica != 0)
            continue;
        const Op& op = c.graph.ops[std::size_t(region.op)];
        LayerMetrics layer;
        layer.name = region.opName;
        layer.kind = toString(op.kind);
        layer.region = r;
        layer.params = op.nonzeroParams;
        const double density
            = op.params > 0 && isStreamedMatrix(op.kind) ? double(op.nonzeroParams) / double(op.params) : 1.0;
        layer.flops = (op.fwdFlopsPerToken + (train ? op.bwdFlopsPerToken : 0.0)) * density * double(op.tokensPerSample)
            * double(globalBatch);
        // Every region is busy for its own cycles per sample and waits for the slowest.
        const double busyS = double(perReplica) * region.computeCycles * share / clock;
        layer.timeS = busyS;
        const double regionPeak = 2.0 * c.simd * double(std::max<std::int64_t>(1, region.rect.area())) * clock;
        layer.utilization = std::min(1.0, layer.flops / double(systems * replicas) / (regionPeak * stepS));
        layer.bound = r == slowestRegion ? Bound::Compute : Bound::Pipeline;
        m.layers.push_back(layer);
    }
    // The slowest region's time is the step's: give it the whole compute span for the bottleneck.
    for (LayerMetrics& layer : m.layers)
        if (layer.region == slowestRegion)
            layer.timeS = computeS;
    m.utilization.compute = std::min(1.0, m.modelFlopsPerStep / (m.peakFlopsPerS * stepS));
    m.utilization.swarmx = systems > 1 ? std::min(1.0, reduceS / stepS) : 0.0;
    m.utilization.io = m.utilization.swarmx;
    // The gradient reductions hold the step like a layer: on the wafer between pipeline copies
    // (fabric), and between systems through SwarmX (the stream path).
    const auto addReduction = [&](const char* name, double seconds, Bound bound) {
        if (seconds <= 0.0)
            return;
        LayerMetrics reduce;
        reduce.name = name;
        reduce.kind = "gradient_reduction";
        reduce.timeS = seconds;
        reduce.bound = bound;
        m.layers.push_back(reduce);
    };
    addReduction("gradient reduction across pipeline copies", replicaReduceS, Bound::Fabric);
    addReduction("gradient reduction across systems", reduceS, path.bound);
    m.utilization.fabric = std::min(1.0, replicaReduceS / stepS);
    if (replicaReduceS + reduceS > computeS)
        m.notes.push_back("reducing the weight gradients takes longer than the pipeline's compute");
    // Timeline: each region's forward and backward work per step, offset by its stage.
    const int shown = c.options.maxSteps;
    if (std::optional<Diagnostic> refused = reserveTimeline(result.timeline, 2 * m.layers.size() + 3, shown))
        return *refused;
    std::map<int, double> stageStart;
    double offset = 0.0;
    for (const auto& [stage, cycles] : stageTime) {
        stageStart[stage] = offset;
        offset += cycles / 3.0 / clock;
    }
    for (int s = 0; s < shown; ++s) {
        const double base = double(s) * stepS;
        for (std::size_t i = 0; i < m.layers.size(); ++i) {
            const LayerMetrics& layer = m.layers[i];
            if (layer.region < 0)
                continue;
            const Region& region = plan.regions[std::size_t(layer.region)];
            const double forwardS = double(perReplica) * region.computeCycles / 3.0 / clock;
            const double start = base + stageStart[region.stage];
            result.timeline.events.push_back({ LaneKind::Region, layer.region, Phase::Forward, int(i), s, 0, start,
                start + forwardS, 0.0, layer.flops / 3.0 });
            if (train) {
                const double backStart = base + computeS - stageStart[region.stage] - 2.0 * forwardS;
                result.timeline.events.push_back({ LaneKind::Region, layer.region, Phase::BackwardDelta, int(i), s, 0,
                    std::max(start + forwardS, backStart), std::max(start + forwardS, backStart) + 2.0 * forwardS, 0.0,
                    layer.flops * 2.0 / 3.0 });
            }
        }
        if (replicaReduceS > 0.0)
            result.timeline.events.push_back({ LaneKind::CsxCompute, 0, Phase::Reduce, -1, s, 0, base + computeS,
                base + computeS + replicaReduceS, 0.0, 0.0 });
        if (reduceS > 0.0)
            result.timeline.events.push_back({ LaneKind::SwarmX, 0, Phase::Reduce, -1, s, 0,
                base + computeS + replicaReduceS, base + computeS + replicaReduceS + reduceS, gradientBytes, 0.0 });
        if (optimizerS > 0.0)
            result.timeline.events.push_back({ LaneKind::CsxCompute, 0, Phase::OptimizerUpdate, -1, s, 0,
                base + stepS - optimizerS, base + stepS, 0.0, double(c.graph.nonzeroParams) * 8.0 });
        m.stepTimesS.push_back(stepS);
    }
    for (const TimelineEvent& event : result.timeline.events)
        result.timeline.span = std::max(result.timeline.span, event.end);
    finishMetrics(m, c);
    return result;
}

} // namespace waferscope::core::engine::detail
