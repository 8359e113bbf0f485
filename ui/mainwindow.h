#pragma once

#include "core/compiler/compiler.h"
#include "core/compiler/plan.h"
#include "core/engine/engine.h"
#include "core/engine/framesource.h"
#include "core/engine/scaling.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"
#include "ui/meshrenderer.h"

#include <QMainWindow>

#include <memory>
#include <optional>
#include <vector>

class QComboBox;
class QProgressBar;
class QSettings;
class QToolButton;
class QDockWidget;
class QLabel;
class QSpinBox;
class QSortFilterProxyModel;
class QTableView;

namespace waferscope::ui {

class CompileController;
class KernelRunController;
class MessagePanel;
class ModelLoadController;
class PlacementPanel;
class PlaybackController;
class ReportExporter;
class UtilizationPanel;
struct FrameSnapshot;
class RunController;
class RunLayerTableModel;
class ScalingPanel;
class TimelinePanel;
struct RunOutcome;
class ModelPanel;
class SystemPanel;
class WaferView;

// The main window: wires the wafer view, the docks and the controls together; holds no engine
// logic. GUI thread.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(std::vector<core::SystemSpec> systems, QWidget* parent = nullptr);

    // Iterations (training) or decode steps (inference) the window's run puts on the timeline,
    // so stepping by iteration has somewhere to go.
    static constexpr int kStepsShown = 2;

    // Selects a system generation by preset name ("cs2"); false when there is no such preset.
    bool selectSystem(const QString& name);
    // Sets the cluster size; returns the error text when the generation cannot have that many.
    QString setNumSystems(int numSystems);
    // Opens a model file (File > Open, drag and drop, command line); it loads on a worker
    // thread, and on failure the previously loaded model stays.
    void openFile(const QString& path);
    // Several files (a drop, a multiple selection): opens the last, lists the others in the
    // recent files.
    void openFiles(const QStringList& paths);
    QStringList recentFiles() const { return m_recentFiles; }

    // The session (QSettings): recent files, run settings, geometry and dock layout. A layout
    // that cannot be restored (damaged, or from an older version) leaves the default one and
    // says so in Messages. The window never reads or writes settings on its own.
    void restoreSession(QSettings& settings);
    void saveSession(QSettings& settings) const;
    // Work in flight (loading, compiling, running), shown with a progress bar; cancelling it
    // drops its result and keeps what is on screen.
    bool isBusy() const;
    void cancelWork();
    ModelLoadController* modelLoader() const { return m_loader; }
    // Train or inference: what the loaded model is compiled for.
    void setRunMode(core::RunMode mode);
    core::RunMode runMode() const;
    // The placement shown (null before a model is compiled or when it cannot be mapped).
    std::shared_ptr<const core::ExecutionPlan> plan() const { return m_plan; }
    KernelRunController* kernelRunner() const { return m_kernelRunner; }
    // Selects a region of the plan: highlighted in the view, selected in the Placement dock;
    // under weight streaming the view shows that op's kernel on the whole fabric.
    void selectRegion(int planIndex);

    const core::SystemSpec& currentSystem() const;
    int numSystems() const;
    WaferView* waferView() const { return m_waferView; }
    MessagePanel* messagePanel() const { return m_messages; }
    ModelPanel* modelPanel() const { return m_modelPanel; }
    SystemPanel* systemPanel() const { return m_systemPanel; }
    PlacementPanel* placementPanel() const { return m_placementPanel; }
    TimelinePanel* timelinePanel() const { return m_timelinePanel; }
    ScalingPanel* scalingPanel() const { return m_scalingPanel; }
    // The Layers dock: the run's layers (time, utilization, bound), sortable.
    QTableView* layerTable() const { return m_layerTable; }
    UtilizationPanel* utilizationPanel() const { return m_utilizationPanel; }
    // The engine's run of the current plan (null until it is done, or without a plan).
    std::shared_ptr<const core::engine::RunResult> run() const { return m_run; }
    // The stepper and player of that run: which step the views show.
    PlaybackController* playback() const { return m_playback; }
    // What the wafer view colours the PEs by.
    void setOverlay(MeshOverlay overlay);
    MeshOverlay overlay() const { return m_overlay; }
    // Training: how the compiler chooses between pipelined and weight-streaming execution.
    void setExecution(core::ExecutionChoice execution);
    // File > Export timeline: the run's timeline as a Chrome trace (Perfetto, chrome://tracing).
    // File > Save wafer image: the wafer view as shown, PNG (pixels) or SVG (by the suffix).
    // Both write atomically and return the error text, or an empty string.
    QString exportTimeline(const QString& path);
    // File > Export report: the run directory of `waferscope-cli run --model_dir` plus
    // report.pdf, written on a worker; reportExported() tells when and how it went.
    void exportReport(const QString& directory);
    QString saveWaferImage(const QString& path);
    QString hoverText() const;
    // Compare > Keep this run as baseline: later runs (another system count, system or model)
    // are compared with it: the wafer's "activity vs baseline" overlay shows the difference at
    // the matching step, and the Timeline dock shows the baseline's timeline above this run's.
    void keepRunAsBaseline();
    void clearBaseline();
    bool hasBaseline() const { return m_baseline.frames != nullptr; }
    TimelinePanel* baselineTimelinePanel() const { return m_baselineTimeline; }

Q_SIGNALS:
    // The model and placement on screen are final for the latest request: the model was
    // compiled or could not be mapped, or the file was refused.
    void settled();
    // A step of the run is on screen in every view (the wafer's frame, the cursors, the layer).
    void stepShown(std::size_t index);
    // File > Export report finished: `error` is empty, or says why nothing was replaced.
    void reportExported(const QString& directory, const QString& error);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void createActions();
    void createToolBar();
    void createPlaybackBar();
    void showSnapshot(const std::shared_ptr<const FrameSnapshot>& snapshot);
    QString stepText() const; // the step on screen, for the caption and the playback bar
    void createDocks();
    QDockWidget* addDock(const QString& title, const QString& objectName, QWidget* content, Qt::DockWidgetArea area);
    void systemChanged();
    void showHoveredPe(std::optional<WaferPe> pe);
    void reportError(const QString& message);
    void modelLoaded(const QString& path, std::shared_ptr<const core::ModelGraph> graph);
    void recompile();
    void planCompiled(std::shared_ptr<const core::ExecutionPlan> plan);
    void planFailed(const QString& message);
    void runFinished(const RunOutcome& outcome);
    void showScene(); // the system's wafer(s) with the current plan's regions, if any
    void setBusy(const QString& what); // progress bar and cancel button, the title's state
    void setIdle(const QString& state); // the title's state once work ends
    void rebuildRecentMenu();
    void runSelectedRegion(); // its kernel on the cycle-level fabric
    void createCompareMenu();

    std::vector<core::SystemSpec> m_systems; // the presets, in menu order
    std::size_t m_current = 0; // index into m_systems
    WaferView* m_waferView;
    MessagePanel* m_messages;
    ModelPanel* m_modelPanel;
    SystemPanel* m_systemPanel;
    ModelLoadController* m_loader;
    CompileController* m_compiler;
    PlacementPanel* m_placementPanel;
    KernelRunController* m_kernelRunner;
    RunController* m_runner;
    TimelinePanel* m_timelinePanel;
    ScalingPanel* m_scalingPanel;
    RunLayerTableModel* m_layerModel;
    QSortFilterProxyModel* m_layerSorted;
    QTableView* m_layerTable;
    UtilizationPanel* m_utilizationPanel;
    PlaybackController* m_playback;
    std::shared_ptr<const core::engine::RunResult> m_run;
    MeshOverlay m_overlay = MeshOverlay::Placement;
    // The regions drawn for the plan (under weight streaming, for the op shown) and their SRAM
    // field, made on first use: rebuilt when the plan or the op changes, not at every step.
    struct PlacementCache {
        std::shared_ptr<const core::ExecutionPlan> plan; // held, so a new plan never shares its address
        int shown = -1;
        std::shared_ptr<const std::vector<PlacedRegion>> regions;
        std::shared_ptr<const MeshField> sram;
    };
    PlacementCache m_placement;
    bool m_syncing = false; // a step is being shown: selections it makes do not seek again
    std::shared_ptr<const core::ModelGraph> m_graph; // the model shown
    std::shared_ptr<const core::ExecutionPlan> m_plan; // its placement on the current system
    int m_selectedRegion = -1; // index into m_plan->regions
    QString m_runWhat; // the region running on the fabric, for its result line
    double m_runBound = 0.0; // the plan's FMAC bound for that run, in cycles
    QComboBox* m_modeBox = nullptr;
    QComboBox* m_executionBox = nullptr;
    QComboBox* m_overlayBox = nullptr;
    QComboBox* m_stepUnitBox = nullptr;
    QComboBox* m_speedBox = nullptr;
    QLabel* m_stepLabel = nullptr;
    QAction* m_playAction = nullptr;
    QComboBox* m_systemBox = nullptr;
    QSpinBox* m_numSystemsBox = nullptr;
    QLabel* m_hoverLabel = nullptr; // status bar: PE under the mouse
    QLabel* m_zoomLabel = nullptr; // status bar: pixels per PE
    QMenu* m_viewMenu = nullptr;
    QMenu* m_recentMenu = nullptr;
    QStringList m_recentFiles; // newest first
    QString m_fileName; // the model file shown (its name), for the title
    QProgressBar* m_progress = nullptr;
    QToolButton* m_cancelButton = nullptr;
    QAction* m_openAction = nullptr; // File > Open, shared by the menu and the toolbar
    QAction* m_exportTimelineAction = nullptr; // enabled while there is a run
    QAction* m_exportReportAction = nullptr; // enabled while there is a run
    ReportExporter* m_exporter = nullptr;
    QString m_inputPath; // the model file shown, as opened
    std::shared_ptr<const core::engine::ScalingSweep> m_sweep; // of the run shown, for reports
    core::CompileOptions m_compileOptions; // of the plan shown
    core::engine::RunOptions m_runOptions; // of the run shown
    std::shared_ptr<const core::engine::FrameSource> m_frames; // of the run shown
    struct Baseline {
        std::shared_ptr<const core::engine::FrameSource> frames; // null: no baseline
        QString label; // "gpt3 on 2 x CS-2, weight streaming"
    };
    Baseline m_baseline;
    TimelinePanel* m_baselineTimeline = nullptr; // above the run's, while there is a baseline
    QAction* m_keepBaselineAction = nullptr;
    QAction* m_clearBaselineAction = nullptr;
};

} // namespace waferscope::ui
