// Limits and faults in the core: the memory budget and the refusals it drives (a graph or a
// timeline too large is refused before it is allocated), and report writing that is cancelled
// or abandoned by an interrupted process leaving no temporary behind.
#include "corefixtures.h"
#include "testing.h"

#include "core/common/memorybudget.h"
#include "core/common/units.h"
#include "core/engine/engine.h"
#include "core/engine/framesource.h"
#include "core/fabric/kernels.h"
#include "core/fabric/staticcolorfabric.h"
#include "core/fabric/traffic.h"
#include "core/fabric/xyfabric.h"
#include "core/model/modelloader.h"
#include "core/report/atomicfile.h"
#include "core/report/rundirectory.h"
#include "core/sweeps/scaling.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

using namespace waferscope;
using namespace waferscope::core;
namespace fs = std::filesystem;

namespace {

// Heap bytes a string holds beyond the object (libstdc++ keeps 15 characters inline).
double heapBytes(const std::string& text)
{
    return text.capacity() > 15 ? double(text.capacity() + 1) : 0.0;
}

// The graph's memory, walked: objects, vectors and names.
double graphBytes(const ModelGraph& graph)
{
    double bytes = double(graph.ops.capacity() * sizeof(Op));
    for (const Op& op : graph.ops) {
        bytes += heapBytes(op.name) + double(op.tensors.capacity() * sizeof(ParamTensor));
        for (const ParamTensor& tensor : op.tensors)
            bytes += heapBytes(tensor.name);
    }
    return bytes;
}

std::size_t tensorCount(const ModelGraph& graph)
{
    std::size_t count = 0;
    for (const Op& op : graph.ops)
        count += op.tensors.size();
    return count;
}

std::size_t entriesIn(const fs::path& dir)
{
    return std::size_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

// A mixtral config with `layers` blocks of `experts` experts, in the legacy schema.
std::string moeConfig(int layers, int experts)
{
    return "model:\n  name: mixtral\n  vocab_size: 32000\n  hidden_size: 4096\n  num_hidden_layers: "
        + std::to_string(layers)
        + "\n  num_heads: 32\n  filter_size: 14336\n  max_position_embeddings: 4096\n  moe:\n    num_experts: "
        + std::to_string(experts)
        + "\n    top_k: 2\ntrain_input:\n  batch_size: 64\n  max_sequence_length: 4096\neval_input:\n  batch_size: "
          "64\n";
}

} // namespace

WS_TEST(memoryBudgetIsHalfOfWhatTheProcessCanHave)
{
    constexpr std::uint64_t gb = 1000000000;
    WS_CHECK_EQ(memoryBudgetFrom(nullptr, 24 * gb, nullptr).bytes, 12 * gb);
    // A cgroup limit below physical memory wins; "max" and larger limits do not.
    WS_CHECK_EQ(memoryBudgetFrom(nullptr, 24 * gb, "4000000000\n").bytes, 2 * gb);
    WS_CHECK(memoryBudgetFrom(nullptr, 24 * gb, "4000000000\n").origin.find("cgroup") != std::string::npos);
    WS_CHECK_EQ(memoryBudgetFrom(nullptr, 24 * gb, "max\n").bytes, 12 * gb);
    WS_CHECK_EQ(memoryBudgetFrom(nullptr, 24 * gb, "96000000000").bytes, 12 * gb);
    // The variable, in decimal megabytes, wins over both; malformed values are ignored.
    WS_CHECK_EQ(memoryBudgetFrom("512", 24 * gb, "4000000000").bytes, 512000000u);
    WS_CHECK_EQ(memoryBudgetFrom("512", 24 * gb, nullptr).origin, std::string("WAFERSCOPE_MEMORY_LIMIT_MB=512"));
    WS_CHECK_EQ(memoryBudgetFrom("lots", 24 * gb, nullptr).bytes, 12 * gb);
    WS_CHECK_EQ(memoryBudgetFrom("0", 24 * gb, nullptr).bytes, 12 * gb);
    WS_CHECK_EQ(memoryBudgetFrom("-5", 24 * gb, nullptr).bytes, 12 * gb);
    WS_CHECK(memoryBudget().bytes > 0);

    const MemoryBudget budget { 2000000, "a test" };
    WS_CHECK(!checkMemory("it", 2000000.0, "", Diagnostic {}, budget).has_value());
    const std::optional<Diagnostic> refused
        = checkMemory("it", 3000000.0, "do less", Diagnostic { "--x", 0, 0, {} }, budget);
    WS_REQUIRE(refused.has_value());
    WS_CHECK_EQ(refused->file, std::string("--x"));
    WS_CHECK_EQ(refused->message,
        std::string("it would need 3.00 MB, more than the 2.00 MB a model or run may use (a test); do less"));
}

namespace {

// The estimate is what the reader refuses on, so it must never be below the graph that is then
// built; and within half as much again of it (the allocator's headers and rounding), or it would
// refuse models that fit. Its ops and tensors are counted, not bounded.
void checkFootprint(const ModelConfig& config, const std::string& label)
{
    const ModelGraph graph = buildModelGraph(config);
    const GraphFootprint footprint = estimateGraphFootprint(config);
    WS_CHECK_EQ(footprint.ops, std::int64_t(graph.ops.size()));
    WS_CHECK_EQ(footprint.tensors, std::int64_t(tensorCount(graph)));
    const double walked = graphBytes(graph);
    if (footprint.bytes < walked || footprint.bytes > 1.5 * walked)
        test::reportFailure(__FILE__, __LINE__,
            label + ": estimate " + std::to_string(footprint.bytes) + " B against " + std::to_string(walked)
                + " B built");
}

ModelConfig readConfig(const std::string& text, const std::string& label)
{
    const Expected<ModelConfig> config = readParamsText(text, label);
    if (!config)
        throw std::runtime_error(label + ": " + config.error().message);
    return *config;
}

} // namespace

WS_TEST(graphFootprintBoundsEveryRealGraph)
{
    int checked = 0;
    for (const fs::path& path : test::allConfigs()) {
        const Expected<ModelConfig> config = readParamsFile(path.string());
        WS_REQUIRE(config.hasValue());
        checkFootprint(*config, path.filename().string());
        ++checked;
    }
    WS_CHECK(checked >= 20);
}

WS_TEST(graphFootprintHoldsForManyExpertsAndEveryKindOfModel)
{
    // Mixtral 8x7B with 8 to 1,024 experts, top-2 to top-8 routing and shared experts (an expert
    // op holds thousands of tensors: their names, not the ops, are most of the graph), dense
    // decoders, BERT, T5 (encoder and decoder) and LLaVA (a vision tower, a projector and a
    // language model).
    const std::string mixtral = waferscope::test::readFile(waferscope::test::dataDir() + "/models/mixtral_8x7b.yaml");
    const auto experts = [&](int count, int topK, int shared) {
        std::string text = mixtral;
        text.replace(text.find("num_experts: 8"), 14, "num_experts: " + std::to_string(count));
        text.replace(text.find("top_k: 2"), 8,
            "top_k: " + std::to_string(topK)
                + (shared > 0 ? "\n        num_shared_experts: " + std::to_string(shared) : std::string()));
        return readConfig(text, "mixtral_" + std::to_string(count) + "x" + std::to_string(topK) + ".yaml");
    };
    checkFootprint(experts(8, 2, 0), "mixtral 8 experts");
    checkFootprint(experts(64, 2, 0), "mixtral 64 experts");
    checkFootprint(experts(256, 8, 0), "mixtral 256 experts, top 8");
    checkFootprint(experts(256, 8, 2), "mixtral 256 experts and 2 shared");
    checkFootprint(experts(1024, 4, 1), "mixtral 1024 experts and 1 shared");
    for (const char* file : { "models/llama3_70b.yaml", "models/gpt3_13b.yaml", "models/bert_large.yaml",
             "models/t5_11b.yaml", "families/llava_tiny.yaml", "families/vit_tiny.yaml" })
        checkFootprint(readConfig(waferscope::test::readFile(waferscope::test::dataDir() + "/" + file), file), file);
}

WS_TEST(aGraphTooLargeForMemoryIsRefusedWhereTheYamlAsksForIt)
{
    // 10,000 layers of 4,096 experts (gelu FFNs with biases: two matrices and two biases each):
    // a block holds 4 x 4,096 expert tensors, the weights and biases of its two LayerNorms (4) and
    // of q, k, v and the output projection (8) and the router's weight (1); outside the blocks,
    // the token and position tables and the final LayerNorm (4; the head is tied). 164 million
    // weight tensors, about 30 GB of graph: the reader refuses it at num_experts (line 10,
    // column 18) without building anything.
    const auto tensors = [](std::int64_t layers, std::int64_t experts) { return layers * (4 * experts + 13) + 4; };
    const Expected<ModelConfig> small = readParamsText(moeConfig(3, 5), "small.yaml");
    WS_REQUIRE(small.hasValue());
    WS_CHECK_EQ(std::int64_t(tensorCount(buildModelGraph(*small))), tensors(3, 5)); // the count, on a built graph
    ModelConfig shape = *small;
    shape.numLayers = 10000;
    shape.numExperts = 4096;
    WS_CHECK_EQ(estimateGraphFootprint(shape).tensors, tensors(10000, 4096));
    if (double(memoryBudget().bytes) >= estimateGraphFootprint(shape).bytes)
        WS_SKIP("this machine's memory budget holds the 30 GB graph");
    const Expected<ModelConfig> huge = readParamsText(moeConfig(10000, 4096), "huge.yaml");
    WS_REQUIRE(!huge.hasValue());
    WS_CHECK_EQ(huge.error().file, std::string("huge.yaml"));
    WS_CHECK_EQ(huge.error().line, 10);
    WS_CHECK_EQ(huge.error().column, 18);
    WS_CHECK_CONTAINS(huge.error().message, "op graph (" + formatThousands(tensors(10000, 4096)) + " weight tensors");
    WS_CHECK(huge.error().message.find("use fewer layers or experts") != std::string::npos);
    // The same shape with 8 experts, as Mixtral has, reads.
    WS_CHECK(readParamsText(moeConfig(32, 8), "mixtral.yaml").hasValue());
}

WS_TEST(theOneTrillionParameterSampleStillRunsInWeightStreaming)
{
    const ModelGraph graph = test::load(test::sample("gpt_1t_synthetic.yaml"));
    const SystemSpec cs2 = test::preset("cs2");
    const ExecutionPlan plan = test::plan(graph, cs2);
    WS_CHECK_EQ(toString(plan.mode), std::string("weight_streaming"));
    const Expected<engine::RunResult> run = engine::run(plan, graph, cs2, {});
    WS_REQUIRE(run.hasValue());
    WS_CHECK(run->metrics.stepTimeS > 0.0);
    // The reservation is an upper bound of what is then recorded.
    WS_CHECK(run->timeline.events.capacity() >= run->timeline.events.size());
}

WS_TEST(aTimelineTooLargeForMemoryIsRefusedBeforeTheRun)
{
    // Each step of the 1T sample may record up to 12 events per (micro-batch, layer) pair; a
    // thousand steps of them would not fit any workstation.
    const ModelGraph graph = test::load(test::sample("gpt_1t_synthetic.yaml"));
    const SystemSpec cs2 = test::preset("cs2");
    const ExecutionPlan plan = test::plan(graph, cs2);
    engine::RunOptions options;
    options.maxSteps = 1000;
    const Expected<engine::RunResult> run = engine::run(plan, graph, cs2, options);
    WS_REQUIRE(!run.hasValue());
    WS_CHECK_EQ(run.error().file, std::string("--max_steps"));
    WS_CHECK(run.error().message.find("1000 steps of this run's timeline") != std::string::npos);
    WS_CHECK(run.error().message.find("lower --max_steps") != std::string::npos);
}

WS_TEST(aCancelledDirectoryWriteReplacesNothingAndLeavesNoTemporary)
{
    const fs::path dir = waferscope::test::freshDirectory("cancel");
    fs::create_directories(dir);
    WS_REQUIRE(!report::writeRunDirectory(dir.string(), { { "a.txt", std::string("old a") } }).has_value());
    std::atomic<bool> cancelled { false };
    int pieces = 0;
    // The second file cancels while it streams: the first, staged already, is not committed.
    const std::vector<report::ReportFile> files { { "a.txt", std::string("new a") },
        { "big.txt", report::ContentWriter([&](const auto& sink) {
             for (int i = 0; i < 100; ++i) {
                 sink(std::string(4096, 'x'));
                 ++pieces;
                 if (i == 3)
                     cancelled = true;
             }
         }) } };
    const std::optional<Diagnostic> error = report::writeRunDirectory(dir.string(), files, &cancelled);
    WS_REQUIRE(error.has_value());
    WS_CHECK_EQ(error->message, std::string("cancelled"));
    WS_CHECK_EQ(pieces, 4); // the fifth piece was refused
    WS_CHECK_EQ(waferscope::test::readFile(dir / "a.txt"), std::string("old a"));
    WS_CHECK(!fs::exists(dir / "big.txt"));
    WS_CHECK_EQ(entriesIn(dir), std::size_t(1));
    WS_CHECK_EQ(report::stagedFileCount(), std::size_t(0));
    // Into directories the write had to create: cancelled, it removes them again.
    cancelled = false;
    pieces = 0;
    const fs::path fresh = dir / "new" / "run";
    WS_REQUIRE(report::writeRunDirectory(fresh.string(), files, &cancelled).has_value());
    WS_CHECK(!fs::exists(dir / "new"));
    fs::remove_all(dir);
}

WS_TEST(anAbandonedProcessLeavesNoTemporaryAndStagesNoMore)
{
    // abandonStagedFiles() is for a process that is ending, so it runs in a child.
    const fs::path dir = waferscope::test::freshDirectory("abandon");
    fs::create_directories(dir);
    const pid_t child = ::fork();
    WS_REQUIRE(child >= 0);
    if (child == 0) {
        const Expected<report::StagedFile> staged = report::stageFile((dir / "a.txt").string(), std::string("a"));
        if (!staged || !fs::exists(staged->temporary) || report::stagedFileCount() != 1)
            ::_exit(10);
        report::abandonStagedFiles();
        if (fs::exists(staged->temporary) || report::stagedFileCount() != 0)
            ::_exit(11);
        const Expected<report::StagedFile> later = report::stageFile((dir / "b.txt").string(), std::string("b"));
        if (later || later.error().message != "not written: the program is stopping")
            ::_exit(12);
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    WS_CHECK(WIFEXITED(status));
    WS_CHECK_EQ(WEXITSTATUS(status), 0);
    WS_CHECK_EQ(entriesIn(dir), std::size_t(0));
    fs::remove_all(dir);
}

WS_TEST(framesOfHundredsOfWafersAreRefusedAndTwentyTwoFit)
{
    // Llama 3.1 405B for inference on CS-3 takes 22 wafers: about 1.8 GB of frames in flight,
    // which fits a workstation; the same shape with 4,000 blocks takes hundreds of wafers,
    // tens of GB of frames, and is refused with the reason.
    const SystemSpec cs3 = test::preset("cs3");
    const auto framesCheck = [&](const std::string& text) {
        const Expected<ModelConfig> config = readParamsText(text, "405b.yaml");
        WS_REQUIRE(config.hasValue());
        const ModelGraph graph = buildModelGraph(*config);
        const ExecutionPlan plan = test::plan(graph, cs3, RunMode::Inference);
        const Expected<engine::RunResult> run = engine::run(plan, graph, cs3, { .mode = engine::RunMode::Inference });
        WS_REQUIRE(run.hasValue());
        const engine::FrameSource frames(plan, graph, cs3, *run);
        return std::make_pair(frames.wafers(), engine::checkFrameMemory(frames, cs3));
    };
    const std::string text = waferscope::test::readFile(test::sample("llama3p1_405b.yaml"));
    const auto [wafers, fits] = framesCheck(text);
    WS_CHECK_EQ(wafers, 22);
    if (memoryBudget().bytes >= 2000000000ull)
        WS_CHECK(!fits.has_value());
    std::string deeper = text;
    const std::size_t at = deeper.find("num_hidden_layers: 126");
    WS_REQUIRE(at != std::string::npos);
    deeper.replace(at, 22, "num_hidden_layers: 4000");
    const auto [manyWafers, refused] = framesCheck(deeper);
    WS_CHECK(manyWafers > 600);
    WS_REQUIRE(refused.has_value());
    WS_CHECK(refused->message.find("the frames of " + std::to_string(manyWafers) + " wafer(s) would need")
        != std::string::npos);
    WS_CHECK(refused->message.find("the wafer view shows the placement") != std::string::npos);
}

WS_TEST(aCancelledSweepStopsBeforeItsNextRun)
{
    const ModelGraph graph = test::load(test::sample("gpt3_xl.yaml"));
    const SystemSpec cs2 = test::preset("cs2");
    sweeps::ScalingOptions options;
    options.numCsx = { 1, 2, 4, 8, 16 };
    int asked = 0;
    options.cancelled = [&] { return ++asked > 2; }; // two runs, then Stop
    const Expected<sweeps::ScalingSweep> sweep = sweeps::scale(graph, cs2, options);
    WS_REQUIRE(!sweep.hasValue());
    WS_CHECK_EQ(sweep.error().message, std::string("cancelled"));
    WS_CHECK_EQ(asked, 3);
    options.cancelled = [] { return false; };
    WS_CHECK(sweeps::scale(graph, cs2, options).hasValue());
}

WS_TEST(theTimelineIsReservedAtWhatTheRunRecords)
{
    // The reservation is what the budget is checked against: never below what a weight-streaming
    // run records (or the vector would grow, doubling, past the check), and within a tenth of it
    // (it leaves out only events of no duration), or it would refuse runs that fit.
    const SystemSpec cs2 = test::preset("cs2");
    for (const char* name : { "gpt3_xl.yaml", "llama3_8b.yaml" }) {
        const ModelGraph graph = test::load(test::sample(name));
        const ExecutionPlan plan = test::plan(graph, cs2, RunMode::Train, ExecutionChoice::WeightStreaming);
        for (const engine::RunMode kind : { engine::RunMode::Train, engine::RunMode::Eval })
            for (const int steps : { 1, 3 }) {
                engine::RunOptions options;
                options.mode = kind;
                options.maxSteps = steps;
                const Expected<engine::RunResult> run = engine::run(plan, graph, cs2, options);
                WS_REQUIRE(run.hasValue());
                const std::vector<engine::TimelineEvent>& events = run->timeline.events;
                WS_CHECK(events.size() > 0);
                WS_CHECK(events.capacity() >= events.size());
                WS_CHECK(double(events.capacity()) <= 1.1 * double(events.size()));
            }
    }
}

WS_TEST(fabricStateEstimatesCountWhatTheMeshesAllocate)
{
    // The estimates are counted before the fabric exists; memoryBytes() walks what the built one
    // holds. The estimate adds the allocator's headers and alignment, no more than a few percent.
    using namespace core::fabric;
    for (const auto& [width, height] : { std::pair { 2, 2 }, { 32, 32 }, { 100, 37 }, { 300, 200 } })
        for (const int depth : { 2, 4, 64 }) {
            FabricConfig config;
            config.width = width;
            config.height = height;
            config.queueDepth = depth;
            const std::string shape
                = std::to_string(width) + "x" + std::to_string(height) + " depth " + std::to_string(depth);
            const double xy = double(XyFabric(config).memoryBytes());
            const double xyEstimate = XyFabric::estimateBytes(config);
            if (xyEstimate < xy || xyEstimate > 1.05 * xy + 65536.0)
                test::reportFailure(__FILE__, __LINE__,
                    "XyFabric " + shape + ": " + std::to_string(xyEstimate) + " B estimated, " + std::to_string(xy));
            for (const int colors : { 3, 12, 24 }) {
                config.colors = colors;
                const double colored = double(StaticColorFabric(config).memoryBytes());
                const double coloredEstimate = StaticColorFabric::estimateBytes(config);
                if (coloredEstimate < colored || coloredEstimate > 1.1 * colored + 65536.0)
                    test::reportFailure(__FILE__, __LINE__,
                        "StaticColorFabric " + shape + ", " + std::to_string(colors) + " colors: "
                            + std::to_string(coloredEstimate) + " B estimated, " + std::to_string(colored));
            }
        }
}

WS_TEST(aKernelTooLargeForMemoryIsRefusedAtTheOptionThatWeighsMost)
{
    // row_reduce on the largest region with vectors of 12,000 floats (47 KB of a PE's 48 KiB):
    // 4.2 million PEs' vectors, the reference and the gathered values are 20 bytes a float,
    // about a terabyte; the fabric's own state a few GB.
    using namespace core::fabric;
    KernelConfig config;
    config.kind = KernelKind::RowReduce;
    config.regionRows = 2047;
    config.regionCols = 2047;
    config.matrixCols = 12000;
    const KernelFootprint footprint = estimateKernelFootprint(config);
    const double floats = 2047.0 * 2047.0 * 12000.0;
    WS_CHECK(footprint.operandBytes >= 20.0 * floats);
    WS_CHECK(footprint.operandBytes <= 1.01 * 20.0 * floats);
    WS_CHECK(footprint.stateBytes < footprint.operandBytes / 100.0);
    if (double(memoryBudget().bytes) >= footprint.bytes())
        WS_SKIP("this machine's memory budget holds a terabyte");
    const Expected<KernelResult> refused = runKernel(config);
    WS_REQUIRE(!refused.hasValue());
    WS_CHECK_EQ(refused.error().file, std::string("--length"));
    WS_CHECK(refused.error().kind == Diagnostic::Kind::CannotMap);
    WS_CHECK_CONTAINS(refused.error().message, "row_reduce on a 2047x2047 region (its fabric state ");
    WS_CHECK_CONTAINS(refused.error().message, "use a smaller --length");
}

WS_TEST(aTrafficRunOfHoursIsRefusedAtCycles)
{
    // At most 2e11 router-cycles (cycles x PEs): 195,312,500 cycles of a 32x32 mesh, 223,948 of a
    // whole WSE-3 (762 x 1172 PEs). Refused before anything is allocated.
    using namespace core::fabric;
    TrafficConfig config;
    config.cycles = 4294967295ull;
    Expected<TrafficResult> refused = runTraffic(config);
    WS_REQUIRE(!refused.hasValue());
    WS_CHECK_EQ(refused.error().file, std::string("--cycles"));
    WS_CHECK_CONTAINS(refused.error().message, "4294967295 cycles of a 32x32 mesh are 4.4e+12 router-cycles");
    WS_CHECK_CONTAINS(refused.error().message, "at most 195312500 cycles");
    config.width = 762;
    config.height = 1172;
    config.cycles = 223949;
    refused = runTraffic(config);
    WS_REQUIRE(!refused.hasValue());
    WS_CHECK_CONTAINS(refused.error().message, "at most 223948 cycles");
}
