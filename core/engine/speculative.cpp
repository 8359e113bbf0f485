// No header of its own: defines placeDraft (engine.h) and the draft model's timing (enginedetail.h).
// Speculative decoding (Calibration::speculation): the draft model compiled beside the target
// and timed for one token, and the number of tokens it drafts a pass.
#include "core/engine/enginedetail.h"
#include "core/model/builtinsamples.h"
#include "core/model/modelloader.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace waferscope::core::engine {

namespace detail {

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
    const auto busy = [&](int k) {
        return draftShares ? double(k + 1) * targetIntervalS + double(k) * draftIntervalS
                           : std::max(double(k + 1) * targetIntervalS, double(k) * draftIntervalS);
    };
    const auto rate = [&](const DraftChoice& choice) {
        const double started = double(std::max(1, users)) * choice.tokensPerPass / choice.passS;
        return choice.busyS > 0.0 ? std::min(started, choice.tokensPerPass / choice.busyS) : started;
    };
    DraftChoice best { 0, 1.0, targetLatencyS, busy(0) };
    for (int k = 1; k <= most; ++k) {
        // k draft tokens one after another, then the target's last token and the k drafted ones
        // back to back, as it takes a prompt: the first at its latency, each further one an interval.
        const DraftChoice choice { k, tokensPerPass(acceptance, k),
            double(k) * draftLatencyS + targetLatencyS + double(k) * targetIntervalS, busy(k) };
        if (rate(choice) > rate(best))
            best = choice;
    }
    return best;
}

std::optional<Diagnostic> draftMismatch(
    const ModelGraph& target, const ModelGraph& draft, const Calibration& calibration)
{
    const Speculation& speculation = calibration.speculation;
    const ModelConfig& proposer = draft.config;
    std::string problem;
    if (!isDecoderLanguageModel(proposer.family))
        problem = "is of family " + std::string(toString(proposer.family))
            + ", expected a decoder-only language model (the draft proposes the tokens its target checks)";
    else if (proposer.vocabSize != target.config.vocabSize)
        problem = "cannot draft for " + target.config.name + " (" + target.config.fileName
            + "): their vocabulary sizes must match (the target checks the draft's tokens), got "
            + std::to_string(proposer.vocabSize) + " and " + std::to_string(target.config.vocabSize);
    if (problem.empty())
        return std::nullopt;
    return Diagnostic { speculation.draftFile, speculation.draftLine, speculation.draftColumn,
        "the draft model " + speculation.draftParams + " of software profile " + calibration.profile + " " + problem };
}

Expected<DraftTiming> timeDraft(const Context& context, std::int64_t prompt)
{
    std::shared_ptr<const DraftPlacement> placed = context.options.draft;
    if (!placed) {
        Expected<std::shared_ptr<const DraftPlacement>> placing
            = placeDraft(context.plan, context.system, context.calibration, context.options);
        if (!placing)
            return placing.error();
        placed = *placing;
    }
    if (std::optional<Diagnostic> mismatch = draftMismatch(context.graph, placed->graph, context.calibration))
        return *mismatch;
    const Speculation& speculation = context.calibration.speculation;
    Calibration plain = context.calibration; // the draft itself decodes one token a pass
    plain.mechanisms.speculativeDecoding = SpeculativeDecoding::Off;
    RunOptions token;
    token.mode = RunMode::Inference;
    token.promptTokens = std::min<std::int64_t>(prompt, std::max<std::int64_t>(1, placed->graph.config.sequenceLength));
    const Expected<RunResult> ran = run(placed->plan, placed->graph, context.system, token, plain);
    if (!ran) {
        Diagnostic error = ran.error();
        error.message = "the draft model " + speculation.draftParams + " of software profile "
            + context.calibration.profile + ": " + error.message;
        return error;
    }
    if (!(ran->metrics.tokensPerS > 0.0))
        return Diagnostic { "samples/" + speculation.draftParams, 0, 0,
            "the draft model " + speculation.draftParams + " decodes no token on " + context.system.displayName,
            Diagnostic::Kind::Internal };
    DraftTiming draft;
    draft.latencyS = 1.0 / ran->metrics.tokensPerS;
    draft.intervalS = ran->metrics.tokenIntervalS;
    draft.wafers = placed->plan.numSystems;
    draft.sharesWafer = placed->sharesWafer;
    draft.wafer = placed->wafer;
    return draft;
}

} // namespace detail

Expected<std::shared_ptr<const DraftPlacement>> placeDraft(
    const ExecutionPlan& target, const SystemSpec& system, const Calibration& calibration, const RunOptions& options)
{
    const Speculation& speculation = calibration.speculation;
    const std::string where = "samples/" + speculation.draftParams;
    const auto located = [&](const Diagnostic& cause) {
        Diagnostic error = cause;
        error.message = "the draft model " + speculation.draftParams + " of software profile " + calibration.profile
            + ": " + cause.message;
        return error;
    };
    const std::optional<std::string_view> text = builtinSample(speculation.draftParams);
    if (!text)
        return Diagnostic { "--calibration", 0, 0,
            "software profile " + calibration.profile + " drafts with " + speculation.draftParams
                + ", which is not a built-in sample" };
    Expected<ModelConfig> config = readParamsText(*text, where);
    if (!config)
        return located(config.error());
    auto draft = std::make_shared<DraftPlacement>();
    draft->graph = buildModelGraph(*config);
    Calibration plain = calibration; // the draft itself decodes one token a pass
    plain.mechanisms.speculativeDecoding = SpeculativeDecoding::Off;
    RunOptions token;
    token.mode = RunMode::Inference;
    token.promptTokens = std::min<std::int64_t>(options.promptTokens > 0 ? options.promptTokens : 1024,
        std::max<std::int64_t>(1, draft->graph.config.sequenceLength));
    CompileOptions compile;
    compile.mode = RunMode::Inference;
    const std::int64_t sram = system.wafer.sramPerPeBytes;
    // First in the SRAM the target leaves free on the wafer with the most of it; else on wafers
    // of its own.
    const std::vector<std::int64_t> fullest = fullestPeBytes(target);
    const auto freest = std::min_element(fullest.begin(), fullest.end());
    const std::int64_t free = target.sramPerPeBytes - *freest;
    Expected<ExecutionPlan> plan = Diagnostic { where, 0, 0, "no SRAM left beside the target" };
    if (free > 0) {
        compile.sramReservePerPe = sram - free;
        plan = compileFor(draft->graph, system, compile, plain, token);
        draft->sharesWafer = plan && plan->numSystems == 1;
        draft->wafer = int(freest - fullest.begin());
    }
    if (!draft->sharesWafer) {
        compile.sramReservePerPe = sram - target.sramPerPeBytes;
        plan = compileFor(draft->graph, system, compile, plain, token);
        if (!plan)
            return located(plan.error());
        draft->wafer = target.numSystems;
    }
    draft->plan = std::move(plan).value();
    return std::shared_ptr<const DraftPlacement>(std::move(draft));
}

} // namespace waferscope::core::engine
