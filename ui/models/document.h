#pragma once

#include "core/compiler/compiler.h"
#include "core/compiler/plan.h"
#include "core/engine/engine.h"
#include "core/engine/framesource.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"
#include "core/sweeps/scaling.h"
#include "core/sweeps/sensitivity.h"
#include "ui/models/runchain.h"

#include <QObject>
#include <QString>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::ui {

class FabricRuns;
class JobRunner;

// A run kept for comparison (Compare menu).
struct Baseline {
    std::shared_ptr<const core::engine::RunResult> run;
    std::shared_ptr<const core::ExecutionPlan> plan;
    std::shared_ptr<const core::engine::FrameSource> frames;
    QString label; // "gpt3 on 2 x CS-2, weight streaming"
};

// The generation of the chain each part of the document comes from. A chain (compile, run,
// frames) starts whenever the model or the settings change (settings changed while a model
// loads: when the load ends); the model is then restamped and the plan and run are dropped.
// Whenever a plan or run is held, its stamp equals the model's.
struct Generations {
    std::uint64_t current = 0;
    std::uint64_t model = 0;
    std::uint64_t plan = 0;
    std::uint64_t run = 0;
};

// What a model is compiled and run for (Document::applySettings).
struct Settings {
    std::size_t systemIndex = 0; // into Document::systems()
    int numSystems = 1;
    core::RunMode mode = core::RunMode::Train;
    core::ExecutionChoice execution = core::ExecutionChoice::Auto;
    bool operator==(const Settings&) const = default;
};

// The document behind the window: the loaded model, the settings it is compiled for, its plan,
// the run with its frames and sweep, and the baseline; and the chain that makes them, load ->
// compile -> run -> frames, plus the exports; the cycle-level runs of its plan are its
// FabricRuns. Owns no widgets. Every background job goes through a JobRunner, one lane per kind,
// so only the newest request of a kind is ever delivered.
// Lives on the GUI thread; every signal is emitted there.
class Document : public QObject {
    Q_OBJECT
public:
    explicit Document(std::vector<core::SystemSpec> systems, QObject* parent = nullptr);
    ~Document() override;

    // Iterations (training) or decode steps (inference) a run puts on the timeline.
    static constexpr int kStepsShown = 2;
    static constexpr int kUtilizationBins = 400;

    // Settings. A change is one transaction: it starts one new chain (when a model is loaded),
    // however many of them change. A change while a model loads waits for the load: the load's
    // chain compiles for the new settings (or, when the load fails, the model held does).
    const std::vector<core::SystemSpec>& systems() const { return m_systems; }
    const Settings& settings() const { return m_settings; }
    // Applies every field at once; returns the error text (nothing is applied), or empty.
    QString applySettings(const Settings& settings);
    // Why `settings` cannot be applied (a system index out of range, a cluster size the
    // generation cannot have), or empty.
    QString settingsError(const Settings& settings) const;
    std::optional<std::size_t> systemIndexOf(const QString& name) const; // empty: no such preset
    // The settings with another system: the cluster size stays when that generation can have
    // it, else becomes the largest it can.
    Settings withSystem(std::size_t index) const;
    const core::SystemSpec& system() const { return m_systems[m_settings.systemIndex]; }
    std::size_t systemIndex() const { return m_settings.systemIndex; }
    int numSystems() const { return m_settings.numSystems; }
    core::RunMode mode() const { return m_settings.mode; }
    core::ExecutionChoice execution() const { return m_settings.execution; }
    int maxSystems() const; // of the current generation
    // One field each (a transaction of one); setSystemIndex as withSystem.
    void setSystemIndex(std::size_t index);
    bool selectSystem(const QString& name); // false when there is no such preset
    QString setNumSystems(int numSystems); // the error text, or empty
    void setMode(core::RunMode mode);
    void setExecution(core::ExecutionChoice execution);
    // The engine's software profile (core/engine/calibration.h): a built-in profile's name or a
    // calibration file, as --calibration takes it. Returns the error text, or empty.
    const core::engine::Calibration& calibration() const { return m_calibration; }
    QString setCalibration(const QString& nameOrFile);

    // The chain.
    // Loads off the GUI thread; on failure the model stays. A jobs file is told apart there too
    // (jobsFileOpened), so the GUI thread never opens the file itself.
    void open(const QString& path);
    bool isBusy() const;
    void cancel(); // drops every job's result; what is held stays
    // Kernel and token runs on the cycle-level fabric, of the plan held (a new plan drops them).
    FabricRuns* fabric() const { return m_fabric; }
    // The run directory plus report.pdf; `sensitivity`: the run's sweep when one is at hand (the
    // dock's), else the export sweeps it.
    void exportReport(const QString& directory, std::optional<core::sweeps::Sensitivity> sensitivity = {});
    QString exportTimeline(const QString& path); // Chrome trace; the error text, or empty
    void keepRunAsBaseline();
    void clearBaseline();

    // The state (null pointers until there is one).
    std::shared_ptr<const LoadedModel> model() const { return m_model; }
    std::shared_ptr<const core::ModelGraph> graph() const { return m_model ? m_model->graph : nullptr; }
    std::shared_ptr<const core::ExecutionPlan> plan() const { return m_plan; }
    const core::CompileOptions& compileOptions() const { return m_compileOptions; }
    std::shared_ptr<const RunState> runState() const { return m_run; }
    std::shared_ptr<const core::engine::RunResult> run() const { return m_run ? m_run->run : nullptr; }
    const Baseline& baseline() const { return m_baseline; }
    const Generations& generations() const { return m_generations; }
    QString modelName() const; // the config's name, or empty

Q_SIGNALS:
    void settingsChanged();
    // How far the running chain has come, in [0, 1] (the run, then its scaling sweep).
    void progress(double fraction);
    // Busy with `what` ("compiling"), or idle (`what` empty) with `state` for the title.
    void busyChanged(const QString& what, const QString& state);
    void loadStarted(const QString& path);
    void modelChanged();
    void loadFailed(const QString& path, const QString& message);
    // The file open() was given is a jobs file (a top-level `jobs:` key): the model stays, and the
    // Cluster dock is the one to open it. No settled() follows from the Document.
    void jobsFileOpened(const QString& path);
    // The plan or the run was replaced or dropped; `reason` says why a view is empty.
    void planChanged(const QString& reason);
    void runChanged(const QString& reason);
    void baselineChanged();
    // The model and placement are final for the latest request (compiled and run, not mappable,
    // refused, failed or cancelled).
    void settled();
    // `error` is empty, or says why nothing was replaced.
    void reportExported(const QString& directory, const QString& error);
    // A line for the status bar alone.
    void status(const QString& text);
    // Lines for the Messages dock: info and errors also go to the status bar.
    void info(const QString& text);
    void warning(const QString& text);
    void error(const QString& text);

private:
    void settingChanged(); // a new chain for the new settings (or after the load), then settingsChanged
    void startChain(); // compile, then run
    void planReady(std::shared_ptr<const core::ExecutionPlan> plan, std::uint64_t generation);
    // What the compile (plan null) and the run of the model held are asked for.
    RunRequest runRequest(std::shared_ptr<const core::ExecutionPlan> plan) const;
    void planRefused(const QString& message);
    void runReady(RunState state, std::uint64_t generation);
    void runFailed(const QString& message);
    void cancelChain(); // the compile and run jobs, and the fabric's runs
    void dropPlanAndRun(const QString& reason); // and tells the views why
    // The title's state once every lane is idle (said at once when they are, else when the last
    // one ends), so the progress bar and Cancel show exactly while some job runs.
    void setIdle(const QString& state);

    std::vector<core::SystemSpec> m_systems; // the presets, in menu order
    Settings m_settings;
    bool m_chainAfterLoad = false; // settings changed while a model loaded: compile when it ends
    core::engine::Calibration m_calibration = core::engine::builtinCalibration();
    std::shared_ptr<const LoadedModel> m_model;
    std::shared_ptr<const core::ExecutionPlan> m_plan;
    core::CompileOptions m_compileOptions; // of m_plan
    std::shared_ptr<const RunState> m_run;
    Baseline m_baseline;
    Generations m_generations;
    QString m_idleState; // what setIdle() said last
    // One lane per kind of job: a newer job of a kind replaces the older one.
    JobRunner* m_loader;
    JobRunner* m_compiler;
    JobRunner* m_runner;
    JobRunner* m_exporter;
    FabricRuns* m_fabric; // the cycle-level runs of m_plan, a lane each
};

} // namespace waferscope::ui
