// No header of its own: defines runInference, one of the engines of enginedetail.h.
// Inference on a pipelined (possibly multi-wafer) plan with the weights resident in SRAM.
//
// Decode: one token visits every region in op order (ops that read the same input, such as
// q/k/v or up/gate, run side by side; a stacked plan computes q, k and v in one region), hops between regions across
// the fabric, and between wafers over the systems' I/O; the last region's token goes back to the first. The latency of
// each region is its decode kernel's closed form (core/compiler/decoderegions.h: the kernels the
// cycle-level run executes, lanes in and out, at the token's position; ops without one, by their
// FLOPs at the SIMD rate) plus the calibrated launch-era software overhead of a region.
// Batch-1 tokens/s per user is one over that latency.
//
// Prefill: the prompt's tokens enter back to back, so the first token takes one decode latency
// and each further one the interval of the busiest region. Several users fill the regions a
// single user leaves idle, up to that same interval.
#include "core/common/units.h"
#include "core/compiler/compiler.h"
#include "core/compiler/decoderegions.h"
#include "core/engine/enginedetail.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

namespace waferscope::core::engine::detail {

namespace {

struct RegionTiming {
    double latencyCycles = 0.0; // one token through the region, launch included
    double busyCycles = 0.0; // the region's PEs cannot take the next token before this
    double fmacs = 0.0;
    double flops = 0.0; // model FLOPs per token
    Bound bound = Bound::Compute;
    bool decodeKernel = false; // timed by its decode kernel (else by its FLOPs)
    double leadCycles = 0.0; // decode kernel: until its input passes on to the ops beside it
};

int manhattanGap(const Rect& from, const Rect& to)
{
    const int dx = std::max({ 0, to.x - (from.x + from.w), from.x - (to.x + to.w) });
    const int dy = std::max({ 0, to.y - (from.y + from.h), from.y - (to.y + to.h) });
    return dx + dy;
}

// One token at `position` through `region`: its kernel's latency and busy time, FMACs and
// FLOPs, and what bounds it.
RegionTiming timeRegion(
    const Context& context, const DecodeRegions& decode, const Region& region, std::int64_t position)
{
    const Op& op = context.graph.ops[std::size_t(region.op)];
    const double pes = double(std::max<std::int64_t>(1, region.rect.area()));
    const double crossing = double(region.rect.w + region.rect.h) * context.hop;
    RegionTiming timing;
    const double density = op.params > 0 ? double(op.nonzeroParams) / double(op.params) : 1.0;
    if (const std::optional<DecodeRegionCost> kernel = decode.cost(region, position)) {
        // The decode kernel, fused norm and epilogue included; sparse weights are stored dense.
        timing.latencyCycles = kernel->cost.cycles + context.calibration.regionLaunchCycles;
        timing.busyCycles = kernel->cost.computeCycles;
        timing.fmacs = kernel->cost.fmacs;
        timing.flops = op.fwdFlopsPerToken;
        for (int index : region.fused)
            timing.flops += context.graph.ops[std::size_t(index)].fwdFlopsPerToken;
        timing.bound = kernel->cost.bound;
        timing.decodeKernel = true;
        timing.leadCycles = kernel->leadCycles;
        return timing;
    }
    // GEMV regions: the kernel the fabric runs for them (core::fabricKernelFor) in closed form.
    std::optional<fabric::KernelConfig> gemv;
    if (isStreamedMatrix(op.kind))
        if (Expected<fabric::KernelConfig> config = fabricKernelFor(region, context.graph, context.system))
            gemv = *config;
    if (gemv) {
        const KernelCost cost = costKernel(*gemv, context.calibration, context.hop);
        timing.latencyCycles = cost.cycles;
        timing.busyCycles = cost.computeCycles;
        timing.fmacs = cost.fmacs * density;
        timing.bound = cost.bound;
        timing.flops = op.fwdFlopsPerToken * density;
    } else {
        // Attention (scores, softmax with its max and sum reductions, weighted values),
        // experts and lookups: their FLOPs at the SIMD rate of the region, and the crossings.
        const double flops = op.fwdFlopsPerToken * (op.kind == Op::Kind::Experts ? density : 1.0);
        const double compute = flops / (2.0 * context.simd * pes);
        const double hops = op.kind == Op::Kind::AttentionCore ? 2.0 * crossing : crossing;
        timing.latencyCycles = compute + hops;
        timing.busyCycles = compute;
        timing.fmacs = flops / 2.0;
        timing.flops = flops;
        timing.bound = hops > compute ? Bound::Latency : Bound::Compute;
    }
    // Fused elementwise ops on the same PEs; a norm also reduces across the region.
    for (int index : region.fused) {
        const Op& fused = context.graph.ops[std::size_t(index)];
        const double cycles = fused.fwdFlopsPerToken / (context.simd * pes);
        timing.latencyCycles += cycles + (fused.kind == Op::Kind::Norm ? crossing : 0.0);
        timing.busyCycles += cycles;
        timing.flops += fused.fwdFlopsPerToken;
    }
    timing.latencyCycles += context.calibration.regionLaunchCycles;
    return timing;
}

// Ops that read the same input as the op before them run side by side: matrix ops of the same
// layer and input width with no op fused in front of them (a norm in front marks a new input).
bool runsBesidePrevious(const Context& context, const Region& previous, const Region& region)
{
    const Op& before = context.graph.ops[std::size_t(previous.op)];
    const Op& current = context.graph.ops[std::size_t(region.op)];
    if (!isStreamedMatrix(before.kind) || !isStreamedMatrix(current.kind) || before.layer != current.layer
        || before.layer < 0 || before.inFeatures != current.inFeatures || previous.system != region.system)
        return false;
    return std::none_of(region.fused.begin(), region.fused.end(), [&](int f) { return f < region.op; });
}

// The regions a token visits, in op order (replicas are not used for inference).
std::vector<int> executionOrder(const ExecutionPlan& plan)
{
    std::vector<int> order;
    for (int index = 0; index < int(plan.regions.size()); ++index)
        if (plan.regions[std::size_t(index)].replica == 0)
            order.push_back(index);
    std::stable_sort(order.begin(), order.end(),
        [&](int a, int b) { return plan.regions[std::size_t(a)].op < plan.regions[std::size_t(b)].op; });
    return order;
}

// A stretch of one token's trip: a region's work or a hop to the next wafer.
struct TokenStep {
    int region = -1; // -1: an inter-wafer transfer
    double start = 0.0; // seconds after the token entered the first region
    double end = 0.0;
    double bytes = 0.0;
    int from = 0;
    int to = 0;
};

// One decode token walked through every region.
struct TokenWalk {
    std::vector<TokenStep> steps;
    std::vector<RegionTiming> timings; // by region index
    double latencyS = 0.0; // first region to the last
    double maxBusyCycles = 0.0; // the busiest region's (stacked: the busiest band's, all its tiers)
    double fmacsPerToken = 0.0;
    double flopsPerToken = 0.0;
    double interWaferS = 0.0; // of the latency, crossing wafers
    double hopS = 0.0; // ... and between regions on a wafer
};

// Walks the token through the regions in `order`: each starts when the previous group is done
// and the token has crossed the fabric (or the systems' I/O to the next wafer), or beside the
// previous region when both read the same input.
TokenWalk walkToken(const Context& context, const std::vector<int>& order, std::int64_t position)
{
    const ExecutionPlan& plan = context.plan;
    const double clock = context.clockHz;
    const DecodeRegions decode(context.graph, plan, context.system);
    TokenWalk walk;
    walk.timings.resize(plan.regions.size());
    double clockS = 0.0; // time at which the current group may start
    double groupStart = 0.0;
    double groupEnd = 0.0;
    double groupLead = 0.0; // decode kernels: the group's input reaches the next op beside after this
    int previous = -1;
    // The token's id comes back from the previous token's argmax.
    groupEnd = decode.feedbackCycles() * context.hop / clock;
    walk.hopS += groupEnd;
    for (int index : order) {
        const Region& region = plan.regions[std::size_t(index)];
        RegionTiming& timing = walk.timings[std::size_t(index)];
        timing = timeRegion(context, decode, region, position);
        walk.maxBusyCycles = std::max(walk.maxBusyCycles, timing.busyCycles);
        walk.fmacsPerToken += timing.fmacs;
        walk.flopsPerToken += timing.flops;
        double start = 0.0;
        if (previous >= 0 && runsBesidePrevious(context, plan.regions[std::size_t(previous)], region)) {
            // Beside the previous op, on the same input, which the decode kernels pass through
            // the group's earlier regions a column a cycle (after the first one's norm).
            start = groupStart;
            if (timing.decodeKernel && walk.timings[std::size_t(previous)].decodeKernel) {
                start += groupLead / clock;
                groupLead += double(region.rect.w) * context.hop;
            }
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
                    const double transferS = context.system.interSystemLatencyS + bytes / context.system.ioBytesPerS;
                    walk.steps.push_back({ -1, clockS, clockS + transferS, bytes, before.system, region.system });
                    walk.interWaferS += transferS;
                    clockS += transferS;
                } else {
                    const bool lanes = timing.decodeKernel && walk.timings[std::size_t(previous)].decodeKernel;
                    const double gapS = (lanes ? decode.handOffCycles(before, region)
                                               : manhattanGap(before.rect, region.rect) * context.hop)
                        / clock;
                    walk.hopS += gapS;
                    clockS += gapS;
                }
            }
            start = clockS;
            groupStart = start;
            groupLead = timing.leadCycles + double(region.rect.w) * context.hop;
        }
        const double end = start + timing.latencyCycles / clock;
        groupEnd = std::max(groupEnd, end);
        walk.steps.push_back({ index, start, end, 0.0, 0, 0 });
        previous = index;
    }
    walk.latencyS = groupEnd;
    if (plan.stackedLayers) {
        // Stacked tiers share their band's PEs: each token keeps a band busy for all its tiers.
        std::map<std::pair<int, int>, double> bands; // (wafer, first row) -> busy cycles per token
        for (int index : order) {
            const Region& region = plan.regions[std::size_t(index)];
            bands[{ region.system, region.rect.y }] += walk.timings[std::size_t(index)].busyCycles;
        }
        for (const auto& [band, cycles] : bands)
            walk.maxBusyCycles = std::max(walk.maxBusyCycles, cycles);
    }
    return walk;
}

// Decode rate per user and for all users, time to first token for `prompt` tokens, the
// sequences per second (`draftPromptS`: a draft model's own prompt, on PEs it shares with the
// target), the FLOPs and the utilization.
void fillDecodeFigures(Metrics& metrics, const Context& context, const TokenWalk& walk, int users, std::int64_t prompt,
    double aggregate, double draftPromptS)
{
    const ExecutionPlan& plan = context.plan;
    const std::int64_t sequence = std::max<std::int64_t>(1, context.graph.config.sequenceLength);
    const double intervalS = walk.maxBusyCycles / context.clockHz; // the busiest region's time per token
    metrics.numCsx = plan.numSystems;
    metrics.numSystems = plan.numSystems;
    metrics.users = users;
    metrics.promptTokens = prompt;
    metrics.stepTimeS = double(users) / aggregate;
    metrics.tokensPerStep = double(users);
    metrics.aggregateTokensPerS = aggregate;
    metrics.tokensPerS = aggregate / double(users);
    metrics.tokenIntervalS = intervalS;
    metrics.timeToFirstTokenS = walk.latencyS + double(prompt - 1) * intervalS;
    // A sequence: its prompt, then as many generated tokens as fit the context.
    const double generated = double(std::max<std::int64_t>(1, sequence - prompt));
    metrics.samplesPerS = double(users) / (metrics.timeToFirstTokenS + draftPromptS + generated * metrics.stepTimeS);
    metrics.peakFlopsPerS = context.system.wafer.peakFlopsPerS() * plan.numSystems;
    metrics.modelFlopsPerStep = walk.flopsPerToken * double(users);
    metrics.hardwareFlopsPerStep = metrics.modelFlopsPerStep;
    metrics.linkBytesPerS = context.system.ioBytesPerS;
    metrics.linkBound = Bound::Io;
    const double usablePes = double(plan.usable.area()) * plan.numSystems;
    metrics.utilization.compute = std::min(
        1.0, walk.fmacsPerToken * double(users) / (usablePes * context.simd * metrics.stepTimeS * context.clockHz));
    metrics.utilization.io = plan.numSystems > 1 ? std::min(1.0, walk.interWaferS / walk.latencyS) : 0.0;
    metrics.utilization.fabric = std::min(1.0, walk.hopS / walk.latencyS);
}

// Layers: each region's share of the token's latency, the hand-off before it included (the
// shares add up to the latency); side-by-side ops overlap, so each counts only the time past the
// ones before it. Compute bound while the FMAC (or SIMD) cycles are the
// larger part of the region's latency; otherwise hops, chains and launch (latency) hold the token.
void addTokenLayers(Metrics& metrics, const Context& context, const TokenWalk& walk, int users)
{
    double covered = 0.0;
    for (const TokenStep& step : walk.steps) {
        LayerMetrics layer;
        layer.timeS = std::max(0.0, step.end - covered); // with the hand-off before it
        covered = std::max(covered, step.end);
        if (step.region < 0) {
            layer.name = "wafer " + std::to_string(step.from) + " -> " + std::to_string(step.to);
            layer.kind = LayerKind::WaferLink;
            layer.bound = Bound::Io;
        } else {
            const Region& region = context.plan.regions[std::size_t(step.region)];
            const RegionTiming& timing = walk.timings[std::size_t(step.region)];
            const Op& op = context.graph.ops[std::size_t(region.op)];
            layer.name = region.opName;
            layer.kind = layerKindOf(op.kind);
            layer.region = step.region;
            layer.params = op.nonzeroParams;
            layer.flops = timing.flops * double(users);
            layer.utilization = std::min(1.0,
                timing.fmacs
                    / (double(std::max<std::int64_t>(1, region.rect.area())) * context.simd * timing.latencyCycles));
            layer.bound = timing.busyCycles >= 0.5 * timing.latencyCycles ? Bound::Compute : Bound::Latency;
        }
        metrics.layers.push_back(layer);
    }
}

// Timeline: the prompt, then the decode steps; one lane per region and per wafer link.
void recordTimeline(RunResult& result, const Context& context, const TokenWalk& walk, int users, std::int64_t prompt)
{
    Metrics& metrics = result.metrics;
    const double intervalS = walk.maxBusyCycles / context.clockHz;
    const double ttft = metrics.timeToFirstTokenS;
    for (int decode = -1; decode < context.options.maxSteps; ++decode) {
        const bool prefill = decode < 0;
        const double tokenStart = prefill ? 0.0 : ttft + double(decode) * metrics.stepTimeS;
        for (std::size_t index = 0; index < walk.steps.size(); ++index) {
            const TokenStep& step = walk.steps[index];
            TimelineEvent event;
            event.lane = step.region < 0 ? LaneKind::WaferLink : LaneKind::Region;
            event.laneIndex = step.region < 0 ? step.from : step.region;
            event.phase = prefill ? Phase::Prefill : Phase::Decode;
            event.layer = int(index);
            event.iteration = std::max(0, decode);
            event.start = tokenStart + step.start;
            // The prompt keeps each region busy for its share of every prompt token.
            const double busyS
                = step.region < 0 ? 0.0 : walk.timings[std::size_t(step.region)].busyCycles / context.clockHz;
            event.end = tokenStart + step.end + (prefill ? double(prompt - 1) * std::max(busyS, intervalS) : 0.0);
            event.end = std::min(event.end, prefill ? ttft : tokenStart + metrics.stepTimeS + step.end);
            event.bytes = step.bytes * (prefill ? double(prompt) : double(users));
            event.flops = step.region < 0
                ? 0.0
                : walk.timings[std::size_t(step.region)].flops * (prefill ? double(prompt) : double(users));
            result.timeline.events.push_back(event);
        }
        if (!prefill)
            metrics.stepTimesS.push_back(metrics.stepTimeS);
    }
    for (const TimelineEvent& event : result.timeline.events)
        result.timeline.span = std::max(result.timeline.span, event.end);
}

// Speculative decoding: where the draft runs, the tokens it drafts a pass, and what a pass yields
// and takes. Off its own wafers, the draft adds to the systems the run uses.
void noteSpeculation(Metrics& metrics, const Context& context, const SpeculativeDecode& speculative,
    double targetLatencyS, double intervalS)
{
    const Speculation& s = context.calibration.speculation;
    metrics.speculative = speculative;
    if (speculative.draftTokens == 0) {
        metrics.notes.push_back("speculative decoding (software profile " + context.calibration.profile + "): at an "
            + "acceptance rate of " + formatFixed(s.acceptanceRate, 2) + ", drafting with " + speculative.draft
            + " does not pay here"
            + (speculative.draftTokenS > 0.0
                    ? " (" + formatFixed(speculative.draftTokenS * 1e6, 1) + " us a draft token)"
                    : std::string())
            + ": the target decodes alone and no draft is placed");
        return;
    }
    if (!speculative.sharesWafer) {
        metrics.numSystems += speculative.draftWafers;
        metrics.numCsx = metrics.numSystems;
        metrics.peakFlopsPerS = context.system.wafer.peakFlopsPerS() * metrics.numSystems;
    }
    const std::string where = speculative.sharesWafer
        ? "in the SRAM the target leaves free on wafer " + std::to_string(speculative.wafer)
        : "on " + std::to_string(speculative.draftWafers) + " wafer" + (speculative.draftWafers == 1 ? "" : "s")
            + " of its own (too little SRAM is free beside the target)";
    metrics.notes.push_back("speculative decoding (software profile " + context.calibration.profile + "): the draft "
        + speculative.draft + " runs " + where + " and drafts " + std::to_string(speculative.draftTokens)
        + " tokens a pass (" + formatFixed(speculative.draftTokenS * 1e6, 1) + " us each); the target checks them"
        + " with its own last token back to back (" + formatFixed(targetLatencyS * 1e6, 1) + " us, then "
        + formatFixed(intervalS * 1e6, 1) + " us a position). At an acceptance rate of "
        + formatFixed(s.acceptanceRate, 2) + " (" + s.acceptanceSource + ") a pass of "
        + formatFixed(speculative.passS * 1e6, 1) + " us yields " + formatFixed(speculative.tokensPerPass, 2)
        + " tokens: " + formatFixed(metrics.tokensPerS, 0) + " tokens/s against "
        + formatFixed(speculative.targetTokensPerS, 0) + " without a draft");
}

} // namespace

Expected<RunResult> runInference(const Context& context)
{
    const std::vector<int> order = executionOrder(context.plan);
    if (order.empty())
        return Diagnostic { "<plan>", 0, 0, "the inference plan has no regions", Diagnostic::Kind::Internal };
    const std::int64_t sequence = std::max<std::int64_t>(1, context.graph.config.sequenceLength);
    const std::int64_t prompt
        = context.options.promptTokens > 0 ? context.options.promptTokens : std::min<std::int64_t>(1024, sequence);
    if (prompt > sequence)
        return Diagnostic { "--prompt_tokens", 0, 0,
            "a prompt of " + std::to_string(prompt) + " tokens does not fit the configured context of "
                + std::to_string(sequence) + " tokens the KV cache is sized for",
            Diagnostic::Kind::CannotMap };
    // The token timed attends `prompt` positions: the step that takes the prompt's last token
    // and generates the first.
    const TokenWalk walk = walkToken(context, order, prompt - 1);
    const double intervalS = walk.maxBusyCycles / context.clockHz; // the busiest region's time per token
    const int users = std::max(1, context.options.users);
    // A pass: one token, or under speculative decoding the tokens of a draft and its check.
    double passTokens = 1.0;
    double passS = walk.latencyS;
    double passBusyS = intervalS; // the busiest region's (band's) share of a pass
    double draftPromptS = 0.0;
    std::optional<SpeculativeDecode> speculative;
    if (context.calibration.mechanisms.speculativeDecoding == SpeculativeDecoding::DraftModel) {
        const Speculation& s = context.calibration.speculation;
        // At an acceptance rate of 0 a pass yields one token whatever is drafted: no draft is compiled.
        DraftTiming none;
        Expected<DraftTiming> draft = s.acceptanceRate > 0.0 ? timeDraft(context, prompt) : Expected<DraftTiming>(none);
        if (!draft)
            return draft.error();
        const DraftChoice choice = s.acceptanceRate > 0.0 ? chooseDraftTokens(s.acceptanceRate, s.maxDraftTokens, users,
                                       walk.latencyS, intervalS, draft->latencyS, draft->intervalS, draft->sharesWafer)
                                                          : DraftChoice { 0, 1.0, walk.latencyS, intervalS };
        passTokens = choice.tokensPerPass;
        passS = choice.passS;
        passBusyS = choice.busyS;
        if (choice.draftTokens > 0 && draft->sharesWafer)
            draftPromptS = draft->latencyS + double(prompt - 1) * draft->intervalS;
        const bool drafts = choice.draftTokens > 0;
        speculative = SpeculativeDecode { s.draftParams, drafts ? draft->wafers : 0, drafts && draft->sharesWafer,
            drafts ? draft->wafer : 0, choice.draftTokens, s.acceptanceRate, choice.tokensPerPass, draft->latencyS,
            draft->intervalS, choice.passS, 1.0 / walk.latencyS };
    }
    const double aggregate
        = std::min(double(users) * passTokens / passS, passBusyS > 0.0 ? passTokens / passBusyS : 1e300);

    RunResult result;
    Metrics& metrics = result.metrics;
    fillDecodeFigures(metrics, context, walk, users, prompt, aggregate, draftPromptS);
    if (speculative)
        noteSpeculation(metrics, context, *speculative, walk.latencyS, intervalS);
    addTokenLayers(metrics, context, walk, users);
    if (std::optional<Diagnostic> refused
        = reserveTimeline(result.timeline, walk.steps.size(), context.options.maxSteps + 1))
        return *refused;
    recordTimeline(result, context, walk, users, prompt);
    if (users > 1 && double(users) * passTokens / passS > passTokens / passBusyS)
        metrics.notes.push_back(std::to_string(users) + " users fill the pipeline: the busiest "
            + (context.plan.stackedLayers ? "band of stacked tiers (" : "region (")
            + std::to_string(int(walk.maxBusyCycles)) + " cycles per token) caps the aggregate rate");
    finishMetrics(metrics, context);
    return result;
}

} // namespace waferscope::core::engine::detail
