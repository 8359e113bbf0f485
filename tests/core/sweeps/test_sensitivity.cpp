// What a result depends on: each ranged hardware value and calibration constant varied alone.
// The effects are checked against closed forms: a compute-bound step scales with 1/clock, a
// stream-bound one with bytes / bandwidth, and the launch overhead's range spans the published
// figure it was fitted to.
#include "corefixtures.h"
#include "testing.h"

#include "core/sweeps/sensitivity.h"

#include <algorithm>
#include <cmath>

using namespace waferscope::core;
using namespace waferscope::core::engine;
using namespace waferscope::core::sweeps;
using waferscope::test::load;
using waferscope::test::preset;
using waferscope::test::sample;

namespace {

Sensitivity sensitivityOf(const std::string& file, const std::string& system, RunMode mode)
{
    const ModelGraph graph = load(sample(file));
    CompileOptions compile;
    compile.mode = compileModeFor(mode);
    RunOptions run;
    run.mode = mode;
    Expected<Sensitivity> result = runSensitivity(graph, preset(system), compile, run, builtinCalibration());
    if (!result)
        throw std::runtime_error(result.error().format());
    return std::move(result).value();
}

const FactorEffect& factor(const Sensitivity& result, const std::string& name)
{
    const auto it = std::find_if(
        result.factors.begin(), result.factors.end(), [&](const FactorEffect& effect) { return effect.name == name; });
    if (it == result.factors.end())
        throw std::runtime_error("no factor " + name);
    return *it;
}

} // namespace

WS_TEST(aComputeBoundStepScalesWithOneOverTheClock)
{
    // GPT-2 small trains layer-pipelined on one CS-2: every part of its step is cycles.
    const Sensitivity result = sensitivityOf("gpt2_small.yaml", "cs2", RunMode::Train);
    const FactorEffect& clock = factor(result, "cs2.wafer.clock_hz");
    WS_CHECK_EQ(clock.value, 1.1e9);
    WS_CHECK_NEAR(clock.figureAtLow / result.baseline, clock.lowValue / clock.value, 1e-9);
    WS_CHECK_NEAR(clock.figureAtHigh / result.baseline, clock.highValue / clock.value, 1e-9);
}

WS_TEST(aStreamBoundStepScalesWithBytesOverBandwidth)
{
    // The 1T sample on CS-3 streams part of its weights from MemoryX's flash tier, which binds:
    // 1/samples_per_s moves by (flash bytes per sample) x the change of 1/bandwidth.
    const ModelGraph graph = load(sample("gpt_1t_synthetic.yaml"));
    const SystemSpec cs3 = preset("cs3");
    const Expected<ExecutionPlan> plan = compile(graph, cs3, {});
    WS_REQUIRE(plan.hasValue());
    const Expected<RunResult> base = run(*plan, graph, cs3, {});
    WS_REQUIRE(base.hasValue());
    const double samples = base->metrics.samplesPerS * base->metrics.stepTimeS;
    const double flashPerSample = base->metrics.flashStreamedBytesPerStep / samples;
    WS_REQUIRE(flashPerSample > 0.0);
    const Sensitivity result = sensitivityOf("gpt_1t_synthetic.yaml", "cs3", RunMode::Train);
    const FactorEffect& flash = factor(result, "cs3.memoryx.flash_bandwidth_bytes_per_s");
    WS_CHECK_NEAR(result.baseline, base->metrics.samplesPerS, 1e-12);
    for (const auto& [bandwidth, figure] :
        { std::pair { flash.lowValue, flash.figureAtLow }, std::pair { flash.highValue, flash.figureAtHigh } }) {
        const double expected = flashPerSample * (1.0 / bandwidth - 1.0 / flash.value);
        WS_CHECK_NEAR(1.0 / figure - 1.0 / result.baseline, expected, 0.005 * std::fabs(expected));
    }
    // Flash binds here: its factor has the largest effect.
    WS_CHECK_EQ(result.factors.front().name, std::string("cs3.memoryx.flash_bandwidth_bytes_per_s"));
}

WS_TEST(theLaunchOverheadRangeSpansThePublishedFigure)
{
    // region_launch_cycles was fitted to "about 1,800 tokens/s"; its range is that figure read
    // as 1,750 to 1,850.
    const Sensitivity result = sensitivityOf("llama3_8b.yaml", "cs3", RunMode::Inference);
    WS_CHECK_EQ(result.figure, std::string("tokens_per_s"));
    const FactorEffect& launch = factor(result, "calibration.region_launch_cycles");
    WS_CHECK_NEAR(launch.figureAtLow, 1850.0, 0.005 * 1850.0);
    WS_CHECK_NEAR(launch.figureAtHigh, 1750.0, 0.005 * 1750.0);
}

WS_TEST(factorsComeSortedByImpactWithTheirReasons)
{
    const Sensitivity result = sensitivityOf("gpt3_xl.yaml", "cs2", RunMode::Train);
    WS_REQUIRE(result.factors.size() >= 5);
    for (std::size_t i = 0; i < result.factors.size(); ++i) {
        const FactorEffect& effect = result.factors[i];
        WS_CHECK(effect.name.rfind("cs2.", 0) == 0 || effect.name.rfind("calibration.", 0) == 0);
        WS_CHECK(!effect.reason.empty());
        WS_CHECK(effect.lowValue <= effect.value && effect.value <= effect.highValue);
        WS_CHECK(result.low <= std::min(effect.figureAtLow, effect.figureAtHigh));
        WS_CHECK(result.high >= std::max(effect.figureAtLow, effect.figureAtHigh));
        if (i > 0)
            WS_CHECK(result.factors[i - 1].impact() >= effect.impact());
    }
}

WS_TEST(aSweepCanBeCancelled)
{
    const SystemSpec cs2 = preset("cs2");
    SweepOptions options;
    options.cancelled = [] { return true; };
    const FigureFunction figure
        = [](const SystemSpec& s, const Calibration&) -> Expected<double> { return s.wafer.clockHz; };
    const Expected<Sensitivity> result = sweep("clock", figure, cs2, builtinCalibration(), options);
    WS_REQUIRE(!result.hasValue());
    WS_CHECK_CONTAINS(result.error().message, "cancelled");
}
