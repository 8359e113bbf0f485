// Speculative decoding as a software profile runs it: the draft model compiled beside the target,
// its tokens and the target's check composed into a pass, the tokens a pass yields, the number of
// drafted tokens chosen, and the acceptance rate swept by the sensitivity.
#include "testing.h"

#include "core/compiler/compiler.h"
#include "core/engine/calibration.h"
#include "core/engine/enginedetail.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/builtinsamples.h"
#include "core/model/modelloader.h"
#include "core/sweeps/sensitivity.h"

#include <cmath>

using namespace waferscope::core;
using namespace waferscope::core::engine;

namespace {

ModelGraph sample(const std::string& name)
{
    const std::optional<std::string_view> text = builtinSample(name);
    WS_REQUIRE(text.has_value());
    Expected<ModelConfig> config = readParamsText(*text, name);
    WS_REQUIRE(config.hasValue());
    return buildModelGraph(*config);
}

SystemSpec cs3()
{
    Expected<SystemSpec> system = loadBuiltinPreset("cs3");
    WS_REQUIRE(system.hasValue());
    return *system;
}

// The launch constants with stacked layers and a draft: `draft` proposing up to 8 tokens a pass.
Calibration drafting(const std::string& draft, double acceptance)
{
    Calibration calibration = builtinCalibration();
    calibration.profile = "test-drafting";
    calibration.mechanisms.regionSizing = RegionSizing::Stacked;
    calibration.mechanisms.speculativeDecoding = SpeculativeDecoding::DraftModel;
    calibration.speculation.draftParams = draft;
    calibration.speculation.acceptanceRate = acceptance;
    calibration.speculation.acceptanceSource = "a test";
    calibration.speculation.maxDraftTokens = 8;
    calibration.ranges["acceptance_rate"] = { 0.5, 0.9, "a test's span" };
    return calibration;
}

Calibration alone(Calibration calibration)
{
    calibration.mechanisms.speculativeDecoding = SpeculativeDecoding::Off;
    return calibration;
}

RunOptions decode(int users = 1)
{
    RunOptions options;
    options.mode = RunMode::Inference;
    options.users = users;
    return options;
}

ExecutionPlan planFor(const ModelGraph& graph, const SystemSpec& system, const Calibration& calibration)
{
    CompileOptions options;
    options.mode = RunMode::Inference;
    Expected<ExecutionPlan> plan = compileFor(graph, system, options, calibration);
    WS_REQUIRE(plan.hasValue());
    return *plan;
}

// Tokens a pass in closed form: the geometric series 1 + a + ... + a^k.
double closedForm(double a, int k)
{
    return a == 0.0 ? 1.0 : (1.0 - std::pow(a, k + 1)) / (1.0 - a);
}

} // namespace

WS_TEST(aPassYieldsTheGeometricSumOfAcceptedDrafts)
{
    for (const double a : { 0.0, 0.3, 0.61, 0.75, 0.9 })
        for (int k = 0; k <= 8; ++k)
            WS_CHECK_NEAR(detail::tokensPerPass(a, k), closedForm(a, k), 1e-12);
    // At a = 0.8, five drafted tokens give (1 - 0.8^6) / 0.2 = 3.69 tokens a pass.
    WS_CHECK_NEAR(detail::tokensPerPass(0.8, 5), 3.68928, 1e-5);
}

WS_TEST(aPassIsTheDraftsTokensThenTheTargetsCheckBackToBack)
{
    const SystemSpec system = cs3();
    const ModelGraph target = sample("llama3_8b.yaml");
    const Calibration calibration = drafting("llama3p2_1b.yaml", 0.75);
    const ExecutionPlan plan = planFor(target, system, calibration);
    const Expected<RunResult> drafted = run(plan, target, system, decode(), calibration);
    const Expected<RunResult> single = run(plan, target, system, decode(), alone(calibration));
    WS_REQUIRE(drafted.hasValue() && single.hasValue());
    WS_REQUIRE(drafted->metrics.speculative.has_value());
    WS_CHECK(!single->metrics.speculative.has_value());
    const SpeculativeDecode& s = *drafted->metrics.speculative;
    // The target alone: its latency and the interval at which it takes positions back to back.
    const double latency = 1.0 / single->metrics.tokensPerS;
    const double interval = single->metrics.tokenIntervalS;
    WS_CHECK(interval > 0.0 && interval < latency);
    WS_CHECK_NEAR(s.targetTokensPerS, single->metrics.tokensPerS, 1e-9 * s.targetTokensPerS);
    // The 1B draft fits in the SRAM the 8B leaves on its wafer, and its token is the faster.
    WS_CHECK(s.sharesWafer);
    WS_CHECK_EQ(s.draftWafers, 1);
    WS_CHECK_EQ(drafted->metrics.numSystems, plan.numSystems);
    WS_CHECK(s.draftTokenS > 0.0 && s.draftTokenS < latency);
    const int k = s.draftTokens;
    WS_REQUIRE(k >= 1 && k <= 8);
    const auto pass = [&](int drafts) { return double(drafts) * s.draftTokenS + latency + double(drafts) * interval; };
    WS_CHECK_NEAR(s.passS, pass(k), 1e-9 * s.passS);
    WS_CHECK_NEAR(s.tokensPerPass, closedForm(0.75, k), 1e-12);
    WS_CHECK_NEAR(drafted->metrics.tokensPerS, closedForm(0.75, k) / pass(k), 1e-9 * drafted->metrics.tokensPerS);
    // The k chosen is the best of 0 to 8.
    for (int other = 0; other <= 8; ++other)
        WS_CHECK(closedForm(0.75, other) / pass(other) <= drafted->metrics.tokensPerS * (1.0 + 1e-12));
    // The first token is the target's prefill, the draft's is not on its path.
    WS_CHECK_NEAR(drafted->metrics.timeToFirstTokenS, single->metrics.timeToFirstTokenS, 1e-12);
}

WS_TEST(draftingThatDoesNotPayIsLeftOut)
{
    // At an acceptance rate of 0 a pass yields one token whatever is drafted: no draft is placed.
    const SystemSpec system = cs3();
    const ModelGraph target = sample("llama3_8b.yaml");
    const Calibration calibration = drafting("llama3p2_1b.yaml", 0.0);
    const ExecutionPlan plan = planFor(target, system, calibration);
    const Expected<RunResult> drafted = run(plan, target, system, decode(), calibration);
    const Expected<RunResult> single = run(plan, target, system, decode(), alone(calibration));
    WS_REQUIRE(drafted.hasValue() && single.hasValue());
    WS_REQUIRE(drafted->metrics.speculative.has_value());
    WS_CHECK_EQ(drafted->metrics.speculative->draftTokens, 0);
    WS_CHECK_EQ(drafted->metrics.speculative->draftWafers, 0);
    WS_CHECK_EQ(drafted->metrics.numSystems, single->metrics.numSystems);
    WS_CHECK_NEAR(drafted->metrics.tokensPerS, single->metrics.tokensPerS, 1e-9 * single->metrics.tokensPerS);
    WS_CHECK_CONTAINS(drafted->metrics.notes.back(), "does not pay");
}

WS_TEST(manyUsersDraftOnlyWhileItRaisesTheirRateInAll)
{
    // A pass keeps the busiest band busy for the target's k + 1 positions (and the draft's k tokens
    // on the PEs it shares) for (1 - a^(k+1)) / (1 - a) tokens: with the pipeline full, drafting
    // lowers the rate for all users, and the engine drafts nothing; one user drafts.
    const SystemSpec system = cs3();
    const ModelGraph target = sample("llama3_8b.yaml");
    const Calibration calibration = drafting("llama3p2_1b.yaml", 0.75);
    const ExecutionPlan plan = planFor(target, system, calibration);
    const Expected<RunResult> crowd = run(plan, target, system, decode(100000), calibration);
    const Expected<RunResult> alone1 = run(plan, target, system, decode(), calibration);
    const Expected<RunResult> single = run(plan, target, system, decode(100000), alone(calibration));
    WS_REQUIRE(crowd.hasValue() && single.hasValue() && alone1.hasValue());
    const SpeculativeDecode& one = *alone1->metrics.speculative;
    WS_REQUIRE(one.sharesWafer && one.draftTokens > 0);
    const double k = double(one.draftTokens);
    const double drafted = one.tokensPerPass / ((k + 1.0) * single->metrics.tokenIntervalS + k * one.draftIntervalS);
    WS_CHECK(drafted < 1.0 / single->metrics.tokenIntervalS);
    WS_CHECK_EQ(crowd->metrics.speculative->draftTokens, 0);
    WS_CHECK_NEAR(crowd->metrics.aggregateTokensPerS, single->metrics.aggregateTokensPerS,
        1e-9 * single->metrics.aggregateTokensPerS);
}

WS_TEST(aDraftTooBigForTheFreeSramTakesAWaferOfItsOwn)
{
    // Llama 3.1 70B fills its 4 CS-3 too far for the 8B draft beside it.
    const SystemSpec system = cs3();
    const ModelGraph target = sample("llama3p1_70b.yaml");
    const ModelGraph draft = sample("llama3_8b.yaml");
    const Calibration calibration = drafting("llama3_8b.yaml", 0.75);
    const ExecutionPlan plan = planFor(target, system, calibration);
    const std::vector<std::int64_t> fullest = fullestPeBytes(plan);
    std::int64_t fullestLeast = fullest.front();
    for (const std::int64_t bytes : fullest)
        fullestLeast = std::min(fullestLeast, bytes);
    std::int64_t draftWeights = 0;
    for (const Op& op : draft.ops)
        draftWeights += op.params * 2; // 16-bit
    WS_CHECK(double(draftWeights) > double(plan.sramPerPeBytes - fullestLeast) * double(plan.usable.area()));
    const Expected<RunResult> drafted = run(plan, target, system, decode(), calibration);
    WS_REQUIRE(drafted.hasValue());
    const SpeculativeDecode& s = *drafted->metrics.speculative;
    WS_CHECK(!s.sharesWafer);
    WS_REQUIRE(s.draftTokens > 0);
    WS_CHECK_EQ(s.wafer, plan.numSystems);
    WS_CHECK_EQ(drafted->metrics.numSystems, plan.numSystems + s.draftWafers);
    WS_CHECK_CONTAINS(drafted->metrics.notes.back(), "of its own");
}

WS_TEST(theAcceptanceRateIsAFactorOfTheSensitivity)
{
    const SystemSpec system = cs3();
    const ModelGraph target = sample("llama3_8b.yaml");
    const Calibration calibration = drafting("llama3p2_1b.yaml", 0.75);
    CompileOptions compile;
    compile.mode = RunMode::Inference;
    const Expected<sweeps::Sensitivity> swept = sweeps::runSensitivity(target, system, compile, decode(), calibration);
    WS_REQUIRE(swept.hasValue());
    const sweeps::FactorEffect* rate = nullptr;
    for (const sweeps::FactorEffect& factor : swept->factors)
        if (factor.name == "calibration.acceptance_rate")
            rate = &factor;
    WS_REQUIRE(rate != nullptr);
    WS_CHECK_EQ(rate->lowValue, 0.5);
    WS_CHECK_EQ(rate->highValue, 0.9);
    // More accepted drafts, more tokens a pass.
    WS_CHECK(rate->figureAtHigh > swept->baseline && swept->baseline > rate->figureAtLow);
}
