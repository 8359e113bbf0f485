// Weight streaming against the presets' cluster facts, in closed forms written here: the depth
// of the SwarmX tree from its 1:4 broadcast-reduce nodes, a stream-bound step as bytes over
// bandwidth, and MemoryX's two tiers (the part of a model beyond the DRAM tier streams from
// flash, at the flash tier's rate).
#include "corefixtures.h"
#include "testing.h"

#include "core/engine/engine.h"

#include <algorithm>
#include <cmath>

using namespace waferscope::core;
using namespace waferscope::core::engine;
using namespace waferscope::test;

namespace {

// The 1T sample's parameters, by the closed form in its header (V*h + P*h + L*(...) + 2h).
constexpr double kParams1t = 1'008'014'617'600.0;

// Levels of a tree whose nodes each serve four children, over n systems: ceil(log4 n), and one
// node for a single system. log2 is exact on powers of two, so ceil(log2(n) / 2) is too.
int depthOfOneToFourTree(int systems)
{
    return std::max(1, int(std::ceil(std::log2(double(systems)) / 2.0)));
}

// The first time MemoryX starts sending weights and the first time a CS-X starts receiving
// them: the difference is the SwarmX tree's latency.
double firstStreamCrossing(const RunResult& run)
{
    double memoryx = 1e300;
    double io = 1e300;
    for (const TimelineEvent& e : run.timeline.events) {
        if (e.lane == LaneKind::MemoryX && (e.phase == Phase::StreamIn || e.phase == Phase::FlashStreamIn))
            memoryx = std::min(memoryx, e.start);
        if (e.lane == LaneKind::CsxIo && e.phase == Phase::StreamIn)
            io = std::min(io, e.start);
    }
    return io - memoryx;
}

// Bytes MemoryX sends in step `step` of the timeline, by phase.
double memoryxBytes(const RunResult& run, Phase phase, int step = 0)
{
    double bytes = 0.0;
    for (const TimelineEvent& e : run.timeline.events)
        if (e.lane == LaneKind::MemoryX && e.phase == phase && e.iteration == step)
            bytes += e.bytes;
    return bytes;
}

// Weights streamed in per micro-batch (forward, backward, the forward again where recomputed).
double weightBytesPerMicroBatch(const ExecutionPlan& compiled)
{
    double bytes = 0.0;
    for (const StreamedLayer& layer : compiled.streamed)
        bytes += double(layer.bytesInForward + layer.bytesInBackward + (layer.recomputed ? layer.bytesInForward : 0));
    return bytes;
}

} // namespace

WS_TEST(swarmxDepthFollowsFromItsOneToFourNodes)
{
    // Cerebras's SwarmX glossary: each node is one 1:4 broadcast-reduce (or two 1:2).
    WS_CHECK_EQ(depthOfOneToFourTree(192), 4); // 4^3 = 64 < 192 <= 256 = 4^4
    const SystemSpec cs2 = preset("cs2");
    const SystemSpec cs3 = preset("cs3");
    WS_CHECK_EQ(cs2.swarmx.fanOut, 4);
    WS_CHECK_EQ(cs3.swarmx.fanOut, 4);
    for (int systems : { 1, 2, 4, 5, 16, 17, 64, 65, 192, 256, 1024, 2048 }) {
        WS_CHECK_EQ(cs2.swarmx.levels(systems), depthOfOneToFourTree(systems));
        WS_CHECK_EQ(cs3.swarmx.levels(systems), depthOfOneToFourTree(systems));
    }
    // On the timeline: weights reach each of 192 CS-2 (2048 CS-3) one level latency per level
    // after they leave MemoryX.
    const ModelGraph graph = load(sample("gpt3_xl.yaml"));
    for (const auto& [system, systems] : { std::pair { &cs2, 192 }, std::pair { &cs3, 2048 } }) {
        const ExecutionPlan compiled = plan(graph, *system, RunMode::Train, ExecutionChoice::WeightStreaming, systems);
        const RunResult run = runOrThrow(compiled, graph, *system, RunMode::Train, systems);
        WS_CHECK_NEAR(firstStreamCrossing(run), depthOfOneToFourTree(systems) * system->swarmx.levelLatencyS, 1e-9);
    }
}

WS_TEST(presetTiersHoldFiftyBytesPerParameter)
{
    // Cerebras: 12 TB of DDR4 holds 240 B parameters (CS-2 era); 36 TB of DDR5 720 B and 1.2 PB
    // of flash 24 T (CS-3 era).
    const SystemSpec cs2 = preset("cs2");
    const SystemSpec cs3 = preset("cs3");
    WS_CHECK_NEAR(cs2.memoryx.dramBytes, 12e12, 1e-12);
    WS_CHECK_NEAR(cs2.memoryx.bytesPerParam, 12e12 / 240e9, 1e-12);
    WS_CHECK_NEAR(cs3.memoryx.bytesPerParam, 36e12 / 720e9, 1e-12);
    WS_CHECK_NEAR(cs3.memoryx.bytesPerParam, 1.2e15 / 24e12, 1e-12);
    for (const SystemSpec* system : { &cs2, &cs3 }) {
        WS_CHECK_NEAR(system->memoryx.flashBytes(), system->memoryx.capacityBytes - system->memoryx.dramBytes, 1e-12);
        WS_CHECK(system->memoryx.flashReadBytesPerS() < system->memoryx.dramReadBytesPerS());
    }
}

WS_TEST(oneTrillionOnCs3StreamsItsTailFromFlash)
{
    // Trained with AdamW in mixed precision the model's own state is 14 B per parameter, under
    // MemoryX's 50: MemoryX holds 50 P, its DRAM tier the first 36 TB of it (720 B parameters)
    // and flash the rest. Every weight streams at 2 B forward and 2 B backward.
    const SystemSpec cs3 = preset("cs3");
    const ModelGraph graph = load(sample("gpt_1t_synthetic.yaml"));
    WS_REQUIRE(double(graph.totalParams) == kParams1t);
    const double perParam = 36e12 / 720e9;
    const double dramParams = cs3.memoryx.dramBytes / perParam;
    const ExecutionPlan compiled = plan(graph, cs3);
    WS_REQUIRE(compiled.mode == ExecutionMode::WeightStreaming);
    WS_CHECK_NEAR(compiled.memoryxStoredBytes, perParam * kParams1t, 1e-12);
    WS_CHECK_NEAR(compiled.memoryxFlashBytes, perParam * (kParams1t - dramParams), 1e-12);

    // One micro-batch of 2 samples: a step streams every weight twice (no recomputation).
    const RunResult run = runOrThrow(compiled, graph, cs3, RunMode::Train, 2);
    const Metrics& m = run.metrics;
    WS_REQUIRE(m.microBatchesPerStep == 1);
    WS_REQUIRE(weightBytesPerMicroBatch(compiled) == 4.0 * kParams1t);
    const double flashBytes = 4.0 * (kParams1t - dramParams);
    const double dramBytes = 4.0 * dramParams;
    WS_CHECK_NEAR(m.flashStreamedBytesPerStep, flashBytes, 1e-9);
    WS_CHECK_NEAR(memoryxBytes(run, Phase::FlashStreamIn), flashBytes, 1e-9);
    WS_CHECK_NEAR(memoryxBytes(run, Phase::StreamIn), dramBytes, 1e-9);

    // Stream bound: each tier's bytes at its rate (150 and 37.5 GB/s), plus under 1% for the
    // last layer's gradients, its update and the crossings.
    const double streamS = dramBytes / cs3.memoryx.dramReadBytesPerS() + flashBytes / cs3.memoryx.flashReadBytesPerS();
    std::printf("1T on one CS-3: %.3f s per 2-sample step, %.3f s of stream (%.1f%% of the weights from flash)\n",
        m.stepTimeS, streamS, 100.0 * flashBytes / (flashBytes + dramBytes));
    WS_CHECK(m.stepTimeS >= streamS);
    WS_CHECK(m.stepTimeS < 1.01 * streamS);
    // Its first block sits in DRAM behind the port, its last in flash.
    for (const LayerMetrics& layer : m.layers) {
        if (layer.name == "layers.0.ffn.up")
            WS_CHECK(layer.bound == Bound::Io);
        if (layer.name == "layers.127.ffn.up")
            WS_CHECK(layer.bound == Bound::MemoryX);
    }
    WS_CHECK(m.bottleneck == Bound::MemoryX);

    // The same bytes with the flash tier twice as fast: the flash part of the step halves.
    SystemSpec faster = cs3;
    faster.memoryx.flashBandwidthBytesPerS = 2.0 * cs3.memoryx.flashBandwidthBytesPerS;
    const RunResult quick = runOrThrow(plan(graph, faster), graph, faster, RunMode::Train, 2);
    const double quickS
        = dramBytes / faster.memoryx.dramReadBytesPerS() + flashBytes / faster.memoryx.flashReadBytesPerS();
    WS_CHECK(quick.metrics.stepTimeS >= quickS);
    WS_CHECK(quick.metrics.stepTimeS < 1.01 * quickS);
}

WS_TEST(aPresetWithoutTiersStreamsEverythingAtOneRate)
{
    // A preset written before the tiers (no bytes per parameter, no tier rates): the model's own
    // 14 B per parameter (14 TB) fits the 36 TB DRAM tier and the step is bytes over the port.
    SystemSpec cs3 = preset("cs3");
    cs3.memoryx.bytesPerParam = 0.0;
    cs3.memoryx.dramBandwidthBytesPerS = 0.0;
    cs3.memoryx.flashBandwidthBytesPerS = 0.0;
    const ModelGraph graph = load(sample("gpt_1t_synthetic.yaml"));
    const ExecutionPlan compiled = plan(graph, cs3);
    WS_CHECK_NEAR(compiled.memoryxStoredBytes, double(graph.weightBytes + graph.optimizerStateBytes), 1e-12);
    WS_CHECK_EQ(compiled.memoryxFlashBytes, 0.0);
    const RunResult run = runOrThrow(compiled, graph, cs3, RunMode::Train, 2);
    WS_CHECK_EQ(run.metrics.flashStreamedBytesPerStep, 0.0);
    const double streamS
        = 4.0 * kParams1t / std::min({ cs3.ioBytesPerS, cs3.swarmx.linkBytesPerS, cs3.memoryx.bandwidthBytesPerS });
    WS_CHECK(run.metrics.stepTimeS >= streamS);
    WS_CHECK(run.metrics.stepTimeS < 1.01 * streamS);
}

WS_TEST(aModelThatFitsDramReadsNothingFromFlash)
{
    // GPT-3 XL at 50 B per parameter is 66 GB, far under either DRAM tier.
    const ModelGraph graph = load(sample("gpt3_xl.yaml"));
    for (const char* name : { "cs2", "cs3" }) {
        const SystemSpec system = preset(name);
        const ExecutionPlan compiled = plan(graph, system, RunMode::Train, ExecutionChoice::WeightStreaming, 2);
        WS_CHECK_NEAR(compiled.memoryxStoredBytes, 50.0 * double(graph.totalParams), 1e-12);
        WS_CHECK(compiled.memoryxStoredBytes < system.memoryx.dramBytes);
        WS_CHECK_EQ(compiled.memoryxFlashBytes, 0.0);
        for (const StreamedLayer& layer : compiled.streamed)
            WS_CHECK_EQ(layer.flashShare, 0.0);
        const RunResult run = runOrThrow(compiled, graph, system, RunMode::Train, 0);
        WS_CHECK_EQ(run.metrics.flashStreamedBytesPerStep, 0.0);
        WS_CHECK_EQ(memoryxBytes(run, Phase::FlashStreamIn), 0.0);
        WS_CHECK_NEAR(memoryxBytes(run, Phase::StreamIn),
            weightBytesPerMicroBatch(compiled) * double(run.metrics.microBatchesPerStep), 1e-9);
    }
}
