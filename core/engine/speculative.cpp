// Speculative decoding (Calibration::speculation): the draft model compiled beside the target
// and timed for one token, and the number of tokens it drafts a pass.
#include "core/engine/enginedetail.h"
#include "core/model/builtinsamples.h"
#include "core/model/modelloader.h"

#include <algorithm>
#include <cmath>

namespace waferscope::core::engine::detail {

double tokensPerPass(double acceptance, int draftTokens)
{
    // Each drafted token is kept with probability a while every one before it was; the target
    // adds one token of its own: 1 + a + ... + a^k.
    double tokens = 0.0;
    double kept = 1.0;
    for (int i = 0; i <= draftTokens; ++i) {
        tokens += kept;
        kept *= acceptance;
    }
    return tokens;
}

DraftChoice chooseDraftTokens(double acceptance, int most, int users, double targetLatencyS, double targetIntervalS,
    double draftLatencyS, double draftIntervalS, bool draftShares)
{
    // Tokens per second for all users: as many passes as the users start, up to what the busiest
    // band can take. A pass keeps it busy for the target's k + 1 positions, and where the draft
    // shares its PEs for the draft's k tokens as well (an upper bound: the draft's busiest region
    // counted on the target's busiest band); a draft on wafers of its own is paced by its own.
    const auto rate = [&](const DraftChoice& choice) {
        const double k = double(choice.draftTokens);
        const double busy = draftShares ? (k + 1.0) * targetIntervalS + k * draftIntervalS
                                        : std::max((k + 1.0) * targetIntervalS, k * draftIntervalS);
        const double started = double(std::max(1, users)) * choice.tokensPerPass / choice.passS;
        return busy > 0.0 ? std::min(started, choice.tokensPerPass / busy) : started;
    };
    DraftChoice best { 0, 1.0, targetLatencyS };
    for (int k = 1; k <= most; ++k) {
        // k draft tokens one after another, then the target's last token and the k drafted ones
        // back to back, as it takes a prompt: the first at its latency, each further one an interval.
        const DraftChoice choice { k, tokensPerPass(acceptance, k),
            double(k) * draftLatencyS + targetLatencyS + double(k) * targetIntervalS };
        if (rate(choice) > rate(best))
            best = choice;
    }
    return best;
}

Expected<DraftTiming> timeDraft(const Context& context, std::int64_t prompt)
{
    const Speculation& speculation = context.calibration.speculation;
    const std::string where = "samples/" + speculation.draftParams;
    const auto located = [&](const Diagnostic& cause) {
        Diagnostic error = cause;
        error.message = "the draft model " + speculation.draftParams + " of software profile "
            + context.calibration.profile + ": " + cause.message;
        return error;
    };
    const std::optional<std::string_view> text = builtinSample(speculation.draftParams);
    if (!text)
        return Diagnostic { "--calibration", 0, 0,
            "software profile " + context.calibration.profile + " drafts with " + speculation.draftParams
                + ", which is not a built-in sample" };
    Expected<ModelConfig> config = readParamsText(*text, where);
    if (!config)
        return located(config.error());
    const ModelGraph graph = buildModelGraph(*config);
    // The draft itself decodes one token a pass.
    Calibration plain = context.calibration;
    plain.mechanisms.speculativeDecoding = "off";
    RunOptions token;
    token.mode = RunKind::Inference;
    token.promptTokens = std::min<std::int64_t>(prompt, std::max<std::int64_t>(1, graph.config.sequenceLength));
    CompileOptions options;
    options.mode = RunMode::Inference;
    const std::int64_t sram = context.system.wafer.sramPerPeBytes;
    // First in the SRAM the target leaves free on the wafer with the most of it; else on wafers
    // of its own.
    const ExecutionPlan& target = context.plan;
    const std::vector<std::int64_t> fullest = fullestPeBytes(target);
    const auto freest = std::min_element(fullest.begin(), fullest.end());
    const std::int64_t free = target.sramPerPeBytes - *freest;
    DraftTiming draft;
    Expected<ExecutionPlan> plan = Diagnostic { where, 0, 0, "no SRAM left beside the target" };
    if (free > 0) {
        options.sramReservePerPe = sram - free;
        plan = compileFor(graph, context.system, options, plain, token);
        draft.sharesWafer = plan && plan->numSystems == 1;
        draft.wafer = int(freest - fullest.begin());
    }
    if (!draft.sharesWafer) {
        options.sramReservePerPe = sram - target.sramPerPeBytes;
        plan = compileFor(graph, context.system, options, plain, token);
        if (!plan)
            return located(plan.error());
        draft.wafer = target.numSystems;
    }
    const Expected<RunResult> ran = run(*plan, graph, context.system, token, plain);
    if (!ran)
        return located(ran.error());
    if (!(ran->metrics.tokensPerS > 0.0))
        return Diagnostic { where, 0, 0,
            "the draft model " + speculation.draftParams + " decodes no token on " + context.system.displayName,
            Diagnostic::Kind::Internal };
    draft.latencyS = 1.0 / ran->metrics.tokensPerS;
    draft.intervalS = ran->metrics.tokenIntervalS;
    draft.wafers = plan->numSystems;
    draft.freeBytesPerPe = std::max<std::int64_t>(0, free);
    draft.stacked = plan->stackedLayers;
    return draft;
}

} // namespace waferscope::core::engine::detail
