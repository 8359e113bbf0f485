#pragma once

// A study: one job from its spec to its outcome. Load the params file (or take a loaded model),
// compile the plan the software profile builds (engine::compileFor), run it on the model-level
// engine, then as asked the scaling sweep, the cycle-level run, the sensitivity sweep, the report
// and the run directory. Every front end runs its jobs through runStudy: the CLI's run, Python's
// Plan and Run, the cluster's timing cache, validate; the GUI's Document from its JobRunner.
//
// A spec may start part way: each piece it already holds (a loaded model, a compiled plan, a run,
// a sweep) skips the stage that would make it, so a front end that compiles, runs and exports in
// separate steps (Python, the GUI) gets from each step exactly what the one chain gives.
//
// Thread: runStudy runs on the caller's thread (the engine's sweeps fan out on the TBB pool) and
// may be called from any thread; two studies share nothing. The control's callbacks are called on
// the caller's thread or, during the sensitivity sweep, on pool threads, one at a time.
#include "core/common/expected.h"
#include "core/compiler/compiler.h"
#include "core/compiler/plan.h"
#include "core/cyclelevel/cyclerun.h"
#include "core/cyclelevel/trainrun.h"
#include "core/engine/calibration.h"
#include "core/engine/engine.h"
#include "core/engine/framesource.h"
#include "core/hardware/builtinpresets.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelloader.h"
#include "core/report/reportfile.h"
#include "core/report/rundirectorywriter.h"
#include "core/report/runreport.h"
#include "core/sweeps/scaling.h"
#include "core/sweeps/sensitivity.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace waferscope::core::study {

// Where the model is executed: the model-level engine, or the cycle-level fabric (inference, and
// training with weight streaming).
enum class StudyLevel { Model, Cycle };

// The stages of a study, in the order they run; a study runs those its spec asks for.
enum class StudyStage { Loading, Compiling, Running, Scaling, CycleLevel, Sensitivity, Writing, Done };
const char* toString(StudyStage stage); // "loading", "compiling", ..., "writing", "done"

// `run --level cycle`: the fabric run's options (core/cyclelevel/cyclerun.h; training:
// core/cyclelevel/trainrun.h).
struct CycleSpec {
    int tokens = 1; // decode steps
    int promptTokens = 16;
    // Training (RunOptions::mode Train): the micro-batch (0: the default), the hidden layers kept
    // (0: all), a constant learning rate (0: the config's schedule) and the steps.
    std::int64_t microBatch = 0;
    std::int64_t sequence = 0; // a decoder's tokens a sample (0: the config's)
    int layers = 0;
    double learningRate = 0.0;
    int steps = 1;
    std::uint64_t seed = 1; // weights and prompt; the report's manifest records it
    int threads = 1;
    // Cycles of a token between the fabric's calls of StudyControl::cycleProgress (the GUI's frame window).
    std::uint64_t observeEveryCycles = cyclelevel::CycleRunOptions {}.observeEveryCycles;
};

struct StudySpec {
    // The model: `model` when given, else the params file at `paramsPath` (core::loadModelFile).
    std::string paramsPath;
    std::shared_ptr<const LoadedModelFile> model;
    // The hardware: `system` when given (an edited preset), else the built-in preset `systemName`.
    std::string systemName { defaultPresetName() };
    std::optional<SystemSpec> system;

    CompileOptions compile;
    // The model-level run. Its `cancelled` is the study's own (StudyControl): leave it empty.
    engine::RunOptions run;
    engine::Calibration calibration = engine::builtinCalibration();
    StudyLevel level = StudyLevel::Model;
    CycleSpec cycle; // level Cycle only

    // Optional stages. A scaling sweep over these system counts (training and eval); a sensitivity
    // sweep of the headline figure (of the model-level run; at cycle level, of the report's); the
    // report (RunReport). A writer, opened by the caller before the study starts (it holds the
    // directory's lock), gets the report's files last; it implies the report and, at model level,
    // the sensitivity sweep.
    std::vector<int> scalingCounts;
    bool sensitivity = false;
    bool report = false;
    report::RunDirectoryWriter* writer = nullptr;
    // The model-level run's frames (engine::FrameSource, under the run's calibration): what a viewer
    // steps through and charts over time (the GUI's wafer and utilization views), of the run made or held.
    bool frames = false;
    // Files written beside the run directory's own (the GUI's report.pdf), made from the report.
    std::function<Expected<std::vector<report::ReportFile>>(const report::RunReport&)> extraFiles;

    // Pieces already made: each skips its stage. `plan` must have been compiled for this model,
    // system and compile options, `ran` run on it with `run`, `scaling` and `sensitivity` swept with
    // them. `cycleLevel` stands for the fabric run (its modelCycles filled). A held run stands with
    // `run` as it was made with, at cycle level too (the report's, the sensitivity's options).
    std::shared_ptr<const ExecutionPlan> plan;
    std::shared_ptr<const engine::RunResult> ran;
    std::shared_ptr<const sweeps::ScalingSweep> scaling;
    std::shared_ptr<const sweeps::Sensitivity> sensitivityResult;
    std::shared_ptr<const cyclelevel::CycleRunResult> cycleLevel;
};

// How far a study has come: its current stage, the stage's place among the stages this study runs,
// and within the stage the runs or positions done of those it has (total 0: not counted). The
// fraction over the whole study never decreases from one call to the next and ends at 1 (Done).
struct StudyProgress {
    StudyStage stage = StudyStage::Loading;
    int stageIndex = 0;
    int stageCount = 1;
    std::int64_t done = 0;
    std::int64_t total = 0;
    std::string detail; // the cycle level's phase ("prefill", "decode"), else empty
    double fraction = 0.0; // [0, 1]
};

struct StudyControl {
    // Polled between stages and by every stage while it works (the engine, the sweeps, the fabric,
    // the writer); set, the study stops within one run of a sweep and returns a cancellation (see
    // isCancellation). Either or both: a flag (the GUI's JobContext::cancelFlag, Python's Ctrl-C)
    // or a function (the cluster's ClusterOptions::cancelled).
    const std::atomic<bool>* cancelFlag = nullptr;
    std::function<bool()> cancelled;
    std::function<void(const StudyProgress&)> progress;
    // At cycle level, each of the fabric run's progress calls (cyclelevel::CycleRunOptions::progress),
    // on the caller's thread: the fabric every CycleSpec::observeEveryCycles cycles of a token, for a
    // live view of it (the GUI's token run records its frames). Not called once the study is stopped;
    // false stops it as a cancel does.
    cyclelevel::CycleProgress cycleProgress;

    bool stopped() const { return (cancelFlag && cancelFlag->load()) || (cancelled && cancelled()); }
};

struct StudyOutcome {
    std::shared_ptr<const LoadedModelFile> model;
    SystemSpec system;
    std::shared_ptr<const ExecutionPlan> plan;
    engine::RunOptions run; // as the model-level run used them (cancelled cleared)
    // The model-level run; a cycle-level study makes one only for its report.
    std::shared_ptr<const engine::RunResult> ran;
    std::shared_ptr<const engine::FrameSource> frames; // of `ran`, when the spec asks for them
    std::shared_ptr<const sweeps::ScalingSweep> scaling;
    std::shared_ptr<const sweeps::Sensitivity> sensitivity;
    std::shared_ptr<const cyclelevel::CycleRunResult> cycleLevel; // modelCycles filled
    std::shared_ptr<const cyclelevel::TrainRunResult> trainCycleLevel; // a training step at cycle level
    std::optional<report::RunReport> report;
};

// Runs the study. Errors are the stages' located Diagnostics: the params file's, an option's
// (named by its CLI flag), "cannot map MODEL onto SYSTEM: ..." (CannotMap), an invalid plan
// (Internal), or a cancellation. On any error, including a cancellation, the writer has written
// nothing.
Expected<StudyOutcome> runStudy(const StudySpec& spec, const StudyControl& control = {});

// What a cancelled study returns, and the test for it (the engine's own "cancelled" included).
Diagnostic cancellation();
bool isCancellation(const Diagnostic& diagnostic);

// The compile stage alone, for front ends that compile as a step of their own (Python's
// Model.compile, the CLI's compile and sensitivity): engine::compileFor with `run`'s prompt for an
// inference plan, "cannot map <modelPath> onto <system>: " before the compiler's CannotMap reason,
// and the plan checked (core::checkPlan; its first problem, Internal, located at "<label plan>").
Expected<ExecutionPlan> compileStudyPlan(const ModelGraph& graph, const std::string& modelPath,
    const SystemSpec& system, const CompileOptions& compile, const engine::Calibration& calibration,
    const engine::RunOptions& run, std::string_view label);

} // namespace waferscope::core::study
