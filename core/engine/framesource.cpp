#include "core/engine/framesource.h"

#include "core/compiler/compiler.h"
#include "core/engine/enginedetail.h"

#include <tbb/parallel_for.h>

#include <algorithm>

namespace waferscope::core::engine {

namespace {

bool isWaferWork(const TimelineEvent& event)
{
    return event.layer >= 0
        && ((event.lane == LaneKind::CsxCompute && event.phase != Phase::OptimizerUpdate)
            || event.lane == LaneKind::Region);
}

float clamp01(double value)
{
    return float(std::clamp(value, 0.0, 1.0));
}

} // namespace

FrameSource::FrameSource(const ExecutionPlan& plan, const ModelGraph& graph, const SystemSpec& system,
    const RunResult& run, const Calibration& calibration)
    : m_plan(plan)
    , m_system(system)
    , m_timeline(run.timeline)
{
    for (const LayerMetrics& layer : run.metrics.layers)
        m_layerRegion.push_back(layer.region);
    for (std::size_t i = 0; i < m_timeline.events.size(); ++i)
        if (isWaferWork(m_timeline.events[i]))
            m_steps.push_back(i);
    std::stable_sort(m_steps.begin(), m_steps.end(),
        [&](std::size_t a, std::size_t b) { return m_timeline.events[a].start < m_timeline.events[b].start; });

    // Link loads of each region's kernel: wavelets per link per cycle on its broadcast and reduce
    // directions, from the same cost model the engine timed it with.
    const int simd = std::max(1, system.wafer.fmacPerPePerCycle);
    const int hop = std::max(1, system.wafer.hopLatencyCycles);
    m_forward.resize(plan.regions.size());
    for (std::size_t r = 0; r < plan.regions.size(); ++r) {
        const Region& region = plan.regions[r];
        const Op& op = graph.ops[std::size_t(region.op)];
        RegionLoad& load = m_forward[r];
        load.pesUsed = region.rect.area();
        if (!detail::isStreamedMatrix(op.kind))
            continue;
        if (region.kernel.kind == KernelPlan::Kind::StreamedGemm) {
            const double density = op.params > 0 ? double(op.nonzeroParams) / double(op.params) : 1.0;
            const StreamedGemmCost cost
                = costStreamedGemm({ op.outFeatures, op.inFeatures,
                                       std::max<std::int64_t>(1, plan.microBatch) * op.tokensPerSample, density },
                    region.rect.h, region.rect.w, simd, calibration, hop);
            load.pesUsed = cost.pesUsed;
            load.broadcastLoad = clamp01(cost.fabricCycles / std::max(1.0, cost.cycles));
            load.reduceLoad = cost.featureTile < op.inFeatures
                ? clamp01(double(op.outFeatures) * double(cost.tokenTile) / std::max(1.0, cost.cycles))
                : 0.0f;
        } else {
            // GEMV: each broadcast link carries its column's x slice, each reduce link its row's
            // partial y, over the kernel's cycles.
            const Expected<fabric::KernelConfig> config = fabricKernelFor(region, graph, system);
            if (!config)
                continue;
            const double rows = double(config->regionRows);
            const double cols = double(config->regionCols);
            const KernelCost cost = costKernel(*config, calibration, hop);
            load.broadcastLoad = clamp01(double(op.inFeatures) / cols / std::max(1.0, cost.cycles));
            load.reduceLoad = clamp01(double(op.outFeatures) / rows / std::max(1.0, cost.cycles));
        }
    }
}

EngineFrame FrameSource::render(const std::vector<std::size_t>& events, int wafer, double time) const
{
    EngineFrame frame;
    frame.width = m_plan.fabricWidth;
    frame.height = m_plan.fabricHeight;
    frame.wafer = wafer;
    frame.time = time;
    const std::size_t pes = std::size_t(frame.width) * std::size_t(frame.height);
    frame.peActivity.assign(pes, 0.0f);
    frame.linkLoad.assign(pes * 4, 0.0f);
    const double clock = m_system.wafer.clockHz;
    const double simd = std::max(1, m_system.wafer.fmacPerPePerCycle);
    for (std::size_t index : events) {
        const TimelineEvent& event = m_timeline.events[index];
        const int layer = event.layer;
        if (layer < 0 || std::size_t(layer) >= m_layerRegion.size() || m_layerRegion[std::size_t(layer)] < 0)
            continue;
        const std::size_t r = std::size_t(m_layerRegion[std::size_t(layer)]);
        const Region& region = m_plan.regions[r];
        if (region.system != wafer)
            continue;
        frame.layer = layer;
        frame.phase = event.phase;
        frame.iteration = event.iteration;
        const RegionLoad& load = m_forward[r];
        const double duration = std::max(1e-15, event.end - event.start);
        // The event's FLOPs over the PEs that hold tiles, at the SIMD rate, for its duration.
        const double used = double(std::max<std::int64_t>(1, load.pesUsed));
        const float activity = clamp01(event.flops / (2.0 * simd * used * clock * duration));
        const bool turned = region.kernel.broadcast == fabric::East;
        const int broadcastDir = region.kernel.kind == KernelPlan::Kind::StreamedGemm ? fabric::East
            : turned                                                                  ? fabric::East
                                                                                      : fabric::South;
        const int reduceDir = broadcastDir == fabric::East ? fabric::South : fabric::East;
        const Rect rect = region.rect;
        const std::int64_t limit = load.pesUsed;
        const int width = frame.width;
        tbb::parallel_for(tbb::blocked_range<int>(0, rect.h, 64), [&](const tbb::blocked_range<int>& rows) {
            for (int dy = rows.begin(); dy != rows.end(); ++dy) {
                const std::int64_t first = std::int64_t(dy) * rect.w; // PEs before this row, row-major
                const int count = int(std::clamp<std::int64_t>(limit - first, 0, rect.w));
                const std::size_t base = std::size_t(rect.y + dy) * std::size_t(width) + std::size_t(rect.x);
                for (int dx = 0; dx < count; ++dx) {
                    const std::size_t pe = base + std::size_t(dx);
                    frame.peActivity[pe] = std::max(frame.peActivity[pe], activity);
                    frame.linkLoad[pe * 4 + std::size_t(broadcastDir)] = load.broadcastLoad;
                    frame.linkLoad[pe * 4 + std::size_t(reduceDir)] = load.reduceLoad;
                }
            }
        });
    }
    return frame;
}

EngineFrame FrameSource::frame(std::size_t index, int wafer) const
{
    if (index >= m_steps.size())
        return render({}, wafer, m_timeline.span);
    const TimelineEvent& event = m_timeline.events[m_steps[index]];
    return render({ m_steps[index] }, wafer, event.start);
}

EngineFrame FrameSource::frameAt(double time, int wafer) const
{
    std::vector<std::size_t> active;
    for (std::size_t index : m_steps) {
        const TimelineEvent& event = m_timeline.events[index];
        if (event.start <= time && time < event.end)
            active.push_back(index);
    }
    return render(active, wafer, time);
}

EngineFrame FrameSource::frameFor(int iteration, int layer, Phase phase, int wafer) const
{
    for (std::size_t index : m_steps) {
        const TimelineEvent& event = m_timeline.events[index];
        if (event.iteration == iteration && event.layer == layer && event.phase == phase)
            return render({ index }, wafer, event.start);
    }
    return render({}, wafer, 0.0);
}

} // namespace waferscope::core::engine
