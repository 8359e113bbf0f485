#pragma once

#include "core/compiler/compiler.h"
#include "core/compiler/plan.h"
#include "core/engine/engine.h"
#include "core/hardware/systemspec.h"
#include "ui/document.h"
#include "ui/layerspanel.h"
#include "ui/mainmenus.h"
#include "ui/meshrenderer.h"
#include "ui/timelinedock.h"
#include "ui/waferpresenter.h"

#include <QMainWindow>

#include <memory>
#include <vector>

class QDockWidget;
class QSettings;
class QTableView;

namespace waferscope::ui {

class ClusterPanel;
class MessagePanel;
class ModelPanel;
class PlacementPanel;
class PlaybackBar;
class PlaybackController;
class ScalingPanel;
class SensitivityPanel;
class SystemPanel;
class TimelinePanel;
class UtilizationPanel;
class WaferView;
struct FrameSnapshot;

// The main window: builds the docks, toolbars and menus and wires them to the Document (the
// model, plan and run, and the jobs that make them) and to the WaferPresenter (what the wafer
// view shows, and the stepper). It holds no state of its own beyond its widgets. GUI thread.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(std::vector<core::SystemSpec> systems, QWidget* parent = nullptr);
    ~MainWindow() override;

    Document* document() const { return m_document; }
    // Settings, forwarded to the document (the toolbar follows).
    bool selectSystem(const QString& name) { return m_document->selectSystem(name); } // false: no such preset
    // The error text when the generation cannot have that many.
    QString setNumSystems(int numSystems) { return m_document->setNumSystems(numSystems); }
    void setRunMode(core::RunMode mode) { m_document->setMode(mode); }
    void setExecution(core::ExecutionChoice execution) { m_document->setExecution(execution); }
    const core::SystemSpec& currentSystem() const { return m_document->system(); }
    int numSystems() const { return m_document->numSystems(); }
    // Opens a model file (File > Open, drag and drop, command line) off the GUI thread; on
    // failure the previously loaded model stays. A jobs file (a top-level `jobs:` key) goes to the
    // Cluster dock instead, which it brings to the front. Which of the two it is, is read on the
    // Document's worker (a FIFO or a slow mount never holds up the window).
    void openFile(const QString& path);
    // Several files (a drop, a multiple selection): opens the last, lists the others in the
    // recent files.
    void openFiles(const QStringList& paths);
    QStringList recentFiles() const { return m_menus->recentFiles(); }

    // The session (QSettings): recent files, run settings, geometry and dock layout. A layout
    // that cannot be restored (damaged, or from an older version) leaves the default one and
    // says so in Messages. The window never reads or writes settings on its own.
    void restoreSession(QSettings& settings);
    void saveSession(QSettings& settings) const;
    // Work in flight (loading, compiling, running, exporting); cancelling it drops its result
    // and keeps what is on screen.
    bool isBusy() const { return m_document->isBusy(); }
    void cancelWork() { m_document->cancel(); }

    // Null before a model is compiled, or when it cannot be mapped.
    std::shared_ptr<const core::ExecutionPlan> plan() const { return m_document->plan(); }
    // Null until the run is done.
    std::shared_ptr<const core::engine::RunResult> run() const { return m_document->run(); }
    // Selects a region of the plan: highlighted in the view, selected in the Placement dock;
    // under weight streaming the view shows that op's kernel on the whole fabric.
    void selectRegion(int planIndex) { m_presenter->selectRegion(planIndex); }
    void setOverlay(MeshOverlay overlay) { m_presenter->setOverlay(overlay); }
    MeshOverlay overlay() const { return m_presenter->overlay(); }
    QString hoverText() const { return m_presenter->hoverText(); }
    // File > Export timeline and File > Export report (the document writes them); File > Save
    // wafer image: the wafer view as shown, PNG (pixels) or SVG (by the suffix). Writes
    // atomically; returns the error text, or an empty string.
    QString exportTimeline(const QString& path) { return m_document->exportTimeline(path); }
    void exportReport(const QString& directory);
    QString saveWaferImage(const QString& path);
    // Compare > Keep this run as baseline / Clear baseline.
    void keepRunAsBaseline() { m_document->keepRunAsBaseline(); }
    void clearBaseline() { m_document->clearBaseline(); }
    bool hasBaseline() const { return m_document->baseline().frames != nullptr; }
    void showError(const QString& message); // in Messages and the status bar

    WaferView* waferView() const { return m_waferView; }
    MessagePanel* messagePanel() const { return m_messages; }
    ModelPanel* modelPanel() const { return m_modelPanel; }
    SystemPanel* systemPanel() const { return m_systemPanel; }
    PlacementPanel* placementPanel() const { return m_placementPanel; }
    TimelinePanel* timelinePanel() const { return m_timelines->run(); }
    TimelinePanel* baselineTimelinePanel() const { return m_timelines->baseline(); }
    ScalingPanel* scalingPanel() const { return m_scalingPanel; }
    QTableView* layerTable() const { return m_layersPanel->table(); } // the Layers dock
    UtilizationPanel* utilizationPanel() const { return m_utilizationPanel; }
    SensitivityPanel* sensitivityPanel() const { return m_sensitivityPanel; } // "What this result depends on"
    ClusterPanel* clusterPanel() const { return m_clusterPanel; } // jobs files on a shared cluster
    // Shows a dock and brings it to the front of its tabs: a name of dockNames() ("sensitivity"
    // for the "sensitivityDock", "cluster" for the Cluster dock). False when there is no such dock.
    bool raiseDock(const QString& name);
    PlaybackController* playback() const { return m_presenter->playback(); } // which step the views show

Q_SIGNALS:
    // The model and placement on screen are final for the latest request: the model was
    // compiled and run, or could not be mapped, or the file was refused.
    void settled();
    // A step of the run is on screen in every view (the wafer's frame, the cursors, the layer).
    void stepShown(std::size_t index);
    // File > Export report finished: `error` is empty, or says why nothing was replaced.
    void reportExported(const QString& directory, const QString& error);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void openJobsFile(const QString& path);
    void createDocks();
    QDockWidget* addDock(const QString& title, const QString& objectName, QWidget* content, Qt::DockWidgetArea area);
    void connectDocument();
    void showPlan(const QString& reason);
    void showRun(const QString& reason);
    void showBaseline();
    void showStep(const std::shared_ptr<const FrameSnapshot>& snapshot);
    void showRegion(int planIndex);
    void loadClusterJob(const QString& paramsPath, const QString& system, int numCsx, core::RunMode mode);

    Document* m_document; // the model, plan and run, and the jobs that make them
    WaferView* m_waferView;
    WaferPresenter* m_presenter; // what the wafer view shows; owns the stepper
    ClusterPanel* m_clusterPanel; // owns the jobs file, its schedule and its worker (before the menus, which use it)
    MainMenus* m_menus;
    PlaybackBar* m_playbackBar;
    MessagePanel* m_messages;
    ModelPanel* m_modelPanel;
    SystemPanel* m_systemPanel;
    PlacementPanel* m_placementPanel;
    TimelineDock* m_timelines; // the run's timeline and the baseline's
    ScalingPanel* m_scalingPanel;
    LayersPanel* m_layersPanel;
    UtilizationPanel* m_utilizationPanel;
    SensitivityPanel* m_sensitivityPanel;
};

} // namespace waferscope::ui
