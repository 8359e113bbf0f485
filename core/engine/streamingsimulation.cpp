// The event simulation of weight streaming: the resources a streamed layer needs, one after
// the other, for every layer of every micro-batch of every step.
#include "core/engine/streamingsimulation.h"

#include <algorithm>

namespace waferscope::core::engine::detail {

StreamingSimulation::StreamingSimulation(
    const Context& context, const MicroBatches& batches, const LayerCosts& costs, int systems, RunResult& result)
    : m_context(context)
    , m_batches(batches)
    , m_costs(costs)
    , m_systems(systems)
    , m_train(context.options.mode == RunMode::Train)
    , m_path(streamPath(context.system, systems))
    , m_checkpointBytesPerS(context.system.ownDataBytesPerS(systems))
    , m_result(result)
    , m_optimizerDone(costs.full.size(), 0.0)
{
    const std::size_t layers = costs.full.size();
    m_totals.layerTime.assign(layers, 0.0);
    m_totals.layerBoundTime.resize(layers);
    m_totals.layerFlops.assign(layers, 0.0);
    m_totals.layerModelFlops.assign(layers, 0.0);
}

double StreamingSimulation::runStep(int step, bool steady, const std::vector<StreamItem>& items)
{
    const double stepStart = m_stepEnd;
    const std::function<bool()>& cancelled = m_context.options.cancelled;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (cancelled && i % 1024 == 0 && cancelled()) {
            m_cancelled = true;
            return 0.0;
        }
        const StreamItem& item = items[i];
        const StreamWindow stream = streamWeightsIn(step, item, steady);
        const double computeEnd = computeItem(step, item, stream, stepStart, steady);
        if (!item.backward)
            writeCheckpointOut(step, item, computeEnd, steady);
        else
            returnGradients(step, item, computeEnd, steady);
    }
    m_stepEnd = std::max(m_computeFree, m_train ? m_optimizerFree : 0.0);
    return m_stepEnd - stepStart;
}

void StreamingSimulation::emit(
    int step, LaneKind lane, Phase phase, const StreamItem& item, double start, double end, double bytes, double flops)
{
    if (step < m_context.options.maxSteps && end > start)
        m_result.timeline.events.push_back({ lane, 0, phase, item.layer, step, item.micro, start, end, bytes, flops });
}

const OpCost& StreamingSimulation::costOf(const StreamItem& item) const
{
    const std::size_t layer = std::size_t(item.layer);
    return item.micro + 1 == m_batches.count ? m_costs.last[layer] : m_costs.full[layer];
}

StreamingSimulation::StreamWindow StreamingSimulation::streamWeightsIn(int step, const StreamItem& item, bool steady)
{
    const std::size_t layer = std::size_t(item.layer);
    const StreamedLayer& streamed = m_context.plan.streamed[layer];
    StreamWindow window;
    // A recomputed layer's weights come in once more for the forward run again in backward.
    window.bytes = double(item.backward ? streamed.bytesInBackward + (streamed.recomputed ? streamed.bytesInForward : 0)
                                        : streamed.bytesInForward);
    window.start = std::max(m_linkInFree, m_previousComputeStart);
    if (!item.backward && item.micro == 0 && step > 0) {
        window.optimizerWait = std::max(0.0, m_optimizerDone[layer] - window.start);
        window.start += window.optimizerWait;
    }
    window.flashBytes = window.bytes * streamed.flashShare;
    const double dramS = (window.bytes - window.flashBytes) / m_path.bytesPerS;
    const double flashS = window.flashBytes / m_path.flashBytesPerS;
    window.bound = flashS > dramS ? m_path.flashBound : m_path.bound;
    const double streamEnd = window.start + dramS + flashS;
    window.end = streamEnd;
    const double checkpointIn
        = item.backward ? double(streamed.checkpointInBytesPerSample) * double(item.samples) : 0.0;
    if (checkpointIn > 0.0) {
        const double readStart = std::max(window.end, m_checkpointWritesDone);
        const double readEnd = readStart + checkpointIn / m_checkpointBytesPerS;
        emit(step, LaneKind::MemoryX, Phase::CheckpointIn, item, readStart, readEnd, checkpointIn, 0.0);
        emit(step, LaneKind::CsxIo, Phase::CheckpointIn, item, readStart + m_path.latencyS, readEnd + m_path.latencyS,
            checkpointIn, 0.0);
        window.end = readEnd;
        if (steady)
            m_totals.checkpointBytes += checkpointIn;
    }
    m_linkInFree = window.end;
    // MemoryX's lane shows the tier each part is read from; the path after it carries both.
    emit(step, LaneKind::MemoryX, Phase::StreamIn, item, window.start, window.start + dramS,
        window.bytes - window.flashBytes, 0.0);
    emit(step, LaneKind::MemoryX, Phase::FlashStreamIn, item, window.start + dramS, streamEnd, window.flashBytes, 0.0);
    emit(step, LaneKind::SwarmX, Phase::StreamIn, item, window.start + m_context.system.swarmx.levelLatencyS,
        window.end + m_path.latencyS, window.bytes, 0.0);
    emit(step, LaneKind::CsxIo, Phase::StreamIn, item, window.start + m_path.latencyS, window.end + m_path.latencyS,
        window.bytes, 0.0);
    return window;
}

double StreamingSimulation::computeItem(
    int step, const StreamItem& item, const StreamWindow& stream, double stepStart, bool steady)
{
    const OpCost& cost = costOf(item);
    const double computeS = item.backward ? cost.backwardS : cost.forwardS;
    const double computeStart = std::max(m_computeFree, stream.start + m_path.latencyS);
    const double computeEnd = std::max(computeStart + computeS, stream.end + m_path.latencyS);
    const double flops = item.backward ? cost.backwardFlops + cost.recomputeFlops : cost.forwardFlops;
    const double modelFlops = item.backward ? cost.backwardFlops : cost.forwardFlops;
    if (!item.backward) {
        emit(step, LaneKind::CsxCompute, Phase::Forward, item, computeStart, computeEnd, 0.0, flops);
    } else {
        // Recompute and delta first, then the weight gradient (half the backward GEMMs).
        const double share = flops > 0.0 ? (cost.recomputeFlops + cost.backwardFlops / 2.0) / flops : 0.5;
        const double mid = computeStart + (computeEnd - computeStart) * share;
        emit(step, LaneKind::CsxCompute, Phase::BackwardDelta, item, computeStart, mid, 0.0, flops * share);
        emit(step, LaneKind::CsxCompute, Phase::BackwardGradient, item, mid, computeEnd, 0.0, flops * (1.0 - share));
    }
    if (steady) {
        const double held = computeEnd - std::max(m_computeFree, stepStart);
        attributeHeldTime(item, cost, held, computeS, stream);
        const std::size_t layer = std::size_t(item.layer);
        m_totals.layerFlops[layer] += flops;
        m_totals.layerModelFlops[layer] += modelFlops;
        m_totals.bytesIn += stream.bytes;
        m_totals.flashBytesIn += stream.flashBytes;
        m_totals.fabricBusy += item.backward ? cost.backwardFabricS : cost.forwardFabricS;
    }
    m_previousComputeStart = computeStart;
    m_computeFree = computeEnd;
    return computeEnd;
}

void StreamingSimulation::attributeHeldTime(
    const StreamItem& item, const OpCost& cost, double held, double computeS, const StreamWindow& stream)
{
    const std::size_t layer = std::size_t(item.layer);
    m_totals.layerTime[layer] += held;
    const double stall = std::max(0.0, held - computeS);
    const Bound bound = stall > 0.1 * held ? (stream.optimizerWait > 0.5 * stall ? Bound::MemoryX : stream.bound)
        : cost.fabricBound                 ? Bound::Fabric
                                           : Bound::Compute;
    m_totals.layerBoundTime[layer][bound] += held;
    m_result.metrics.boundTimeS[bound] += held;
}

void StreamingSimulation::writeCheckpointOut(int step, const StreamItem& item, double computeEnd, bool steady)
{
    const StreamedLayer& streamed = m_context.plan.streamed[std::size_t(item.layer)];
    const double checkpointOut = double(streamed.checkpointOutBytesPerSample) * double(item.samples);
    if (checkpointOut <= 0.0)
        return;
    const double writeStart = std::max(computeEnd, m_linkOutFree);
    const double writeEnd = writeStart + checkpointOut / m_checkpointBytesPerS;
    m_linkOutFree = writeEnd;
    m_checkpointWritesDone = writeEnd + m_path.latencyS;
    emit(step, LaneKind::CsxIo, Phase::CheckpointOut, item, writeStart, writeEnd, checkpointOut, 0.0);
    emit(step, LaneKind::MemoryX, Phase::CheckpointOut, item, writeStart + m_path.latencyS, writeEnd + m_path.latencyS,
        checkpointOut, 0.0);
    if (steady)
        m_totals.checkpointBytes += checkpointOut;
}

void StreamingSimulation::returnGradients(int step, const StreamItem& item, double computeEnd, bool steady)
{
    const std::size_t layer = std::size_t(item.layer);
    const double outBytes = double(m_context.plan.streamed[layer].bytesOutGradients);
    const double outStart = std::max(computeEnd, m_linkOutFree);
    const double outEnd = outStart + outBytes / m_path.bytesPerS;
    m_linkOutFree = outEnd;
    emit(step, LaneKind::CsxIo, Phase::GradientOut, item, outStart, outEnd, outBytes, 0.0);
    emit(step, LaneKind::SwarmX, Phase::Reduce, item, outStart + m_context.system.swarmx.levelLatencyS,
        outEnd + m_path.latencyS, outBytes * (m_systems > 1 ? 1.0 : 0.0), outBytes / 2.0 * (m_systems - 1));
    if (steady)
        m_totals.bytesOut += outBytes;
    if (item.micro + 1 != m_batches.count)
        return;
    const double updateStart = std::max(outEnd + m_path.latencyS, m_optimizerFree);
    const double updateEnd = updateStart + m_costs.optimizerS[layer];
    m_optimizerFree = updateEnd;
    m_optimizerDone[layer] = updateEnd;
    emit(step, LaneKind::MemoryX, Phase::OptimizerUpdate, item, updateStart, updateEnd, 0.0,
        double(m_result.metrics.layers[layer].params) * 10.0);
    if (steady)
        m_totals.optimizerBusy += m_costs.optimizerS[layer];
}

} // namespace waferscope::core::engine::detail
