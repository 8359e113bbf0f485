#pragma once

#include "core/compiler/plan.h"
#include "core/engine/calibration.h"
#include "core/engine/engine.h"
#include "core/engine/framesource.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"
#include "core/model/modelloader.h"
#include "core/study/study.h"
#include "core/sweeps/scaling.h"

#include <QString>

#include <memory>
#include <string>

namespace waferscope::ui {

class JobContext;

// The steps of the Document's chain, load -> compile -> run -> frames, as plain functions its
// worker threads call, the values they make, and the lines the Document writes about them. The
// Document orders the steps and keeps what they return; this file is the one place that says
// how a step is done: each is a stage of the core study (core/study/study.h), the compile
// compileStudyPlan, the run and its sweep runStudy from the plan held.

// A model file as it was read: the exact bytes simulated, so an export's manifest hashes what
// ran even when the file was edited or deleted since.
struct LoadedModel {
    QString path; // as opened
    std::shared_ptr<const core::LoadedModelFile> file; // path, bytes and graph: a study's model
    std::shared_ptr<const core::ModelGraph> graph; // file's graph (shares its ownership)
};
// A loaded model file as the Document holds it.
std::shared_ptr<const LoadedModel> makeLoadedModel(const QString& path, core::LoadedModelFile file);

// The engine's run of the plan and what the window derives from it.
struct RunState {
    std::shared_ptr<const core::engine::RunResult> run;
    // Null when the frames of so many wafers would not fit in memory (the run stands).
    std::shared_ptr<const core::engine::FrameSource> frames;
    core::engine::UtilizationSeries utilization;
    std::shared_ptr<const core::sweeps::ScalingSweep> sweep; // training only
    QString sweepError; // why a training run has no sweep
    QString noFrames; // why there are no frames
    core::engine::RunOptions options;
};

// A model file read and built: the model, or the located error, or word that the file is a
// jobs file (the Cluster dock's, not a model).
struct LoadResult {
    std::shared_ptr<const LoadedModel> model;
    QString error;
    bool jobsFile = false;
};
// Only a regular file's first bytes are looked at to tell a jobs file; no YAML tree is built.
LoadResult loadModelFile(const QString& path);

// What a compile and a run of the model need.
struct RunRequest {
    std::shared_ptr<const LoadedModel> model;
    std::shared_ptr<const core::ExecutionPlan> plan; // the compile's; null to compile
    core::SystemSpec system;
    core::CompileOptions compile;
    core::engine::RunOptions options;
    int numSystems = 1; // the cluster size asked for: the sweep includes it
    core::engine::Calibration calibration;
    int utilizationBins = 400;
};
// The study of the request (model, system, options, calibration, plan): the piece the chain's
// steps and the report export all start from.
core::study::StudySpec studyOf(const RunRequest& request);

// The compile step: the study's compile stage (core::study::compileStudyPlan), cancellable. The
// plan, or the compiler's reason: `cannotMap` when the model does not fit these settings (the
// reason then says why, without the study's "cannot map ... onto ...", which the Document words).
struct CompileOutcome {
    std::shared_ptr<const core::ExecutionPlan> plan;
    QString error;
    bool cannotMap = false;
};
CompileOutcome compilePlan(const RunRequest& request, const JobContext& context);
// The run's state, or (run null) the engine's error in `error`.
struct RunOutcome {
    std::shared_ptr<RunState> state = std::make_shared<RunState>();
    QString error;
};
// Runs the plan on the simulated cluster with its frames (a study from the plan held: frames
// dropped when they would not fit in memory), and for training sweeps the cluster size (a second
// study from the run, so that a failed sweep leaves the run standing). Progress: each study's
// fraction, the run's in the first half, the sweep's in the second; both hear the job's cancel.
RunOutcome runPlan(const RunRequest& request, const JobContext& context);

// A study's control for a job: the job's cancel flag, and its progress fraction mapped onto
// [from, from + span] of the job's.
core::study::StudyControl studyControl(const JobContext& context, double from = 0.0, double span = 1.0);

// The lines the Document writes: in Messages when a plan and a run arrive, and in the title
// once the chain is idle.
QString loadSummary(const QString& path, const core::ModelGraph& graph);
int wafersShown(const core::ExecutionPlan& plan); // the wafers the plan's regions span
QString planSummary(const core::ExecutionPlan& plan, const QString& model, const core::SystemSpec& system);
QString runSummary(const core::engine::Metrics& metrics, const QString& model, const core::SystemSpec& system);
QString runIdleState(
    const core::engine::Metrics& metrics, const core::SystemSpec& system, core::ExecutionMode execution);
// A kept run's name beside later ones: "MODEL on SYSTEM x N, MODE".
QString baselineLabel(const QString& model, const core::engine::Metrics& metrics, const core::SystemSpec& system,
    core::ExecutionMode mode);

} // namespace waferscope::ui
