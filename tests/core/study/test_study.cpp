// core/study: one study from its spec to its outcome gives what the separate calls give (load,
// engine::compileFor, engine::run, sweeps::scale, sweeps::runSensitivity, the fabric run, the
// report); its progress never goes back and reaches the end; a cancelled study says so and writes
// nothing; pieces a spec holds are not made again.
#include "corefixtures.h"
#include "testing.h"

#include "core/compiler/compiler.h"
#include "core/cyclelevel/cyclerun.h"
#include "core/engine/engine.h"
#include "core/engine/framesource.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"
#include "core/report/cyclelevelreport.h"
#include "core/report/rundirectory.h"
#include "core/report/runreport.h"
#include "core/study/study.h"
#include "core/sweeps/scaling.h"
#include "core/sweeps/sensitivity.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

using namespace waferscope::core;
using namespace waferscope::test;
namespace fs = std::filesystem;

namespace {

// fc_mnist trained on one CS-3 with a sweep over 1 and 2 systems: a small study with every stage.
study::StudySpec smallTraining()
{
    study::StudySpec spec;
    spec.paramsPath = sample("fc_mnist.yaml");
    spec.systemName = "cs3";
    spec.run.maxSteps = 2;
    spec.scalingCounts = { 1, 2 };
    spec.sensitivity = true;
    spec.report = true;
    return spec;
}

// Report JSON with the one field two runs of the same inputs differ in made equal.
std::string reportText(report::RunReport report)
{
    report.manifest.createdUtc = "2026-01-01T00:00:00Z";
    return report::reportToJson(report);
}

// JSON text without the keys that time the work (wall clock, not results).
std::string untimed(const std::string& text)
{
    nlohmann::json json = nlohmann::json::parse(text);
    for (const char* key : { "compile_ms", "wall_s" })
        json.erase(key);
    return json.dump();
}

// tiny_gpt2 loaded and compiled for inference on a CS-3, as a front end that compiles as a step
// of its own holds them (the GUI's token run starts its study from these).
struct HeldInference {
    std::shared_ptr<const LoadedModelFile> model;
    SystemSpec system;
    std::shared_ptr<const ExecutionPlan> plan;
};
HeldInference heldInference()
{
    HeldInference held;
    held.model
        = std::make_shared<const LoadedModelFile>(loadModelFile(dataDir() + "/cyclelevel/tiny_gpt2.yaml").value());
    held.system = preset("cs3");
    CompileOptions compile;
    compile.mode = RunMode::Inference;
    engine::RunOptions run;
    run.mode = RunMode::Inference;
    Expected<ExecutionPlan> plan = study::compileStudyPlan(
        held.model->graph, held.model->path, held.system, compile, engine::builtinCalibration(), run, "test");
    held.plan = std::make_shared<const ExecutionPlan>(std::move(plan).value());
    return held;
}

// A cycle-level study of the held pieces: it compiles and runs nothing but the fabric.
study::StudySpec fabricStudy(const HeldInference& held, int promptTokens)
{
    study::StudySpec spec;
    spec.paramsPath = "/nonexistent/never-read.yaml";
    spec.model = held.model;
    spec.system = held.system;
    spec.plan = held.plan;
    spec.compile.mode = RunMode::Inference;
    spec.run.mode = RunMode::Inference;
    spec.level = study::StudyLevel::Cycle;
    spec.cycle.promptTokens = promptTokens;
    return spec;
}

bool hasReportFiles(const fs::path& directory)
{
    std::error_code error;
    return fs::exists(directory / "report.json", error) || fs::exists(directory / "summary.txt", error);
}

} // namespace

WS_TEST(aStudyGivesWhatTheSeparateCallsGive)
{
    const study::StudySpec spec = smallTraining();
    const Expected<study::StudyOutcome> outcome = study::runStudy(spec);
    WS_REQUIRE(outcome.hasValue());

    // The same job, stage by stage.
    const LoadedModelFile model = loadModelFile(spec.paramsPath).value();
    const SystemSpec system = loadBuiltinPreset("cs3").value();
    const engine::Calibration& calibration = engine::builtinCalibration();
    const ExecutionPlan plan = engine::compileFor(model.graph, system, spec.compile, calibration, spec.run).value();
    const engine::RunResult ran = engine::run(plan, model.graph, system, spec.run, calibration).value();
    sweeps::ScalingOptions scaling;
    scaling.numCsx = { 1, 2 };
    const sweeps::ScalingSweep sweep = sweeps::scale(model.graph, system, scaling, calibration).value();
    const sweeps::Sensitivity sensitivity
        = sweeps::runSensitivity(model.graph, system, spec.compile, spec.run, calibration).value();

    WS_CHECK_EQ(outcome->model->bytes, model.bytes);
    WS_CHECK(untimed(planToJson(*outcome->plan, outcome->model->graph)) == untimed(planToJson(plan, model.graph)));
    WS_CHECK_EQ(engine::metricsToJson(outcome->ran->metrics), engine::metricsToJson(ran.metrics));
    WS_CHECK_EQ(outcome->ran->timeline.events.size(), ran.timeline.events.size());
    WS_CHECK_EQ(sweeps::scalingToJson(*outcome->scaling), sweeps::scalingToJson(sweep));
    WS_CHECK_EQ(sweeps::sensitivityToJson(*outcome->sensitivity), sweeps::sensitivityToJson(sensitivity));
    WS_REQUIRE(outcome->report.has_value());
    const report::RunReport separate = report::buildReport({ spec.paramsPath, model.bytes, model.graph, system, plan,
        ran, spec.compile, spec.run, calibration, &sweep, &sensitivity });
    WS_CHECK_EQ(reportText(*outcome->report), reportText(separate));
    // The report is the run's: its step time and the sweep's points as computed above.
    WS_CHECK_EQ(outcome->report->metrics.stepTimeS, ran.metrics.stepTimeS);
    WS_REQUIRE(outcome->report->scaling.has_value());
    WS_CHECK_EQ(outcome->report->scaling->points.size(), std::size_t(2));
    WS_CHECK_EQ(outcome->report->manifest.inputPath, spec.paramsPath);
}

WS_TEST(progressNeverGoesBackAndReachesTheEnd)
{
    study::StudySpec spec = smallTraining();
    std::mutex mutex;
    std::vector<study::StudyProgress> seen;
    study::StudyControl control;
    control.progress = [&](const study::StudyProgress& at) {
        const std::lock_guard lock(mutex);
        seen.push_back(at);
    };
    WS_REQUIRE(study::runStudy(spec, control).hasValue());
    WS_REQUIRE(seen.size() >= 6);
    WS_CHECK(seen.front().stage == study::StudyStage::Loading);
    WS_CHECK_EQ(seen.front().fraction, 0.0);
    WS_CHECK(seen.back().stage == study::StudyStage::Done);
    WS_CHECK_EQ(seen.back().fraction, 1.0);
    // Loading, compiling, running, scaling, sensitivity: five stages, each entered in order.
    WS_CHECK_EQ(seen.front().stageCount, 5);
    std::vector<study::StudyStage> entered;
    for (std::size_t i = 0; i < seen.size(); ++i) {
        if (i > 0)
            WS_CHECK(seen[i].fraction >= seen[i - 1].fraction);
        if (entered.empty() || entered.back() != seen[i].stage)
            entered.push_back(seen[i].stage);
    }
    const std::vector<study::StudyStage> expected { study::StudyStage::Loading, study::StudyStage::Compiling,
        study::StudyStage::Running, study::StudyStage::Scaling, study::StudyStage::Sensitivity,
        study::StudyStage::Done };
    WS_CHECK(entered == expected);
}

WS_TEST(aWriterGetsTheReportAndItsExtraFiles)
{
    const fs::path directory = freshDirectory("study-written") / "run";
    report::RunDirectoryWriter writer = report::RunDirectoryWriter::open(directory.string()).value();
    study::StudySpec spec = smallTraining();
    spec.scalingCounts.clear();
    spec.sensitivity = false; // a writer implies it
    spec.report = false; // and the report
    spec.writer = &writer;
    spec.extraFiles = [](const report::RunReport& report) -> Expected<std::vector<report::ReportFile>> {
        return std::vector<report::ReportFile> { { "model.txt", report.manifest.model } };
    };
    const Expected<study::StudyOutcome> outcome = study::runStudy(spec);
    WS_REQUIRE(outcome.hasValue());
    WS_REQUIRE(outcome->report.has_value());
    WS_CHECK(outcome->sensitivity != nullptr);
    WS_CHECK(outcome->report->sensitivity.has_value());
    const Expected<report::RunReport> read = report::readReportFile(directory.string());
    WS_REQUIRE(read.hasValue());
    WS_CHECK_EQ(report::reportToJson(*read), report::reportToJson(*outcome->report));
    WS_CHECK_EQ(readFile(directory / "model.txt"), outcome->model->graph.config.name);
    WS_CHECK_EQ(readFile(directory / "summary.txt"), report::reportSummary(*outcome->report));
}

WS_TEST(aCancelledStudySaysSoAndWritesNothing)
{
    const fs::path directory = freshDirectory("study-cancelled") / "run";
    for (const study::StudyStage stopAt :
        { study::StudyStage::Compiling, study::StudyStage::Sensitivity, study::StudyStage::Writing }) {
        {
            report::RunDirectoryWriter writer = report::RunDirectoryWriter::open(directory.string()).value();
            study::StudySpec spec = smallTraining();
            spec.writer = &writer;
            std::atomic<bool> cancel { false };
            study::StudyControl control;
            control.cancelFlag = &cancel;
            control.progress = [&](const study::StudyProgress& at) {
                if (at.stage == stopAt)
                    cancel = true;
            };
            const Expected<study::StudyOutcome> outcome = study::runStudy(spec, control);
            WS_REQUIRE(!outcome.hasValue());
            WS_CHECK(study::isCancellation(outcome.error()));
            WS_CHECK(!hasReportFiles(directory));
        }
        // The writer removed the directory it created: no write landed.
        WS_CHECK(!fs::exists(directory));
    }
}

WS_TEST(aCycleLevelStudyIsTheFabricRunWithTheModelsCycles)
{
    study::StudySpec spec;
    spec.paramsPath = dataDir() + "/cyclelevel/tiny_gpt2.yaml";
    spec.compile.mode = RunMode::Inference;
    spec.run.mode = RunMode::Inference;
    spec.level = study::StudyLevel::Cycle;
    spec.cycle.promptTokens = 4;
    spec.report = true;
    std::vector<study::StudyStage> stages;
    study::StudyControl control;
    control.progress = [&](const study::StudyProgress& at) {
        if (stages.empty() || stages.back() != at.stage)
            stages.push_back(at.stage);
    };
    const Expected<study::StudyOutcome> outcome = study::runStudy(spec, control);
    WS_REQUIRE(outcome.hasValue());

    const ModelGraph graph = load(spec.paramsPath);
    const SystemSpec system = preset("cs3");
    const ExecutionPlan plan
        = engine::compileFor(graph, system, spec.compile, engine::builtinCalibration(), spec.run).value();
    cyclelevel::CycleRunOptions options;
    options.promptTokens = 4;
    cyclelevel::CycleRunResult measured = cyclelevel::runCycleLevel(graph, plan, system, options).value();
    measured.modelCycles = report::modelCyclesOfRegions(measured, graph, plan, system);
    WS_REQUIRE(outcome->cycleLevel != nullptr);
    WS_CHECK(
        untimed(cyclelevel::cycleRunToJson(*outcome->cycleLevel)) == untimed(cyclelevel::cycleRunToJson(measured)));
    WS_CHECK(outcome->cycleLevel->modelCycles == measured.modelCycles);
    // The report's model-level run is at the fabric's prompt length, and carries the fabric run.
    WS_REQUIRE(outcome->ran != nullptr);
    WS_CHECK_EQ(outcome->ran->metrics.promptTokens, std::int64_t(4));
    WS_REQUIRE(outcome->report && outcome->report->cycleLevel);
    WS_CHECK_EQ(outcome->report->manifest.seed, std::uint64_t(1));
    const std::vector<study::StudyStage> expected { study::StudyStage::Loading, study::StudyStage::Compiling,
        study::StudyStage::Running, study::StudyStage::CycleLevel, study::StudyStage::Done };
    WS_CHECK(stages == expected);
}

WS_TEST(aCycleLevelStudyStopsOnTheFabricWhenCancelled)
{
    const fs::path directory = freshDirectory("study-cycle-cancelled") / "run";
    {
        report::RunDirectoryWriter writer = report::RunDirectoryWriter::open(directory.string()).value();
        study::StudySpec spec;
        spec.paramsPath = dataDir() + "/cyclelevel/tiny_gpt2.yaml";
        spec.compile.mode = RunMode::Inference;
        spec.run.mode = RunMode::Inference;
        spec.level = study::StudyLevel::Cycle;
        spec.cycle.promptTokens = 8;
        spec.writer = &writer;
        std::atomic<bool> cancel { false };
        std::int64_t lastPosition = -1;
        study::StudyControl control;
        control.cancelFlag = &cancel;
        control.progress = [&](const study::StudyProgress& at) {
            if (at.stage != study::StudyStage::CycleLevel || at.total == 0)
                return;
            lastPosition = at.done;
            if (at.done >= 2) // the third position of the prompt
                cancel = true;
        };
        const Expected<study::StudyOutcome> outcome = study::runStudy(spec, control);
        WS_REQUIRE(!outcome.hasValue());
        WS_CHECK(study::isCancellation(outcome.error()));
        WS_CHECK(lastPosition >= 2 && lastPosition < 8); // stopped inside the prompt, not at its end
        WS_CHECK(!hasReportFiles(directory));
    }
    WS_CHECK(!fs::exists(directory));
}

// The GUI's token run: a study from the model and plan it holds, whose control sees the fabric every
// observeEveryCycles cycles of a token (its frames) and gives the fabric run's own result.
WS_TEST(aCycleLevelStudyShowsItsControlTheFabric)
{
    const HeldInference held = heldInference();
    study::StudySpec spec = fabricStudy(held, 3);
    spec.cycle.observeEveryCycles = 256;
    struct Call {
        std::string phase;
        std::int64_t position = 0;
        std::int64_t positions = 0;
        std::uint64_t cycle = 0; // the fabric's
    };
    std::vector<Call> calls;
    int building = 0; // calls without a fabric
    study::StudyControl control;
    control.cycleProgress
        = [&](const std::string& phase, std::int64_t position, std::int64_t positions, const fabric::Fabric* fabric) {
              if (!fabric) {
                  WS_CHECK_EQ(phase, std::string("building"));
                  ++building;
              } else {
                  calls.push_back({ phase, position, positions, fabric->cycle() });
              }
              return true;
          };
    const Expected<study::StudyOutcome> outcome = study::runStudy(spec, control);
    WS_REQUIRE(outcome.hasValue() && outcome->cycleLevel != nullptr);
    WS_CHECK(outcome->plan == held.plan); // not compiled again
    WS_CHECK(outcome->ran == nullptr); // no report asked for: no model-level run

    // The fabric run called alone with the same options.
    cyclelevel::CycleRunOptions options;
    options.promptTokens = 3;
    options.observeEveryCycles = 256;
    cyclelevel::CycleRunResult measured
        = cyclelevel::runCycleLevel(held.model->graph, *held.plan, held.system, options).value();
    measured.modelCycles = report::modelCyclesOfRegions(measured, held.model->graph, *held.plan, held.system);
    WS_CHECK(
        untimed(cyclelevel::cycleRunToJson(*outcome->cycleLevel)) == untimed(cyclelevel::cycleRunToJson(measured)));
    WS_CHECK(outcome->cycleLevel->modelCycles == measured.modelCycles);

    // The prompt's two positions before the last run at once on the prefill kernels (their calls
    // carry the last of them, 1), then the decode step that feeds the last prompt token (2), each
    // run seen on the fabric at multiples of 256 cycles from its first call, no more often than
    // its cycles allow.
    WS_CHECK_EQ(building, 1);
    WS_REQUIRE(!calls.empty());
    std::vector<int> callsAt(3, 0);
    for (std::size_t i = 0; i < calls.size(); ++i) {
        const Call& call = calls[i];
        WS_CHECK_EQ(call.positions, std::int64_t(3));
        WS_REQUIRE(call.position >= 0 && call.position < 3);
        WS_CHECK_EQ(call.phase, std::string(call.position < 2 ? "prefill" : "decode"));
        ++callsAt[std::size_t(call.position)];
        if (i > 0 && calls[i - 1].position == call.position) {
            WS_CHECK(call.cycle > calls[i - 1].cycle);
            WS_CHECK_EQ((call.cycle - calls[i - 1].cycle) % 256, std::uint64_t(0));
        }
    }
    const std::uint64_t decodeCycles = measured.decode.back().cycles;
    WS_CHECK_EQ(outcome->cycleLevel->prefillBlock, 3); // the tiny GPT-2's heads
    WS_CHECK(callsAt[0] == 0 && callsAt[1] > 0);
    WS_CHECK(std::uint64_t(callsAt[1]) * 256 <= outcome->cycleLevel->prefillCycles);
    WS_CHECK(callsAt[2] > 0 && std::uint64_t(callsAt[2]) * 256 <= decodeCycles);
    WS_CHECK(2 * std::uint64_t(callsAt[2]) * 256 > decodeCycles); // the windows cover most of the token
}

WS_TEST(aCycleLevelStudyStopsWhenItsControlSaysSo)
{
    const HeldInference held = heldInference();
    // The cycle progress says stop at its third look at the fabric: it is not called again.
    int seen = 0;
    study::StudyControl refuse;
    refuse.cycleProgress = [&](const std::string&, std::int64_t, std::int64_t, const fabric::Fabric* fabric) {
        if (fabric)
            ++seen;
        return seen < 3;
    };
    study::StudySpec spec = fabricStudy(held, 8);
    spec.cycle.observeEveryCycles = 256;
    const Expected<study::StudyOutcome> refused = study::runStudy(spec, refuse);
    WS_REQUIRE(!refused.hasValue());
    WS_CHECK(study::isCancellation(refused.error()));
    WS_CHECK_EQ(seen, 3);

    // The cancel flag, set from the cycle progress: the fabric is not shown again once it is set.
    std::atomic<bool> cancel { false };
    int seenAfterCancel = 0;
    study::StudyControl control;
    control.cancelFlag = &cancel;
    control.cycleProgress = [&](const std::string&, std::int64_t position, std::int64_t, const fabric::Fabric*) {
        if (cancel)
            ++seenAfterCancel;
        if (position >= 1)
            cancel = true;
        return true;
    };
    const Expected<study::StudyOutcome> cancelled = study::runStudy(spec, control);
    WS_REQUIRE(!cancelled.hasValue());
    WS_CHECK(study::isCancellation(cancelled.error()));
    WS_CHECK_EQ(seenAfterCancel, 0);
}

WS_TEST(piecesTheSpecHoldsAreNotMadeAgain)
{
    const Expected<study::StudyOutcome> first = study::runStudy(smallTraining());
    WS_REQUIRE(first.hasValue());
    study::StudySpec spec = smallTraining();
    spec.paramsPath = "/nonexistent/never-read.yaml"; // the model is given
    spec.model = first->model;
    spec.plan = first->plan;
    spec.ran = first->ran;
    spec.scaling = first->scaling;
    spec.sensitivityResult = first->sensitivity;
    const Expected<study::StudyOutcome> again = study::runStudy(spec);
    WS_REQUIRE(again.hasValue());
    WS_CHECK(again->plan == first->plan);
    WS_CHECK(again->ran == first->ran);
    WS_CHECK(again->scaling == first->scaling);
    WS_CHECK(again->sensitivity == first->sensitivity);
    WS_CHECK_EQ(reportText(*again->report), reportText(*first->report));
}

WS_TEST(framesAreTheRunsFrameSource)
{
    study::StudySpec spec = smallTraining();
    spec.scalingCounts.clear();
    spec.sensitivity = false;
    spec.report = false;
    const Expected<study::StudyOutcome> without = study::runStudy(spec);
    WS_REQUIRE(without.hasValue());
    WS_CHECK(without->frames == nullptr); // not asked for
    spec.frames = true;
    const Expected<study::StudyOutcome> outcome = study::runStudy(spec);
    WS_REQUIRE(outcome.hasValue() && outcome->frames != nullptr);

    // The frames a viewer builds itself from the same run.
    const engine::FrameSource separate(
        *outcome->plan, outcome->model->graph, outcome->system, *outcome->ran, spec.calibration);
    const engine::FrameSource& frames = *outcome->frames;
    WS_REQUIRE(frames.frameCount() > 0);
    WS_CHECK_EQ(frames.frameCount(), separate.frameCount());
    WS_CHECK(frames.frameAtStep(0).peActivity == separate.frameAtStep(0).peActivity);
    WS_CHECK(frames.frameAtStep(frames.frameCount() - 1).linkLoad
        == separate.frameAtStep(separate.frameCount() - 1).linkLoad);
    WS_CHECK(frames.utilization(50).compute == separate.utilization(50).compute);

    // A held run gets its frames too, and is not run again.
    study::StudySpec held = spec;
    held.model = outcome->model;
    held.plan = outcome->plan;
    held.ran = outcome->ran;
    const Expected<study::StudyOutcome> again = study::runStudy(held);
    WS_REQUIRE(again.hasValue() && again->frames != nullptr);
    WS_CHECK(again->ran == outcome->ran);
    WS_CHECK_EQ(again->frames->frameCount(), frames.frameCount());
}

// A front end that ran the model level its own way (the GUI's run on screen, at the engine's default
// prompt) and the fabric after it reports both: the run keeps its options, the manifest the fabric's seed.
WS_TEST(aHeldRunStandsWithItsOptionsAtCycleLevel)
{
    study::StudySpec spec;
    spec.paramsPath = dataDir() + "/cyclelevel/tiny_gpt2.yaml";
    spec.compile.mode = RunMode::Inference;
    spec.run.mode = RunMode::Inference;
    spec.run.maxSteps = 2;
    const Expected<study::StudyOutcome> modelLevel = study::runStudy(spec);
    WS_REQUIRE(modelLevel.hasValue());
    study::StudySpec fabric = spec;
    fabric.model = modelLevel->model;
    fabric.plan = modelLevel->plan;
    fabric.level = study::StudyLevel::Cycle;
    fabric.cycle.promptTokens = 2;
    fabric.cycle.seed = 7;
    const Expected<study::StudyOutcome> onFabric = study::runStudy(fabric);
    WS_REQUIRE(onFabric.hasValue() && onFabric->cycleLevel != nullptr);

    study::StudySpec both = fabric;
    both.ran = modelLevel->ran;
    both.cycleLevel = onFabric->cycleLevel;
    both.report = true;
    const Expected<study::StudyOutcome> outcome = study::runStudy(both);
    WS_REQUIRE(outcome.hasValue() && outcome->report.has_value());
    WS_CHECK(outcome->ran == modelLevel->ran);
    WS_CHECK(outcome->cycleLevel == onFabric->cycleLevel);
    WS_CHECK_EQ(outcome->run.promptTokens, std::int64_t(0)); // the held run's, not the fabric's 2
    WS_CHECK_EQ(outcome->run.maxSteps, 2);
    WS_CHECK_EQ(outcome->report->manifest.seed, std::uint64_t(7));
    WS_CHECK_EQ(outcome->report->manifest.promptTokens, modelLevel->ran->metrics.promptTokens);
    WS_CHECK(outcome->report->cycleLevel.has_value());
}

WS_TEST(badInputIsALocatedDiagnostic)
{
    study::StudySpec spec;
    spec.paramsPath = dataDir() + "/no-such-params.yaml";
    const Expected<study::StudyOutcome> missing = study::runStudy(spec);
    WS_REQUIRE(!missing.hasValue());
    WS_CHECK_EQ(missing.error().file, spec.paramsPath);
    WS_CHECK(missing.error().kind == Diagnostic::Kind::BadInput);
    WS_CHECK(!study::isCancellation(missing.error()));

    spec = smallTraining();
    spec.systemName = "cs1"; // no SwarmX: one system only
    const Expected<study::StudyOutcome> swept = study::runStudy(spec);
    WS_REQUIRE(!swept.hasValue());
    WS_CHECK_EQ(swept.error().file, std::string("--sweep"));
    WS_CHECK_CONTAINS(swept.error().message, "system count 2 is more than CS-1 runs");
}
