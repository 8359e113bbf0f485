#pragma once

#include "core/compiler/compiler.h"
#include "core/compiler/plan.h"
#include "core/cyclelevel/cyclerun.h"
#include "core/engine/calibration.h"
#include "core/engine/engine.h"
#include "core/hardware/systemspec.h"
#include "core/sweeps/sensitivity.h"

#include <QString>
#include <QStringList>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

namespace waferscope::ui {

struct LoadedModel;
struct RunState;

// What File > Export report writes from: the run on screen and how it was made. The model
// carries the bytes that were simulated, so the manifest hashes those, whatever the file on disk
// holds now.
struct ReportJob {
    QString directory;
    std::shared_ptr<const LoadedModel> model;
    std::shared_ptr<const core::ExecutionPlan> plan;
    std::shared_ptr<const RunState> run;
    core::CompileOptions compileOptions;
    // A token run on the fabric of the same plan (Run token on fabric), or null: the report then
    // has its "Cycle level vs model" part and cycle_vs_model.csv, as `run --level cycle` writes.
    std::shared_ptr<const core::cyclelevel::CycleRunResult> tokenRun;
    std::uint64_t tokenSeed = 1; // of tokenRun's weights and prompt: the manifest's seed
    // The system and calibration the run was made with: the report's "What this result depends
    // on" section varies their ranged values.
    core::SystemSpec system;
    core::engine::Calibration calibration = core::engine::builtinCalibration();
    // That section already swept for this run (the "What this result depends on" dock's), or
    // empty: the export sweeps it.
    std::optional<core::sweeps::Sensitivity> sensitivity;
};

// The files a report directory gets from the GUI, in writing order: the run directory of
// `waferscope-cli run --model_dir` (report.json, report.csv, report.html, trace.json,
// summary.txt) plus report.pdf.
QStringList reportFileNames(bool tokenRun = false);
QString reportCancelledMessage(const QString& directory);

// Writes the report directory on the calling thread (a worker: the Document's export lane): a
// core study (core/study/study.h) from the pieces the job holds, sweeping the sensitivity when it
// has none, with report.pdf as the study's extra file; at cycle level when the job has a token
// run. All files are staged then committed as one set, holding the directory's lock from the
// start (core/report/rundirectorywriter.h): another writer of the directory is refused at once.
// Returns the error text, or an empty string; once `cancelled` is set it stops within one run of
// the sweep or one piece of a file (about 1 MB), replaces nothing, leaves no temporary and returns
// reportCancelledMessage(). `progress` gets the study's fraction.
QString writeReportDirectory(const ReportJob& job, const std::atomic<bool>* cancelled = nullptr,
    const std::function<void(double)>& progress = {});

// File > Export timeline: the run as a Chrome trace (chrome://tracing, Perfetto), written
// atomically. Returns the error text, or an empty string.
QString writeTimelineTrace(const QString& path, const core::engine::RunResult& run, const core::ExecutionPlan* plan);

} // namespace waferscope::ui
