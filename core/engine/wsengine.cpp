// No header of its own: defines runWeightStreaming, one of the engines of enginedetail.h.
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
#include "core/common/units.h"
#include "core/engine/streamingsimulation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::core::engine::detail {

namespace {

// The cost of `region` on the whole usable fabric for a micro-batch of `samples`.
OpCost costOp(const Context& context, const Region& region, std::int64_t samples, bool train, bool recomputed)
{
    const Op& op = context.graph.ops[std::size_t(region.op)];
    const int rows = context.plan.usable.h;
    const int cols = context.plan.usable.w;
    const double pes = double(rows) * double(cols);
    const double tokens = double(samples) * double(op.tokensPerSample);
    const double peak = 2.0 * context.simd * pes; // FLOPs per cycle
    OpCost cost;
    double fwdCycles = 0.0;
    double fwdFabric = 0.0;
    double density = 1.0;
    if (isStreamedMatrix(op.kind)) {
        density = op.params > 0 ? double(op.nonzeroParams) / double(op.params) : 1.0;
        const StreamedGemmCost gemm
            = costStreamedGemm({ op.outFeatures, op.inFeatures, std::int64_t(samples) * op.tokensPerSample, density },
                rows, cols, context.simd, context.calibration, context.hop);
        fwdCycles = gemm.cycles;
        fwdFabric = gemm.fabricCycles;
        cost.fabricBound = gemm.bound == Bound::Fabric;
    } else {
        // Attention, experts, lookups: their FLOPs at the wafer's SIMD rate, plus one crossing of
        // the wafer for the operands and one for the reductions.
        fwdCycles = op.fwdFlopsPerToken * tokens / peak + double(rows + cols) * context.hop;
    }
    double bwdCycles = fwdCycles * (op.fwdFlopsPerToken > 0.0 ? op.bwdFlopsPerToken / op.fwdFlopsPerToken : 2.0);
    // Elementwise ops fused into the region: one SIMD lane per element operation.
    double fusedFwd = 0.0;
    double fusedBwd = 0.0;
    for (int index : region.fused) {
        const Op& fused = context.graph.ops[std::size_t(index)];
        fusedFwd += fused.fwdFlopsPerToken * double(samples) * double(fused.tokensPerSample);
        fusedBwd += fused.bwdFlopsPerToken * double(samples) * double(fused.tokensPerSample);
    }
    fwdCycles += fusedFwd / (context.simd * pes);
    bwdCycles += fusedBwd / (context.simd * pes);
    const double opDensity = isStreamedMatrix(op.kind) ? density : 1.0;
    const double fwdFlops = (op.fwdFlopsPerToken * tokens) * opDensity + fusedFwd;
    const double bwdFlops = (op.bwdFlopsPerToken * tokens) * opDensity + fusedBwd;
    cost.forwardS = fwdCycles / context.clockHz;
    cost.forwardFabricS = fwdFabric / context.clockHz;
    cost.forwardFlops = fwdFlops;
    if (train) {
        // Backward recomputes the forward from the block's checkpoint first; with a checkpoint
        // only every k blocks, the block's output is rebuilt from the segment's once more.
        const double forwards = recomputed ? 2.0 : 1.0;
        cost.backwardS = (bwdCycles + forwards * fwdCycles) / context.clockHz;
        cost.backwardFabricS = (2.0 + forwards) * fwdFabric / context.clockHz;
        cost.backwardFlops = bwdFlops;
        cost.recomputeFlops = forwards * fwdFlops;
    }
    return cost;
}

// Splits the batch over the systems and each share into micro-batches of the plan's size (at
// most the share); notes when SRAM forces several. Errors when a system would get no sample.
Expected<MicroBatches> planMicroBatches(const Context& context, int systems, Metrics& metrics)
{
    const ExecutionPlan& plan = context.plan;
    const Expected<BatchSplit> batch = splitBatch(context, plan.microBatch * systems, metrics);
    if (!batch)
        return batch.error();
    MicroBatches batches;
    batches.globalBatch = batch->global;
    batches.perSystem = batch->perSystem;
    batches.size = std::max<std::int64_t>(1, std::min(plan.microBatch, batches.perSystem));
    batches.count = (batches.perSystem + batches.size - 1) / batches.size;
    if (plan.maxMicroBatch > 0 && plan.maxMicroBatch < batches.perSystem && batches.count > 1)
        metrics.notes.push_back("SRAM holds the activations of " + std::to_string(plan.maxMicroBatch)
            + " samples at most: " + std::to_string(batches.perSystem) + " samples per system run as "
            + std::to_string(batches.count) + " micro-batches, each streaming every weight again");
    batches.lastSize = batches.perSystem - (batches.count - 1) * batches.size;
    return batches;
}

// Costs every streamed layer and adds its LayerMetrics (name, kind, region, non-zero params) to
// `layers`, in the plan's order.
LayerCosts costLayers(
    const Context& context, const MicroBatches& batches, bool train, std::vector<LayerMetrics>& layers)
{
    const ExecutionPlan& plan = context.plan;
    const std::size_t count = plan.streamed.size();
    LayerCosts costs { std::vector<OpCost>(count), std::vector<OpCost>(count), std::vector<double>(count) };
    for (std::size_t index = 0; index < count; ++index) {
        const StreamedLayer& streamed = plan.streamed[index];
        const Region& region = plan.regions[std::size_t(streamed.region)];
        costs.full[index] = costOp(context, region, batches.size, train, streamed.recomputed);
        costs.last[index] = costOp(context, region, batches.lastSize, train, streamed.recomputed);
        std::int64_t params = context.graph.ops[std::size_t(region.op)].nonzeroParams;
        std::int64_t updated = context.graph.ops[std::size_t(region.op)].gradientParams();
        for (int fused : region.fused) {
            params += context.graph.ops[std::size_t(fused)].nonzeroParams;
            updated += context.graph.ops[std::size_t(fused)].gradientParams();
        }
        const double optimizerRate = context.system.memoryx.optimizerParamsPerS;
        costs.optimizerS[index] = optimizerRate > 0.0 ? double(updated) / optimizerRate : 0.0;
        LayerMetrics layer;
        layer.region = streamed.region;
        layer.name = region.opName;
        layer.kind = layerKindOf(context.graph.ops[std::size_t(region.op)].kind);
        layer.params = params;
        layers.push_back(layer);
    }
    return costs;
}

// One step's work in order: per micro-batch, forward through every layer, then (training)
// backward from the last layer to the first.
std::vector<StreamItem> orderItems(const MicroBatches& batches, int layers, bool train)
{
    std::vector<StreamItem> items;
    items.reserve(std::size_t(batches.count) * std::size_t(layers) * (train ? 2 : 1));
    for (std::int64_t micro = 0; micro < batches.count; ++micro) {
        const std::int64_t samples = micro + 1 == batches.count ? batches.lastSize : batches.size;
        for (int layer = 0; layer < layers; ++layer)
            items.push_back({ layer, false, int(micro), samples });
        if (train)
            for (int layer = layers - 1; layer >= 0; --layer)
                items.push_back({ layer, true, int(micro), samples });
    }
    return items;
}

// The events one step records (StreamingSimulation::emit, which drops those of no duration): for
// each micro-batch and layer, forward, the weights' stream-in on MemoryX (one event per tier it
// reads from), SwarmX and CS-X I/O, the compute and a checkpoint written out on two lanes; in
// training, backward, the checkpoint read back on two lanes, the stream-in again, two compute
// phases, the gradients out and their reduction, and once per step the layer's update.
std::size_t eventsPerStep(const ExecutionPlan& plan, const MicroBatches& batches, bool train)
{
    const auto streamIn = [](std::int64_t bytes, double flashShare) {
        return bytes > 0 ? (flashShare < 1.0 ? 1 : 0) + (flashShare > 0.0 ? 1 : 0) + 1 : 0; // MemoryX tiers, I/O
    };
    std::size_t perMicroBatch = 0;
    std::size_t perStep = 0;
    for (const StreamedLayer& layer : plan.streamed) {
        perMicroBatch += std::size_t(
            streamIn(layer.bytesInForward, layer.flashShare) + 2 + (layer.checkpointOutBytesPerSample > 0 ? 2 : 0));
        if (!train)
            continue;
        const std::int64_t backwardBytes = layer.bytesInBackward + (layer.recomputed ? layer.bytesInForward : 0);
        const bool checkpointIn = layer.checkpointInBytesPerSample > 0;
        perMicroBatch += std::size_t(streamIn(backwardBytes, layer.flashShare) + (checkpointIn ? 2 : 0)
            + (checkpointIn && backwardBytes == 0 ? 1 : 0) + 1 + 2 + (layer.bytesOutGradients > 0 ? 1 : 0) + 1);
        ++perStep;
    }
    return perMicroBatch * std::size_t(batches.count) + perStep;
}

// Step time, throughput and the stream path of the run.
void fillThroughput(Metrics& metrics, const Context& context, const MicroBatches& batches,
    const std::vector<double>& stepTimes, const StreamPath& path, int systems)
{
    metrics.stepTimesS.assign(stepTimes.begin(), stepTimes.begin() + context.options.maxSteps);
    metrics.stepTimeS = stepTimes.back();
    metrics.numCsx = systems;
    metrics.numSystems = systems;
    metrics.batchPerSystem = batches.perSystem;
    metrics.microBatch = batches.size;
    metrics.microBatchesPerStep = batches.count;
    const double sequence = double(std::max<std::int64_t>(1, context.graph.config.sequenceLength));
    metrics.tokensPerStep = double(batches.globalBatch) * sequence;
    metrics.samplesPerS = double(batches.globalBatch) / metrics.stepTimeS;
    metrics.tokensPerS = metrics.tokensPerStep / metrics.stepTimeS;
    metrics.peakFlopsPerS = context.system.wafer.peakFlopsPerS() * systems;
    metrics.linkBytesPerS = path.bytesPerS;
    metrics.linkBound = path.bound;
    metrics.flashLinkBytesPerS = path.flashBytesPerS;
}

// Each layer's time, FLOPs, utilization and bound (the one that held it longest) from the
// steady step, and the step's model and hardware FLOPs (all systems); returns the hardware FLOPs
// of one system.
double fillLayers(Metrics& metrics, const Context& context, const SteadyTotals& totals, int systems)
{
    const double peakPerSystem = context.system.wafer.peakFlopsPerS();
    double modelFlops = 0.0;
    double hardwareFlops = 0.0;
    for (std::size_t index = 0; index < metrics.layers.size(); ++index) {
        LayerMetrics& layer = metrics.layers[index];
        layer.timeS = totals.layerTime[index];
        layer.flops = totals.layerModelFlops[index] * systems;
        layer.utilization
            = layer.timeS > 0.0 ? std::min(1.0, totals.layerFlops[index] / (peakPerSystem * layer.timeS)) : 0.0;
        double most = -1.0;
        for (const auto& [bound, time] : totals.layerBoundTime[index])
            if (time > most) {
                most = time;
                layer.bound = bound;
            }
        modelFlops += totals.layerModelFlops[index];
        hardwareFlops += totals.layerFlops[index];
    }
    metrics.modelFlopsPerStep = modelFlops * systems;
    metrics.hardwareFlopsPerStep = hardwareFlops * systems;
    return hardwareFlops;
}

// The busy share of the wafer, its links, the CS-X I/O, SwarmX and MemoryX over the steady step.
void fillUtilization(
    Metrics& metrics, const Context& context, const SteadyTotals& totals, double hardwareFlops, int systems)
{
    const SystemSpec& system = context.system;
    const double stepS = metrics.stepTimeS;
    const double streamed = std::max(totals.bytesIn, totals.bytesOut);
    metrics.utilization.compute = std::min(1.0, hardwareFlops / (system.wafer.peakFlopsPerS() * stepS));
    metrics.utilization.fabric = std::min(1.0, totals.fabricBusy / stepS);
    metrics.utilization.io = std::min(1.0, (streamed + totals.checkpointBytes / 2.0) / (system.ioBytesPerS * stepS));
    metrics.utilization.swarmx
        = system.swarmx.linkBytesPerS > 0.0 ? std::min(1.0, streamed / (system.swarmx.linkBytesPerS * stepS)) : 0.0;
    // MemoryX reads each tier at its own rate; gradients and checkpoints go to its DRAM.
    const double dramRate = system.memoryx.dramReadBytesPerS();
    const double flashRate = system.memoryx.flashReadBytesPerS();
    const double readS = dramRate > 0.0 && flashRate > 0.0
        ? (totals.bytesIn - totals.flashBytesIn) / dramRate + totals.flashBytesIn / flashRate
        : 0.0;
    const double memoryxStream = dramRate > 0.0
        ? std::max(readS, totals.bytesOut / dramRate) + totals.checkpointBytes * systems / 2.0 / dramRate
        : 0.0;
    metrics.utilization.memoryx = std::min(1.0, std::max(memoryxStream, totals.optimizerBusy) / stepS);
}

} // namespace

Expected<RunResult> runWeightStreaming(const Context& context)
{
    const ExecutionPlan& plan = context.plan;
    const bool train = context.options.mode == RunMode::Train;
    const int systems = std::max(1, plan.numSystems);
    RunResult result;
    Metrics& metrics = result.metrics;
    const Expected<MicroBatches> batches = planMicroBatches(context, systems, metrics);
    if (!batches)
        return batches.error();
    const int layers = int(plan.streamed.size());
    const LayerCosts costs = costLayers(context, *batches, train, metrics.layers);

    const int shown = context.options.maxSteps;
    if (std::optional<Diagnostic> refused
        = reserveTimeline(result.timeline, eventsPerStep(plan, *batches, train), shown))
        return *refused;
    const std::vector<StreamItem> items = orderItems(*batches, layers, train);

    StreamingSimulation simulation(context, *batches, costs, systems, result);
    const int simulated = std::max(2, shown); // the last step is the steady state
    std::vector<double> stepTimes;
    for (int step = 0; step < simulated; ++step) {
        stepTimes.push_back(simulation.runStep(step, step + 1 == simulated, items));
        if (simulation.cancelled())
            return Diagnostic { "<run>", 0, 0, "cancelled", Diagnostic::Kind::Internal };
    }
    for (const TimelineEvent& event : result.timeline.events)
        result.timeline.span = std::max(result.timeline.span, event.end);

    const SteadyTotals& totals = simulation.totals();
    fillThroughput(metrics, context, *batches, stepTimes, simulation.path(), systems);
    metrics.streamedBytesPerStep = totals.bytesIn + totals.bytesOut;
    metrics.flashStreamedBytesPerStep = totals.flashBytesIn;
    if (totals.flashBytesIn > 0.0)
        metrics.notes.push_back(formatFixed(100.0 * totals.flashBytesIn / totals.bytesIn, 1)
            + "% of the weights streamed per step (" + formatBytes(totals.flashBytesIn) + " of "
            + formatBytes(totals.bytesIn) + ") are read from MemoryX's flash tier at "
            + formatSi(simulation.path().flashBytesPerS, "B/s") + ", the rest from its DRAM tier at "
            + formatSi(simulation.path().bytesPerS, "B/s"));
    const double hardwareFlops = fillLayers(metrics, context, totals, systems);
    if (train) {
        metrics.checkpointStrategy = plan.checkpointStrategy;
        metrics.checkpointEvery = plan.checkpointEvery;
        metrics.recomputeFlopsPerStep = metrics.hardwareFlopsPerStep - metrics.modelFlopsPerStep;
        metrics.checkpointBytesPerStep = totals.checkpointBytes * systems;
    }
    fillUtilization(metrics, context, totals, hardwareFlops, systems);
    finishMetrics(metrics, context);
    return result;
}

} // namespace waferscope::core::engine::detail
