// Weight streaming's checkpoint strategies: the choice on hand-built profiles (every number worked out in the
// comments), and a long-context Llama on a CS-3 whose run carries what the plan chose, in time and in bytes.
#include "testing.h"

#include "corefixtures.h"

#include "core/compiler/checkpointing.h"
#include "core/engine/engine.h"

#include <cmath>
#include <filesystem>

using namespace waferscope::core;
using namespace waferscope::core::compiler;
using waferscope::test::sharedDir;

namespace {

// Eight stages of 10 bytes per sample each, every op with a working set of 5 bytes, 60 bytes of SRAM; each stage
// 100 FLOPs forward and 200 backward per sample and 1,000 weight bytes; one sample per step.
StreamingProfile eightStages()
{
    StreamingProfile profile;
    profile.stageOutputBytes.assign(8, 10);
    profile.stageForwardFlopsPerSample.assign(8, 100.0);
    profile.stageWeightBytes.assign(8, 1000.0);
    profile.workingBytes.assign(8, 5);
    profile.sramBytes = 60;
    profile.samplesPerSystem = 1;
    profile.forwardFlopsPerSample = 800.0;
    profile.backwardFlopsPerSample = 1600.0;
    profile.weightBytesPerPass = 8000.0;
    profile.peakFlopsPerS = 1000.0;
    profile.weightStreamBytesPerS = 1000.0;
    profile.checkpointBytesPerS = 10.0;
    return profile;
}

} // namespace

WS_TEST(allBlockOutputsStayWhenTheyFit)
{
    StreamingProfile profile = eightStages();
    profile.sramBytes = 170; // 80 bytes of block outputs + 5 of working set: two samples fit
    const CheckpointChoice choice = chooseCheckpointing(profile);
    WS_CHECK(choice.strategy == CheckpointStrategy::AllBlocks);
    WS_CHECK_EQ(choice.maxMicroBatch, 2);
    WS_CHECK(choice.why.empty());
}

WS_TEST(theFasterOfEveryKAndMemoryxIsChosen)
{
    // 80 + 5 bytes do not fit in 60. Every k: k = 2 keeps stages 1, 3, 5, 7 (40) plus one recomputed stage held
    // (10): 50 + 5 fits one sample; recomputing 4 stages is 400 FLOPs. Its step: weights (2 x 8000 + 4 x 1000) /
    // 1000 = 20 s against compute (2 x 800 + 1600 + 400) / 1000 = 3.6 s: 20 s. (k = 3 and 4 also keep 50 bytes,
    // recompute more and stream more: 21 and 22 s.) MemoryX holds 2 x 10 + 5: two samples, but one sample per
    // step: micro-batch 1; it writes and reads stages 0..6 (70 bytes) at 10 B/s: 2 x 70 / 10 = 14 s on top of the
    // 16 s of weights: 30 s. Every k wins.
    StreamingProfile profile = eightStages();
    CheckpointChoice choice = chooseCheckpointing(profile);
    WS_CHECK(choice.strategy == CheckpointStrategy::EveryK);
    WS_CHECK_EQ(choice.every, 2);
    WS_CHECK_EQ(choice.keptBytesPerSample, 50);
    WS_CHECK_NEAR(choice.recomputeFlopsPerSample, 400.0, 1e-12);
    WS_CHECK_NEAR(choice.estimatedStepS, 20.0, 1e-12);
    WS_CHECK_CONTAINS(choice.why, "chosen: every_k");

    // A port ten times faster makes MemoryX's step 16 + 1.4 = 17.4 s: it wins.
    profile.checkpointBytesPerS = 100.0;
    choice = chooseCheckpointing(profile);
    WS_CHECK(choice.strategy == CheckpointStrategy::MemoryX);
    WS_CHECK_EQ(choice.memoryxBytesPerSample, 70);
    WS_CHECK_EQ(choice.keptBytesPerSample, 20);
    WS_CHECK_NEAR(choice.estimatedStepS, 17.4, 1e-12);
}

WS_TEST(whenNothingFitsTheMessageSaysWhichLimitBinds)
{
    // One op needs 70 bytes for a single sample: no strategy can hold it in 60.
    StreamingProfile profile = eightStages();
    profile.workingBytes[3] = 70;
    const CheckpointChoice choice = chooseCheckpointing(profile);
    WS_CHECK_EQ(choice.maxMicroBatch, 0);
    WS_CHECK_CONTAINS(choice.why, "the largest op alone needs 70.0 B for one sample");
}

WS_TEST(longContextLlamaTrainsOnOneCs3)
{
    const std::filesystem::path file = std::filesystem::path(sharedDir())
        / "modelzoo-release-2.10.0/nlp/llama/configs/params_llama3p1_8b_msl_128k.yaml";
    if (!std::filesystem::exists(file))
        WS_SKIP("Model Zoo 2.10.0 corpus not found");
    const ModelGraph graph = waferscope::test::load(file.string());
    const SystemSpec cs3 = waferscope::test::preset("cs3");
    const ExecutionPlan plan = waferscope::test::plan(graph, cs3);
    WS_REQUIRE(plan.mode == ExecutionMode::WeightStreaming);
    WS_REQUIRE(plan.checkpointStrategy != CheckpointStrategy::AllBlocks);
    // The embedding's and 32 blocks' outputs, each 131,072 tokens x 4,096 x 2 bytes (35.2 GB), next to the FFN's
    // working set for one sample (its 4,096 inputs and 14,336 outputs per token: 4.8 GB), exceed what the plan
    // may use of the wafer's SRAM.
    const double blockOutput = 131072.0 * 4096.0 * 2.0;
    const double ffnWorking = 131072.0 * (4096.0 + 14336.0) * 2.0;
    WS_CHECK(33.0 * blockOutput + ffnWorking > double(plan.usable.area()) * double(plan.sramPerPeBytes));

    engine::RunOptions options;
    options.maxSteps = 1;
    const Expected<engine::RunResult> run = engine::run(plan, graph, cs3, options);
    WS_REQUIRE(run.hasValue());
    const engine::Metrics& m = run->metrics;
    WS_CHECK(m.checkpointStrategy == plan.checkpointStrategy);
    WS_CHECK_NEAR(m.recomputeFlopsPerStep, m.hardwareFlopsPerStep - m.modelFlopsPerStep, 1e-12);
    // The batch of 4 samples: the 33 outputs every later stage starts from go out and come back (the LM head's
    // stage, the last, feeds the fused loss and keeps nothing).
    const double batch = 4.0;
    if (plan.checkpointStrategy == CheckpointStrategy::MemoryX) {
        WS_CHECK_NEAR(m.checkpointBytesPerStep, 2.0 * 33.0 * blockOutput * batch, 1e-9);
        double onTimeline = 0.0;
        for (const engine::TimelineEvent& event : run->timeline.events)
            if (event.lane == engine::LaneKind::CsxIo
                && (event.phase == engine::Phase::CheckpointIn || event.phase == engine::Phase::CheckpointOut))
                onTimeline += event.bytes;
        WS_CHECK_NEAR(onTimeline, m.checkpointBytesPerStep, 1e-9);
        // The port carries them at its rate at least: the step is no shorter than that.
        WS_CHECK(m.stepTimeS >= m.checkpointBytesPerStep / cs3.ioBytesPerS);
    }
    // Each block is recomputed from its checkpoint at least: the forward once more.
    WS_CHECK(m.recomputeFlopsPerStep >= graph.fwdFlopsPerSample * batch * 0.99);
}
