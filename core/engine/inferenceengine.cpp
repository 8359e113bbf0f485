// Inference on a pipelined (possibly multi-wafer) plan with the weights resident in SRAM.
//
// Decode: one token visits every region in op order (ops that read the same input, such as
// q/k/v or up/gate, run side by side), hops between regions across the fabric, and between
// wafers over the systems' I/O; the last region's token goes back to the first. The latency of
// each region is its kernel's cost (GEMV from the cost model, attention from its FLOPs and its
// softmax reductions) plus the calibrated cost of launching it. Batch-1 tokens/s per user is
// one over that latency.
//
// Prefill: the prompt's tokens enter back to back, so the first token takes one decode latency
// and each further one the interval of the busiest region. Several users fill the regions a
// single user leaves idle, up to that same interval.
#include "core/compiler/compiler.h"
#include "core/engine/enginedetail.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace waferscope::core::engine::detail {

namespace {

struct RegionTiming {
    double latencyCycles = 0.0; // one token through the region, launch included
    double busyCycles = 0.0; // the region's PEs cannot take the next token before this
    double fmacs = 0.0;
    double flops = 0.0; // model FLOPs per token
    Bound bound = Bound::Compute;
};

int manhattanGap(const Rect& a, const Rect& b)
{
    const int dx = std::max({ 0, b.x - (a.x + a.w), a.x - (b.x + b.w) });
    const int dy = std::max({ 0, b.y - (a.y + a.h), a.y - (b.y + b.h) });
    return dx + dy;
}

RegionTiming timeRegion(const Context& c, const Region& region)
{
    const Op& op = c.graph.ops[std::size_t(region.op)];
    const double pes = double(std::max<std::int64_t>(1, region.rect.area()));
    const double crossing = double(region.rect.w + region.rect.h) * c.hop;
    RegionTiming timing;
    const double density = op.params > 0 ? double(op.nonzeroParams) / double(op.params) : 1.0;
    // GEMV regions: the kernel the fabric runs for them (core::fabricKernelFor) in closed form.
    std::optional<fabric::KernelConfig> gemv;
    if (isStreamedMatrix(op.kind))
        if (Expected<fabric::KernelConfig> config = fabricKernelFor(region, c.graph, c.system))
            gemv = *config;
    if (gemv) {
        const KernelCost cost = costKernel(*gemv, c.calibration, c.hop);
        timing.latencyCycles = cost.cycles;
        timing.busyCycles = cost.computeCycles;
        timing.fmacs = cost.fmacs * density;
        timing.bound = cost.bound;
        timing.flops = op.fwdFlopsPerToken * density;
    } else {
        // Attention (scores, softmax with its max and sum reductions, weighted values),
        // experts and lookups: their FLOPs at the SIMD rate of the region, and the crossings.
        const double flops = op.fwdFlopsPerToken * (op.kind == Op::Kind::Experts ? density : 1.0);
        const double compute = flops / (2.0 * c.simd * pes);
        const double hops = op.kind == Op::Kind::AttentionCore ? 2.0 * crossing : crossing;
        timing.latencyCycles = compute + hops;
        timing.busyCycles = compute;
        timing.fmacs = flops / 2.0;
        timing.flops = flops;
        timing.bound = hops > compute ? Bound::Latency : Bound::Compute;
    }
    // Fused elementwise ops on the same PEs; a norm also reduces across the region.
    for (int index : region.fused) {
        const Op& fused = c.graph.ops[std::size_t(index)];
        const double cycles = fused.fwdFlopsPerToken / (c.simd * pes);
        timing.latencyCycles += cycles + (fused.kind == Op::Kind::Norm ? crossing : 0.0);
        timing.busyCycles += cycles;
        timing.flops += fused.fwdFlopsPerToken;
    }
    timing.latencyCycles += c.calibration.regionLaunchCycles;
    return timing;
}

// Ops that read the same input as the op before them run side by side: matrix ops of the same
// layer and input width with no op fused in front of them (a norm in front marks a new input).
bool runsBesidePrevious(const Context& c, const Region& previous, const Region& region)
{
    const Op& a = c.graph.ops[std::size_t(previous.op)];
    const Op& b = c.graph.ops[std::size_t(region.op)];
    if (!isStreamedMatrix(a.kind) || !isStreamedMatrix(b.kind) || a.layer != b.layer || a.layer < 0
        || a.inFeatures != b.inFeatures || previous.system != region.system)
        return false;
    return std::none_of(region.fused.begin(), region.fused.end(), [&](int f) { return f < region.op; });
}

} // namespace

Expected<RunResult> runInference(const Context& c)
{
    const ExecutionPlan& plan = c.plan;
    const ModelConfig& config = c.graph.config;
    RunResult result;
    Metrics& m = result.metrics;
    // Regions in execution order (op order; replicas are not used for inference).
    std::vector<int> order;
    for (int r = 0; r < int(plan.regions.size()); ++r)
        if (plan.regions[std::size_t(r)].replica == 0)
            order.push_back(r);
    std::stable_sort(order.begin(), order.end(),
        [&](int a, int b) { return plan.regions[std::size_t(a)].op < plan.regions[std::size_t(b)].op; });
    if (order.empty())
        return Diagnostic { "<plan>", 0, 0, "the inference plan has no regions", Diagnostic::Kind::Internal };

    const double clock = c.clockHz;
    const double ioBytesPerS = c.system.ioBytesPerS;
    // Walk the token through the regions: offsets (cycles) at which each region starts.
    struct Step {
        int region = -1; // -1: an inter-wafer transfer
        double start = 0.0; // seconds after the token entered the first region
        double end = 0.0;
        double bytes = 0.0;
        int from = 0;
        int to = 0;
    };
    std::vector<Step> steps;
    std::vector<RegionTiming> timings(plan.regions.size());
    double clockS = 0.0; // time at which the current group may start
    double groupStart = 0.0;
    double groupEnd = 0.0;
    double maxBusy = 0.0;
    double fmacsPerToken = 0.0;
    double flopsPerToken = 0.0;
    double interWaferS = 0.0;
    double hopS = 0.0;
    int previous = -1;
    for (int r : order) {
        const Region& region = plan.regions[std::size_t(r)];
        RegionTiming& timing = timings[std::size_t(r)];
        timing = timeRegion(c, region);
        maxBusy = std::max(maxBusy, timing.busyCycles);
        fmacsPerToken += timing.fmacs;
        flopsPerToken += timing.flops;
        double start = 0.0;
        if (previous >= 0 && runsBesidePrevious(c, plan.regions[std::size_t(previous)], region)) {
            start = groupStart; // beside the previous op, on the same input
        } else {
            clockS = groupEnd;
            if (previous >= 0) {
                const Region& before = plan.regions[std::size_t(previous)];
                if (before.system != region.system) {
                    // The activation crosses to the next wafer over the systems' I/O.
                    double bytes = 0.0;
                    for (const WaferTransfer& transfer : plan.transfers)
                        if (transfer.from == before.system && transfer.to == region.system)
                            bytes = double(transfer.bytesPerToken);
                    const double transferS = c.system.interSystemLatencyS + bytes / ioBytesPerS;
                    steps.push_back({ -1, clockS, clockS + transferS, bytes, before.system, region.system });
                    interWaferS += transferS;
                    clockS += transferS;
                } else {
                    const double gapS = manhattanGap(before.rect, region.rect) * c.hop / clock;
                    hopS += gapS;
                    clockS += gapS;
                }
            }
            start = clockS;
            groupStart = start;
        }
        const double end = start + timing.latencyCycles / clock;
        groupEnd = std::max(groupEnd, end);
        steps.push_back({ r, start, end, 0.0, 0, 0 });
        previous = r;
    }
    const double latencyS = groupEnd; // one token, first region to the last
    const double intervalS = maxBusy / clock; // the busiest region's time per token
    const int users = std::max(1, c.options.users);
    const double aggregate = std::min(double(users) / latencyS, intervalS > 0.0 ? 1.0 / intervalS : 1e300);
    const std::int64_t context = std::max<std::int64_t>(1, config.sequenceLength);
    const std::int64_t prompt
        = c.options.promptTokens > 0 ? c.options.promptTokens : std::min<std::int64_t>(1024, context);
    if (prompt > context)
        return Diagnostic { "--prompt_tokens", 0, 0,
            "a prompt of " + std::to_string(prompt) + " tokens does not fit the configured context of "
                + std::to_string(context) + " tokens the KV cache is sized for",
            Diagnostic::Kind::CannotMap };
    const double ttft = latencyS + double(prompt - 1) * intervalS;

    m.numCsx = plan.numSystems;
    m.numSystems = plan.numSystems;
    m.users = users;
    m.promptTokens = prompt;
    m.stepTimeS = double(users) / aggregate;
    m.tokensPerStep = double(users);
    m.aggregateTokensPerS = aggregate;
    m.tokensPerS = aggregate / double(users);
    m.timeToFirstTokenS = ttft;
    // A sequence: its prompt, then as many generated tokens as fit the context.
    const double generated = double(std::max<std::int64_t>(1, context - prompt));
    m.samplesPerS = double(users) / (ttft + generated * m.stepTimeS);
    m.peakFlopsPerS = c.system.wafer.peakFlopsPerS() * plan.numSystems;
    m.modelFlopsPerStep = flopsPerToken * double(users);
    m.hardwareFlopsPerStep = m.modelFlopsPerStep;
    m.linkBytesPerS = ioBytesPerS;
    m.linkBound = Bound::Io;
    const double usablePes = double(plan.usable.area()) * plan.numSystems;
    m.utilization.compute = std::min(1.0, fmacsPerToken * double(users) / (usablePes * c.simd * m.stepTimeS * clock));
    m.utilization.io = plan.numSystems > 1 ? std::min(1.0, interWaferS / latencyS) : 0.0;
    m.utilization.fabric = std::min(1.0, hopS / latencyS);

    // Layers: each region's share of the token's latency; side-by-side ops overlap, so each
    // counts only the time past the ones before it.
    double covered = 0.0;
    for (const Step& step : steps) {
        LayerMetrics layer;
        layer.timeS = std::max(0.0, step.end - std::max(step.start, covered));
        covered = std::max(covered, step.end);
        if (step.region < 0) {
            layer.name = "wafer " + std::to_string(step.from) + " -> " + std::to_string(step.to);
            layer.kind = "wafer_link";
            layer.bound = Bound::Io;
        } else {
            const Region& region = plan.regions[std::size_t(step.region)];
            const RegionTiming& timing = timings[std::size_t(step.region)];
            const Op& op = c.graph.ops[std::size_t(region.op)];
            layer.name = region.opName;
            layer.kind = toString(op.kind);
            layer.region = step.region;
            layer.params = op.nonzeroParams;
            layer.flops = timing.flops * double(users);
            layer.utilization = std::min(1.0,
                timing.fmacs / (double(std::max<std::int64_t>(1, region.rect.area())) * c.simd * timing.latencyCycles));
            // Compute-bound while the FMAC (or SIMD) cycles are the larger part of the region's
            // latency; otherwise hops, chains and launch (latency) hold the token.
            layer.bound = timing.busyCycles >= 0.5 * timing.latencyCycles ? Bound::Compute : Bound::Latency;
        }
        m.layers.push_back(layer);
    }

    // Timeline: the prompt, then the decode steps; one lane per region and per wafer link.
    const int shown = c.options.maxSteps;
    if (std::optional<Diagnostic> refused = reserveTimeline(result.timeline, steps.size(), shown + 1))
        return *refused;
    for (int s = -1; s < shown; ++s) {
        const double tokenStart = s < 0 ? 0.0 : ttft + double(s) * m.stepTimeS;
        const Phase phase = s < 0 ? Phase::Prefill : Phase::Decode;
        for (std::size_t i = 0; i < steps.size(); ++i) {
            const Step& step = steps[i];
            TimelineEvent event;
            event.lane = step.region < 0 ? LaneKind::WaferLink : LaneKind::Region;
            event.laneIndex = step.region < 0 ? step.from : step.region;
            event.phase = phase;
            event.layer = int(i);
            event.iteration = std::max(0, s);
            event.start = tokenStart + step.start;
            // The prompt keeps each region busy for its share of every prompt token.
            const double busyS = step.region < 0 ? 0.0 : timings[std::size_t(step.region)].busyCycles / clock;
            event.end = tokenStart + step.end + (s < 0 ? double(prompt - 1) * std::max(busyS, intervalS) : 0.0);
            event.end = std::min(event.end, s < 0 ? ttft : tokenStart + m.stepTimeS + step.end);
            event.bytes = step.bytes * (s < 0 ? double(prompt) : double(users));
            event.flops = step.region < 0
                ? 0.0
                : timings[std::size_t(step.region)].flops * (s < 0 ? double(prompt) : double(users));
            result.timeline.events.push_back(event);
        }
        m.stepTimesS.push_back(s < 0 ? 0.0 : m.stepTimeS);
    }
    m.stepTimesS.erase(m.stepTimesS.begin());
    for (const TimelineEvent& event : result.timeline.events)
        result.timeline.span = std::max(result.timeline.span, event.end);
    if (users > 1 && double(users) / latencyS > 1.0 / intervalS)
        m.notes.push_back(std::to_string(users) + " users fill the pipeline: the busiest region ("
            + std::to_string(int(maxBusy)) + " cycles per token) caps the aggregate rate");
    finishMetrics(m, c);
    return result;
}

} // namespace waferscope::core::engine::detail
