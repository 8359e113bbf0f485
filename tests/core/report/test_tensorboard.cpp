// Each simulated step's figures (report.json's steps[]) against the timeline, and the pieces of
// the TensorBoard event file: CRC-32C, TFRecord framing, the file's name and its replacement in a
// run directory. tests/python/test_tensorboard.py decodes whole files independently.
#include "corefixtures.h"
#include "testing.h"

#include "core/engine/framesource.h"
#include "core/report/rundirectory.h"
#include "core/report/runreport.h"
#include "core/report/tfevents.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>

using namespace waferscope::core;
using namespace waferscope::core::engine;
using namespace waferscope::test;
namespace fs = std::filesystem;

namespace {

double overlap(const TimelineEvent& e, double start, double end)
{
    return std::max(0.0, std::min(e.end, end) - std::max(e.start, start));
}

std::uint32_t readLittleEndian(const std::string& bytes, std::size_t at, int count)
{
    std::uint32_t value = 0;
    for (int i = 0; i < count; ++i)
        value |= std::uint32_t(std::uint8_t(bytes[at + std::size_t(i)])) << (8 * i);
    return value;
}

} // namespace

WS_TEST(crc32cMatchesItsPublishedCheckValues)
{
    // The CRC catalogue's check value, and RFC 3720's vectors (B.4) of 32 zero and 32 0xFF bytes.
    WS_CHECK_EQ(report::crc32c("123456789"), std::uint32_t(0xE3069283));
    WS_CHECK_EQ(report::crc32c(std::string(32, '\0')), std::uint32_t(0x8A9136AA));
    WS_CHECK_EQ(report::crc32c(std::string(32, '\xff')), std::uint32_t(0x62A8AB43));
    WS_CHECK_EQ(report::crc32c(""), std::uint32_t(0));
    // Masked: rotated right by 15 bits, plus TFRecord's constant.
    const std::uint32_t crc = 0xE3069283u;
    WS_CHECK_EQ(report::maskedCrc32c("123456789"), std::uint32_t(((crc >> 15) | (crc << 17)) + 0xa282ead8u));
}

WS_TEST(aTfRecordFramesItsDataWithTwoMaskedCrcs)
{
    std::string out;
    report::appendTfRecord(out, "hello");
    WS_REQUIRE(out.size() == 8 + 4 + 5 + 4);
    WS_CHECK_EQ(readLittleEndian(out, 0, 4), std::uint32_t(5));
    WS_CHECK_EQ(readLittleEndian(out, 4, 4), std::uint32_t(0));
    WS_CHECK_EQ(readLittleEndian(out, 8, 4), report::maskedCrc32c(out.substr(0, 8)));
    WS_CHECK_EQ(out.substr(12, 5), std::string("hello"));
    WS_CHECK_EQ(readLittleEndian(out, 17, 4), report::maskedCrc32c("hello"));
}

WS_TEST(anEventFileIsNamedForItsTimeAndHost)
{
    WS_CHECK_EQ(report::eventFileName(1795749750, "node-3.cluster"),
        std::string("events.out.tfevents.1795749750.node-3.cluster.waferscope"));
    WS_CHECK_EQ(report::eventFileName(7, "a b/c"), std::string("events.out.tfevents.7.a_b_c.waferscope"));
    WS_CHECK_EQ(report::eventFileName(7, ""), std::string("events.out.tfevents.7.localhost.waferscope"));
    WS_CHECK(report::isWaferScopeEventFile("events.out.tfevents.7.h.waferscope"));
    WS_CHECK(!report::isWaferScopeEventFile("events.out.tfevents.7.h")); // another writer's
    WS_CHECK(!report::isWaferScopeEventFile("report.json"));
    WS_CHECK(!report::isWaferScopeEventFile(".events.out.tfevents.7.h.waferscope.tmp123"));
}

WS_TEST(eachWeightStreamingStepIsItsShareOfTheTimeline)
{
    // GPT-3 XL weight-streamed on one CS-2 for three steps: the first fills the stream.
    const SystemSpec cs2 = preset("cs2");
    const ModelGraph graph = load(sample("gpt3_xl.yaml"));
    const ExecutionPlan compiled = plan(graph, cs2, RunMode::Train, ExecutionChoice::WeightStreaming, 1);
    const RunResult result = runOrThrow(compiled, graph, cs2, RunMode::Train, 0, 3);
    const std::vector<StepFigures> steps = stepFigures(FrameSource(compiled, graph, cs2, result), result.metrics);
    const Metrics& m = result.metrics;
    WS_REQUIRE(steps.size() == 3 && m.stepTimesS.size() == 3);
    const double peak = 2.0 * cs2.wafer.fmacPerPePerCycle * double(compiled.usable.area()) * cs2.wafer.clockHz;
    double start = 0.0;
    for (std::size_t k = 0; k < steps.size(); ++k) {
        const StepFigures& s = steps[k];
        WS_CHECK_EQ(s.step, int(k) + 1);
        WS_CHECK_EQ(s.stepTimeS, m.stepTimesS[k]);
        WS_CHECK_NEAR(s.startS, start, 1e-12);
        WS_CHECK_NEAR(s.endS, start + m.stepTimesS[k], 1e-12);
        // The batch and the model FLOPs of a step, over this step's time.
        WS_CHECK_NEAR(s.samplesPerS, double(graph.config.batchSize) / m.stepTimesS[k], 1e-9 * s.samplesPerS);
        WS_CHECK_NEAR(s.mfu, m.modelFlopsPerStep / (m.peakFlopsPerS * m.stepTimesS[k]), 1e-12);
        WS_CHECK_EQ(s.tokensPerS, 0.0);
        // From the events inside the step: the wafer's FLOPs (each event's share by time) over
        // the usable PEs' peak, and the busier of MemoryX's two jobs (stream, optimizer; its
        // flash reads are part of the stream).
        double flops = 0.0;
        std::map<Phase, double> memoryx;
        for (const TimelineEvent& e : result.timeline.events) {
            const double inside = overlap(e, s.startS, s.endS);
            if (inside <= 0.0)
                continue;
            if (e.lane == LaneKind::CsxCompute && e.layer >= 0 && e.phase != Phase::OptimizerUpdate)
                flops += e.flops * inside / (e.end - e.start);
            if (e.lane == LaneKind::MemoryX)
                memoryx[e.phase == Phase::FlashStreamIn ? Phase::StreamIn : e.phase] += inside;
        }
        double busiest = 0.0;
        for (const auto& [phase, seconds] : memoryx)
            busiest = std::max(busiest, seconds);
        WS_CHECK_NEAR(s.utilization.compute, std::min(1.0, flops / (peak * s.stepTimeS)), 1e-9);
        WS_CHECK_NEAR(s.utilization.memoryx, std::min(1.0, busiest / s.stepTimeS), 1e-9);
        WS_CHECK(s.utilization.memoryx > 0.0);
        start = s.endS;
    }
    // The fill makes the first step the longest; the last is the steady step of the totals.
    WS_CHECK(steps[0].stepTimeS > steps[2].stepTimeS);
    WS_CHECK_NEAR(steps[2].samplesPerS, m.samplesPerS, 1e-9 * m.samplesPerS);
    WS_CHECK_NEAR(steps[2].mfu, m.mfu, 1e-12);
}

WS_TEST(inferenceStepsAreTheDecodeStepsAfterThePrompt)
{
    const SystemSpec cs3 = preset("cs3");
    const ModelGraph graph = load(sample("llama3_8b.yaml"));
    const ExecutionPlan compiled = plan(graph, cs3, RunMode::Inference);
    const RunResult result = runOrThrow(compiled, graph, cs3, RunMode::Inference, 0, 2);
    const Metrics& m = result.metrics;
    const std::vector<StepFigures> steps = stepFigures(FrameSource(compiled, graph, cs3, result), m);
    WS_REQUIRE(steps.size() == 2);
    WS_CHECK_NEAR(steps[0].startS, m.timeToFirstTokenS, 1e-15);
    for (const StepFigures& s : steps) {
        // One token for each user a step (no draft model here).
        WS_CHECK_NEAR(s.tokensPerS, 1.0 / s.stepTimeS, 1e-9 * s.tokensPerS);
        WS_CHECK_NEAR(s.tokensPerS, m.tokensPerS, 1e-9 * m.tokensPerS);
        WS_CHECK_EQ(s.samplesPerS, 0.0);
        WS_CHECK(s.utilization.compute > 0.0);
        WS_CHECK_EQ(s.utilization.memoryx, 0.0); // the weights stay on the wafer
    }
    // report.json holds them as tokens_per_s and reads them back, with every inference total.
    CompileOptions compileOptions;
    compileOptions.mode = RunMode::Inference;
    RunOptions runOptions;
    runOptions.mode = RunMode::Inference;
    const report::RunReport written = report::buildReport({ sample("llama3_8b.yaml"), "", graph, cs3, compiled, result,
        compileOptions, runOptions, builtinCalibration() });
    const std::string text = report::reportToJson(written);
    WS_CHECK(text.find("\"tokens_per_s\": ") != std::string::npos);
    const Expected<report::RunReport> read = report::reportFromJson(text, "report.json");
    WS_REQUIRE(read.hasValue() && read->steps.size() == 2);
    WS_CHECK_EQ(read->steps[1].tokensPerS, steps[1].tokensPerS);
    WS_CHECK_EQ(report::reportToJson(*read), text);
    // So does a run that drafted its tokens, with its draft model's figures.
    report::RunReport drafted = written;
    drafted.metrics.speculative = SpeculativeDecode { "draft.yaml", 1, true, 0, 4, 0.7, 2.77, 1e-4, 5e-5, 1e-3, 900.0 };
    const std::string draftedText = report::reportToJson(drafted);
    const Expected<report::RunReport> readDrafted = report::reportFromJson(draftedText, "report.json");
    WS_REQUIRE(readDrafted.hasValue() && readDrafted->metrics.speculative.has_value());
    WS_CHECK_EQ(readDrafted->metrics.speculative->draftTokens, 4);
    WS_CHECK_EQ(report::reportToJson(*readDrafted), draftedText);
}

WS_TEST(aRunDirectoryReplacesItsEarlierEventFileInTheSameCommit)
{
    const fs::path dir = freshDirectory("tfevents");
    fs::create_directories(dir);
    const auto write = [&](const fs::path& path, const std::string& text) { std::ofstream(path) << text; };
    write(dir / "events.out.tfevents.1.old.waferscope", "earlier");
    write(dir / "events.out.tfevents.1.old", "another writer's");
    write(dir / ".events.out.tfevents.1.old.waferscope.tmp123456", "a killed writer's");
    report::ReportFile event("events.out.tfevents.2.new.waferscope", std::string("new"));
    event.supersedes = [](const std::string& name) { return report::isWaferScopeEventFile(name); };
    const std::vector<report::ReportFile> files { report::ReportFile("report.json", std::string("{}")), event };

    // Cancelled: nothing is replaced, and the earlier event file stays.
    const std::atomic<bool> cancelled { true };
    WS_REQUIRE(report::writeRunDirectory(dir.string(), files, &cancelled).has_value());
    WS_CHECK(fs::exists(dir / "events.out.tfevents.1.old.waferscope"));
    WS_CHECK(!fs::exists(dir / "events.out.tfevents.2.new.waferscope"));

    WS_REQUIRE(!report::writeRunDirectory(dir.string(), files).has_value());
    std::vector<std::string> names;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir))
        names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    WS_CHECK(names
        == std::vector<std::string>(
            { "events.out.tfevents.1.old", "events.out.tfevents.2.new.waferscope", "report.json" }));
    WS_CHECK_EQ(readFile(dir / "events.out.tfevents.2.new.waferscope"), std::string("new"));
}
