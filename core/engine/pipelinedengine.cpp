// No header of its own: defines runPipelined, one of the engines of enginedetail.h.
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

namespace {

// How the batch flows through the pipeline: each system's share split over its pipeline copies,
// the slowest region (it sets the rate) and the stages a sample crosses to fill it.
struct PipelineShape {
    std::int64_t globalBatch = 0;
    std::int64_t perSystem = 0;
    int replicas = 1; // pipeline copies on each wafer
    std::int64_t perReplica = 0; // samples each copy runs per step
    double share = 1.0; // of a region's planned cycles per sample: all (train) or the forward third (eval)
    double slowestCycles = 0.0; // per sample
    int slowestRegion = -1;
    std::map<int, double> stageCycles; // one sample through each stage, both directions
    double computeS = 0.0; // the step's samples through the pipeline, fill and drain included
};

// Splits the batch over systems and copies and finds the slowest region and the fill. Errors when
// a system would get no sample.
Expected<PipelineShape> planPipeline(const Context& context, int systems, bool train, Metrics& metrics)
{
    const ExecutionPlan& plan = context.plan;
    const Expected<BatchSplit> batch = splitBatch(context, std::int64_t(std::max(1, plan.replicas)) * systems, metrics);
    if (!batch)
        return batch.error();
    PipelineShape shape;
    shape.globalBatch = batch->global;
    shape.perSystem = batch->perSystem;
    shape.replicas = std::max(1, plan.replicas);
    shape.perReplica = (shape.perSystem + shape.replicas - 1) / shape.replicas;
    // Per-sample cycles of each region (forward + backward for training: the plan's figure is
    // forward 1 + backward 2 parts; eval keeps the forward third).
    shape.share = train ? 1.0 : 1.0 / 3.0;
    for (int index = 0; index < int(plan.regions.size()); ++index) {
        const Region& region = plan.regions[std::size_t(index)];
        if (region.replica != 0)
            continue;
        const double cycles = region.computeCycles * shape.share;
        if (cycles > shape.slowestCycles) {
            shape.slowestCycles = cycles;
            shape.slowestRegion = index;
        }
        shape.stageCycles[region.stage] = std::max(shape.stageCycles[region.stage], cycles);
    }
    double fill = 0.0;
    for (const auto& [stage, cycles] : shape.stageCycles)
        fill += cycles;
    shape.computeS = (double(shape.perReplica - 1) * shape.slowestCycles + fill) / context.clockHz;
    return shape;
}

// What follows the pipeline's compute in a training step.
struct StepTail {
    double replicaReduceS = 0.0; // weight gradients added up across the copies on a wafer
    double reduceS = 0.0; // ... and across systems through SwarmX
    double gradientBytes = 0.0; // what each system sends for the latter
    double optimizerS = 0.0; // the optimizer on the wafer
};

// Data-parallel gradient reduction across systems, then the optimizer on the wafer (a few SIMD
// operations per weight). Pipeline copies on one wafer add up their weight gradients first: each
// region's gradient values (one per wavelet) flow down the chain of its copies, one strip apart,
// an add at each.
StepTail timeStepTail(
    const Context& context, const PipelineShape& shape, const StreamPath& path, int systems, bool train)
{
    const ExecutionPlan& plan = context.plan;
    StepTail tail;
    if (train && systems > 1) {
        for (const Op& op : context.graph.ops)
            tail.gradientBytes += double(op.gradientParams()) * context.graph.config.weightBytes;
        tail.reduceS = tail.gradientBytes / path.bytesPerS + 2.0 * path.latencyS;
    }
    if (train && shape.replicas > 1) {
        double cycles = 0.0;
        for (const Region& region : plan.regions)
            if (region.replica == 0 && region.rect.area() > 0) {
                const double perPe = std::ceil(double(region.weightBytes) / 4.0 / double(region.rect.area()));
                cycles = std::max(cycles, perPe);
            }
        const double stride = double(plan.usable.h) / shape.replicas;
        cycles += double(shape.replicas - 1) * (stride * context.hop + context.calibration.reduceAddCycles);
        tail.replicaReduceS = cycles / context.clockHz;
    }
    const double usablePes = double(plan.usable.area());
    tail.optimizerS
        = train ? double(context.graph.gradientParams) * 8.0 / (context.simd * usablePes * context.clockHz) : 0.0;
    return tail;
}

// A matrix op's non-zero share of its weights; 1 for the others.
double flopDensity(const Op& op)
{
    return op.params > 0 && isStreamedMatrix(op.kind) ? double(op.nonzeroParams) / double(op.params) : 1.0;
}

// Step time, throughput, the stream path and the step's FLOPs.
void fillThroughput(Metrics& metrics, const Context& context, const PipelineShape& shape, const StreamPath& path,
    const StepTail& tail, double stepS, int systems, bool train)
{
    metrics.numCsx = systems;
    metrics.numSystems = systems;
    metrics.batchPerSystem = shape.perSystem;
    metrics.microBatch = shape.perReplica;
    metrics.microBatchesPerStep = 1;
    metrics.stepTimeS = stepS;
    const double sequence = double(std::max<std::int64_t>(1, context.graph.config.sequenceLength));
    metrics.tokensPerStep = double(shape.globalBatch) * sequence;
    metrics.samplesPerS = double(shape.globalBatch) / stepS;
    metrics.tokensPerS = metrics.tokensPerStep / stepS;
    metrics.peakFlopsPerS = context.system.wafer.peakFlopsPerS() * systems;
    metrics.linkBytesPerS = path.bytesPerS;
    metrics.linkBound = path.bound;
    metrics.streamedBytesPerStep = tail.gradientBytes;
    double modelFlopsPerSample = 0.0;
    for (const Op& op : context.graph.ops)
        modelFlopsPerSample += (op.fwdFlopsPerToken + (train ? op.bwdFlopsPerToken : 0.0)) * flopDensity(op)
            * double(op.tokensPerSample);
    metrics.modelFlopsPerStep = modelFlopsPerSample * double(shape.globalBatch);
    metrics.hardwareFlopsPerStep = metrics.modelFlopsPerStep;
    if (train) {
        metrics.checkpointStrategy = CheckpointStrategy::AllBlocks; // every activation stays in its stage
        metrics.checkpointEvery = 1;
    }
}

// A layer per region of the first copy: busy for its own cycles per sample, compute bound if it
// is the slowest, else waiting for it (pipeline bound). The slowest region's time is the step's
// compute span, so that it holds the bottleneck.
void addRegionLayers(
    Metrics& metrics, const Context& context, const PipelineShape& shape, double stepS, int systems, bool train)
{
    const ExecutionPlan& plan = context.plan;
    for (int index = 0; index < int(plan.regions.size()); ++index) {
        const Region& region = plan.regions[std::size_t(index)];
        if (region.replica != 0)
            continue;
        const Op& op = context.graph.ops[std::size_t(region.op)];
        LayerMetrics layer;
        layer.name = region.opName;
        layer.kind = layerKindOf(op.kind);
        layer.region = index;
        layer.params = op.nonzeroParams;
        layer.flops = (op.fwdFlopsPerToken + (train ? op.bwdFlopsPerToken : 0.0)) * flopDensity(op)
            * double(op.tokensPerSample) * double(shape.globalBatch);
        const double busyS = double(shape.perReplica) * region.computeCycles * shape.share / context.clockHz;
        layer.timeS = busyS;
        const double regionPeak
            = 2.0 * context.simd * double(std::max<std::int64_t>(1, region.rect.area())) * context.clockHz;
        layer.utilization = std::min(1.0, layer.flops / double(systems * shape.replicas) / (regionPeak * stepS));
        layer.bound = index == shape.slowestRegion ? Bound::Compute : Bound::Pipeline;
        metrics.layers.push_back(layer);
    }
    for (LayerMetrics& layer : metrics.layers)
        if (layer.region == shape.slowestRegion)
            layer.timeS = shape.computeS;
}

// The gradient reductions hold the step like a layer: on the wafer between pipeline copies
// (fabric), and between systems through SwarmX (the stream path).
void addReductionLayers(Metrics& metrics, const StepTail& tail, const StreamPath& path)
{
    const auto addReduction = [&](const char* name, double seconds, Bound bound) {
        if (seconds <= 0.0)
            return;
        LayerMetrics reduce;
        reduce.name = name;
        reduce.kind = LayerKind::GradientReduction;
        reduce.timeS = seconds;
        reduce.bound = bound;
        metrics.layers.push_back(reduce);
    };
    addReduction("gradient reduction across pipeline copies", tail.replicaReduceS, Bound::Fabric);
    addReduction("gradient reduction across systems", tail.reduceS, path.bound);
}

// Each region's forward and backward work per step, offset by its stage, then the reductions and
// the optimizer; one step time per step shown.
void recordTimeline(RunResult& result, const Context& context, const PipelineShape& shape, const StepTail& tail,
    double stepS, bool train)
{
    const ExecutionPlan& plan = context.plan;
    Metrics& metrics = result.metrics;
    const double clock = context.clockHz;
    const double computeS = shape.computeS;
    std::map<int, double> stageStart;
    double offset = 0.0;
    for (const auto& [stage, cycles] : shape.stageCycles) {
        stageStart[stage] = offset;
        offset += cycles / 3.0 / clock;
    }
    for (int step = 0; step < context.options.maxSteps; ++step) {
        const double base = double(step) * stepS;
        for (std::size_t index = 0; index < metrics.layers.size(); ++index) {
            const LayerMetrics& layer = metrics.layers[index];
            if (layer.region < 0)
                continue;
            const Region& region = plan.regions[std::size_t(layer.region)];
            const double forwardS = double(shape.perReplica) * region.computeCycles / 3.0 / clock;
            const double start = base + stageStart[region.stage];
            result.timeline.events.push_back({ LaneKind::Region, layer.region, Phase::Forward, int(index), step, 0,
                start, start + forwardS, 0.0, layer.flops / 3.0 });
            if (train) {
                const double backStart = base + computeS - stageStart[region.stage] - 2.0 * forwardS;
                result.timeline.events.push_back({ LaneKind::Region, layer.region, Phase::BackwardDelta, int(index),
                    step, 0, std::max(start + forwardS, backStart),
                    std::max(start + forwardS, backStart) + 2.0 * forwardS, 0.0, layer.flops * 2.0 / 3.0 });
            }
        }
        if (tail.replicaReduceS > 0.0)
            result.timeline.events.push_back({ LaneKind::CsxCompute, 0, Phase::Reduce, -1, step, 0, base + computeS,
                base + computeS + tail.replicaReduceS, 0.0, 0.0 });
        if (tail.reduceS > 0.0)
            result.timeline.events.push_back(
                { LaneKind::SwarmX, 0, Phase::Reduce, -1, step, 0, base + computeS + tail.replicaReduceS,
                    base + computeS + tail.replicaReduceS + tail.reduceS, tail.gradientBytes, 0.0 });
        if (tail.optimizerS > 0.0)
            result.timeline.events.push_back({ LaneKind::CsxCompute, 0, Phase::OptimizerUpdate, -1, step, 0,
                base + stepS - tail.optimizerS, base + stepS, 0.0, double(context.graph.nonzeroParams) * 8.0 });
        metrics.stepTimesS.push_back(stepS);
    }
    for (const TimelineEvent& event : result.timeline.events)
        result.timeline.span = std::max(result.timeline.span, event.end);
}

} // namespace

Expected<RunResult> runPipelined(const Context& context)
{
    const bool train = context.options.mode == RunMode::Train;
    const int systems = std::max(1, context.plan.numSystems);
    RunResult result;
    Metrics& metrics = result.metrics;
    const Expected<PipelineShape> shape = planPipeline(context, systems, train, metrics);
    if (!shape)
        return shape.error();
    const StreamPath path = streamPath(context.system, systems);
    const StepTail tail = timeStepTail(context, *shape, path, systems, train);
    const double stepS = shape->computeS + tail.replicaReduceS + tail.reduceS + tail.optimizerS;

    fillThroughput(metrics, context, *shape, path, tail, stepS, systems, train);
    addRegionLayers(metrics, context, *shape, stepS, systems, train);
    metrics.utilization.compute = std::min(1.0, metrics.modelFlopsPerStep / (metrics.peakFlopsPerS * stepS));
    metrics.utilization.swarmx = systems > 1 ? std::min(1.0, tail.reduceS / stepS) : 0.0;
    metrics.utilization.io = metrics.utilization.swarmx;
    addReductionLayers(metrics, tail, path);
    metrics.utilization.fabric = std::min(1.0, tail.replicaReduceS / stepS);
    if (tail.replicaReduceS + tail.reduceS > shape->computeS)
        metrics.notes.push_back("reducing the weight gradients takes longer than the pipeline's compute");

    if (std::optional<Diagnostic> refused
        = reserveTimeline(result.timeline, 2 * metrics.layers.size() + 3, context.options.maxSteps))
        return *refused;
    recordTimeline(result, context, *shape, tail, stepS, train);
    finishMetrics(metrics, context);
    return result;
}

} // namespace waferscope::core::engine::detail
