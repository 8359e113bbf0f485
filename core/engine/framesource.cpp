#include "core/engine/framesource.h"

#include "core/common/memorybudget.h"

#include "core/compiler/compiler.h"
#include "core/compiler/decoderegions.h"
#include "core/engine/enginedetail.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <map>
#include <optional>

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
    m_stepInfo.reserve(m_steps.size());
    for (std::size_t index : m_steps) {
        const TimelineEvent& e = m_timeline.events[index];
        m_stepInfo.push_back({ e.start, e.end, e.iteration, e.layer, e.microBatch, e.phase });
    }
    // A layer-pipelined plan times one copy of the pipeline (replica 0) with the FLOPs of the whole
    // batch on every system; the wafer shown is one system's, and its other copies run in step.
    m_replicas.resize(plan.regions.size());
    if (plan.mode == ExecutionMode::Pipelined) {
        m_waferShare = 1.0 / double(std::max(1, plan.numSystems));
        std::map<std::pair<int, int>, std::size_t> first; // (op, system) -> its replica-0 region
        for (std::size_t r = 0; r < plan.regions.size(); ++r)
            if (plan.regions[r].replica == 0)
                first[{ plan.regions[r].op, plan.regions[r].system }] = r;
        for (std::size_t r = 0; r < plan.regions.size(); ++r) {
            const Region& region = plan.regions[r];
            if (region.replica == 0)
                continue;
            if (const auto at = first.find({ region.op, region.system }); at != first.end())
                m_replicas[at->second].push_back(r);
        }
    }

    // Link loads of each region's kernel: wavelets per link per cycle on its broadcast and reduce
    // directions, from the same cost model the engine timed it with.
    const int simd = std::max(1, system.wafer.fmacPerPePerCycle);
    const int hop = std::max(1, system.wafer.hopLatencyCycles);
    m_forward.resize(plan.regions.size());
    // Inference: the decode kernels the engine timed each region with (every op of a language
    // model has one), their link wavelets over their PEs' links and cycles.
    std::optional<DecodeRegions> decode;
    if (plan.mode == ExecutionMode::Inference)
        decode.emplace(graph, plan, system);
    const std::int64_t position = std::max<std::int64_t>(0, run.metrics.promptTokens - 1); // as the engine timed it
    for (std::size_t r = 0; r < plan.regions.size(); ++r) {
        const Region& region = plan.regions[r];
        const Op& op = graph.ops[std::size_t(region.op)];
        RegionLoad& load = m_forward[r];
        load.pesUsed = region.rect.area();
        if (decode) {
            if (const std::optional<DecodeRegionCost> kernel = decode->cost(region, position)) {
                const double links = 2.0 * double(std::max<std::int64_t>(1, load.pesUsed));
                load.broadcastLoad = clamp01(kernel->cost.linkWavelets / links / std::max(1.0, kernel->cost.cycles));
                load.reduceLoad = load.broadcastLoad;
                load.trafficModelled = true;
                continue;
            }
        }
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
            load.trafficModelled = true;
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
            load.trafficModelled = true;
        }
    }
}

// One region's share of a frame: `flopsPerCycle` FLOPs per cycle spread over the PEs that hold its
// tiles gives their activity; its kernel's loads go on its broadcast and reduce links.
void FrameSource::paint(EngineFrame& frame, const Region& region, const RegionLoad& load, double flopsPerCycle) const
{
    const double used = double(std::max<std::int64_t>(1, load.pesUsed));
    const float activity = clamp01(flopsPerCycle / used);
    const bool turned = region.kernel.broadcast == fabric::East;
    const int broadcastDir = region.kernel.kind == KernelPlan::Kind::StreamedGemm ? fabric::East
        : turned                                                                  ? fabric::East
                                                                                  : fabric::South;
    const int reduceDir = broadcastDir == fabric::East ? fabric::South : fabric::East;
    const Rect rect = region.rect;
    if (!load.trafficModelled
        && std::find(frame.trafficUnmodelled.begin(), frame.trafficUnmodelled.end(), rect)
            == frame.trafficUnmodelled.end())
        frame.trafficUnmodelled.push_back(rect);
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
        const double duration = std::max(1e-15, event.end - event.start);
        // One copy's FLOPs over the PEs that hold its tiles, at the SIMD rate, for its duration;
        // every copy of the pipeline on this wafer does the same work at the same time.
        const double flops = event.flops * m_waferShare / double(1 + m_replicas[r].size());
        for (std::size_t copy = 0; copy <= m_replicas[r].size(); ++copy) {
            const std::size_t q = copy == 0 ? r : m_replicas[r][copy - 1];
            paint(frame, m_plan.regions[q], m_forward[q], flops / (2.0 * simd * clock * duration));
        }
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

EngineFrame FrameSource::frameAtStep(std::size_t index, int wafer) const
{
    if (index >= m_steps.size())
        return render({}, wafer, m_timeline.span);
    const FrameStep& step = m_stepInfo[index];
    std::vector<std::size_t> active { m_steps[index] };
    for (std::size_t other : m_steps) {
        const TimelineEvent& event = m_timeline.events[other];
        if (other != m_steps[index] && event.start <= step.start && step.start < event.end)
            active.push_back(other);
    }
    // The step's own work last, so the frame is labelled with it.
    std::rotate(active.begin(), active.begin() + 1, active.end());
    EngineFrame frame = render(active, wafer, step.start);
    frame.layer = step.layer;
    frame.phase = step.phase;
    frame.iteration = step.iteration;
    return frame;
}

std::size_t FrameSource::stepAt(double time) const
{
    const auto after = std::upper_bound(
        m_stepInfo.begin(), m_stepInfo.end(), time, [](double t, const FrameStep& step) { return t < step.start; });
    return after == m_stepInfo.begin() ? 0 : std::size_t(after - m_stepInfo.begin() - 1);
}

UtilizationSeries FrameSource::utilization(int bins) const
{
    if (bins <= 0 || m_timeline.span <= 0.0)
        return {};
    const double binS = m_timeline.span / double(bins);
    std::vector<double> edges;
    for (int b = 0; b <= bins; ++b)
        edges.push_back(double(b) * binS);
    UtilizationSeries series = utilizationOver(edges);
    series.binS = binS;
    return series;
}

UtilizationSeries FrameSource::utilizationOver(const std::vector<double>& edges) const
{
    UtilizationSeries series;
    if (edges.size() < 2)
        return series;
    const std::size_t count = edges.size() - 1;
    series.start.assign(edges.begin(), edges.end() - 1);
    std::vector<double> width(count);
    for (std::size_t b = 0; b < count; ++b)
        width[b] = std::max(edges[b + 1] - edges[b], 1e-300);
    series.compute.assign(count, 0.0);
    series.fabric.assign(count, 0.0);
    series.fabricUnmodelled.assign(count, 0.0);
    const double clock = m_system.wafer.clockHz;
    const double waferCount = double(wafers());
    const double usablePes = double(std::max<std::int64_t>(1, m_plan.usable.area()));
    const double peakFlopsPerS = 2.0 * std::max(1, m_system.wafer.fmacPerPePerCycle) * usablePes * clock * waferCount;
    const double linkWaveletsPerS = 4.0 * usablePes * clock * waferCount;
    const int links = std::max(1, m_plan.numSystems - 1);
    // Busy share per lane and phase: a lane's two directions (stream in, gradients out) or its
    // two jobs (streaming, the optimizer) run side by side, so a lane is as busy as the busier.
    std::map<std::pair<LaneKind, Phase>, std::vector<double>> busy;

    // Each bin an event overlaps gets its overlap (and that share of the event).
    const auto spread = [&](double start, double end, auto&& add) {
        const double duration = end - start;
        if (duration <= 0.0)
            return;
        const auto after = std::upper_bound(edges.begin(), edges.end(), start);
        const std::size_t first = after == edges.begin() ? 0 : std::size_t(after - edges.begin() - 1);
        for (std::size_t b = first; b < count && edges[b] < end; ++b) {
            const double overlap = std::min(end, edges[b + 1]) - std::max(start, edges[b]);
            if (overlap > 0.0)
                add(b, overlap, overlap / duration);
        }
    };
    for (const TimelineEvent& event : m_timeline.events) {
        if (isWaferWork(event)) {
            const int r
                = std::size_t(event.layer) < m_layerRegion.size() ? m_layerRegion[std::size_t(event.layer)] : -1;
            const RegionLoad* load = r >= 0 ? &m_forward[std::size_t(r)] : nullptr;
            // Every copy of a pipelined region carries the same load.
            const double copies = r >= 0 ? double(1 + m_replicas[std::size_t(r)].size()) : 1.0;
            spread(event.start, event.end, [&](std::size_t b, double overlap, double share) {
                series.compute[b] += event.flops * m_waferShare * share / (peakFlopsPerS * width[b]);
                if (load && load->trafficModelled)
                    series.fabric[b] += copies * overlap * clock * double(load->pesUsed)
                        * double(load->broadcastLoad + load->reduceLoad) / (linkWaveletsPerS * width[b]);
                else if (load)
                    series.fabricUnmodelled[b]
                        += copies * overlap * double(load->pesUsed) / (usablePes * waferCount * width[b]);
            });
            continue;
        }
        const bool io = (event.lane == LaneKind::CsxIo && event.laneIndex == 0) || event.lane == LaneKind::WaferLink;
        if (!io && event.lane != LaneKind::MemoryX && event.lane != LaneKind::SwarmX)
            continue;
        const LaneKind lane = event.lane == LaneKind::WaferLink ? LaneKind::CsxIo : event.lane;
        // MemoryX reads a stream's DRAM and flash parts one after the other: one job.
        const Phase phase = event.phase == Phase::FlashStreamIn ? Phase::StreamIn : event.phase;
        std::vector<double>& share = busy[{ lane, phase }];
        share.resize(count, 0.0);
        const double weight = event.lane == LaneKind::WaferLink ? 1.0 / links : 1.0;
        spread(event.start, event.end,
            [&](std::size_t b, double overlap, double) { share[b] += weight * overlap / width[b]; });
    }
    const auto busiest = [&](LaneKind lane) {
        std::vector<double> out(count, 0.0);
        for (const auto& [key, share] : busy)
            if (key.first == lane)
                for (std::size_t b = 0; b < count; ++b)
                    out[b] = std::max(out[b], share[b]);
        return out;
    };
    series.io = busiest(LaneKind::CsxIo);
    series.memoryx = busiest(LaneKind::MemoryX);
    series.swarmx = busiest(LaneKind::SwarmX);
    for (std::vector<double>* values :
        { &series.compute, &series.fabric, &series.io, &series.memoryx, &series.swarmx, &series.fabricUnmodelled })
        for (double& value : *values)
            value = std::clamp(value, 0.0, 1.0);
    return series;
}

std::size_t stepFrame(const std::vector<FrameStep>& steps, std::size_t current, StepUnit unit, int direction)
{
    if (steps.empty())
        return current;
    const std::size_t last = steps.size() - 1;
    current = std::min(current, last);
    const bool forward = direction >= 0;
    switch (unit) {
    case StepUnit::Phase:
        return forward ? std::min(current + 1, last) : (current == 0 ? 0 : current - 1);
    case StepUnit::Layer: {
        // Runs of consecutive frames of the same layer; move to the start of the next or
        // previous run.
        const auto runStart = [&](std::size_t i) {
            while (i > 0 && steps[i - 1].layer == steps[i].layer)
                --i;
            return i;
        };
        if (forward) {
            std::size_t i = current;
            while (i < last && steps[i + 1].layer == steps[current].layer)
                ++i;
            return std::min(i + 1, last);
        }
        const std::size_t start = runStart(current);
        return start == 0 ? 0 : runStart(start - 1);
    }
    case StepUnit::Iteration: {
        const int iteration = steps[current].iteration;
        if (forward) {
            for (std::size_t i = current + 1; i <= last; ++i)
                if (steps[i].iteration > iteration)
                    return i;
            return last;
        }
        int previous = iteration;
        bool found = false;
        for (std::size_t i = 0; i < current; ++i)
            if (steps[i].iteration < iteration && (!found || steps[i].iteration > previous)) {
                previous = steps[i].iteration;
                found = true;
            }
        if (!found)
            return 0;
        for (std::size_t i = 0; i <= last; ++i)
            if (steps[i].iteration == previous)
                return i;
        return 0;
    }
    }
    return current;
}

std::vector<StepFigures> stepFigures(const FrameSource& frames, const Metrics& metrics)
{
    const bool inference = metrics.mode == RunMode::Inference;
    std::vector<double> edges { inference ? metrics.timeToFirstTokenS : 0.0 };
    for (double stepS : metrics.stepTimesS)
        edges.push_back(edges.back() + stepS);
    const UtilizationSeries over = frames.utilizationOver(edges);
    // What a step does is the same every step; only its time differs (the first step's fill).
    const double samplesPerStep = metrics.samplesPerS * metrics.stepTimeS;
    const double tokensPerStep = metrics.tokensPerS * metrics.stepTimeS; // per user
    std::vector<StepFigures> steps;
    for (std::size_t k = 0; k < metrics.stepTimesS.size(); ++k) {
        StepFigures step;
        step.step = int(k) + 1;
        step.startS = edges[k];
        step.endS = edges[k + 1];
        step.stepTimeS = metrics.stepTimesS[k];
        if (step.stepTimeS > 0.0) {
            if (inference)
                step.tokensPerS = tokensPerStep / step.stepTimeS;
            else
                step.samplesPerS = samplesPerStep / step.stepTimeS;
            if (metrics.peakFlopsPerS > 0.0)
                step.mfu = std::clamp(metrics.modelFlopsPerStep / (step.stepTimeS * metrics.peakFlopsPerS), 0.0, 1.0);
        }
        if (k < over.compute.size())
            step.utilization = { over.compute[k], over.fabric[k], over.io[k], over.memoryx[k], over.swarmx[k] };
        steps.push_back(step);
    }
    return steps;
}

std::optional<Diagnostic> checkFrameMemory(const FrameSource& frames, const SystemSpec& system)
{
    // Activity, busiest link, difference (a float each) and four link loads per PE; three
    // snapshots alive: the one shown, the one being made and the baseline's.
    constexpr double kBytesPerPe = 7.0 * sizeof(float);
    constexpr double kSnapshotsAlive = 3.0;
    const double pes = double(system.wafer.fabricWidth) * double(system.wafer.fabricHeight);
    return checkMemory("the frames of " + std::to_string(frames.wafers()) + " wafer(s)",
        kSnapshotsAlive * kBytesPerPe * pes * double(frames.wafers()),
        "the wafer view shows the placement without the run's activity", Diagnostic { "<frames>", 0, 0, {} });
}

} // namespace waferscope::core::engine
