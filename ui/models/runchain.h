#pragma once

#include "core/compiler/plan.h"
#include "core/engine/calibration.h"
#include "core/engine/engine.h"
#include "core/engine/framesource.h"
#include "core/engine/scaling.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"

#include <QString>

#include <memory>
#include <string>

namespace waferscope::ui {

class JobContext;

// The steps of the Document's chain, load -> compile -> run -> frames, as plain functions its
// worker threads call, the values they make, and the lines the Document writes about them. The
// Document orders the steps and keeps what they return; this file is the one place that says
// how a step is done (and the one to point at a core study entry once there is one).

// A model file as it was read: the exact bytes simulated, so an export's manifest hashes what
// ran even when the file was edited or deleted since.
struct LoadedModel {
    QString path; // as opened
    std::string bytes;
    std::shared_ptr<const core::ModelGraph> graph;
};

// The engine's run of the plan and what the window derives from it.
struct RunState {
    std::shared_ptr<const core::engine::RunResult> run;
    // Null when the frames of so many wafers would not fit in memory (the run stands).
    std::shared_ptr<const core::engine::FrameSource> frames;
    core::engine::UtilizationSeries utilization;
    std::shared_ptr<const core::engine::ScalingSweep> sweep; // training only
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

// What a run of a plan needs.
struct RunRequest {
    std::shared_ptr<const core::ModelGraph> graph;
    std::shared_ptr<const core::ExecutionPlan> plan;
    core::SystemSpec system;
    core::engine::RunOptions options;
    int numSystems = 1; // the cluster size asked for: the sweep includes it
    core::engine::Calibration calibration;
    int utilizationBins = 400;
};
// The run's state, or (run null) the engine's error in `error`.
struct RunOutcome {
    std::shared_ptr<RunState> state = std::make_shared<RunState>();
    QString error;
};
// Runs the plan on the simulated cluster, makes its frames (unless they would not fit in
// memory), and for training sweeps the cluster size. Progress: the run is the first half.
RunOutcome runPlan(const RunRequest& request, const JobContext& context);

// The lines the Document writes: in Messages when a plan and a run arrive, and in the title
// once the chain is idle.
QString loadSummary(const QString& path, const core::ModelGraph& graph);
int wafersShown(const core::ExecutionPlan& plan); // the wafers the plan's regions span
QString planSummary(const core::ExecutionPlan& plan, const QString& model, const core::SystemSpec& system);
QString runSummary(const core::engine::Metrics& metrics, const QString& model, const core::SystemSpec& system);
QString runIdleState(
    const core::engine::Metrics& metrics, const core::SystemSpec& system, core::ExecutionMode execution);

} // namespace waferscope::ui
