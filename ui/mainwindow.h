#pragma once

#include "core/hardware/systemspec.h"
#include "ui/models/document.h"
#include "ui/wafer/waferpresenter.h"

#include <QMainWindow>

#include <memory>
#include <vector>

class QDockWidget;
class QSettings;

namespace waferscope::ui {

class ClusterPanel;
class ClusterSession;
class LayersPanel;
class MainMenus;
class MessagePanel;
class ModelPanel;
class PlacementPanel;
class PlaybackBar;
class PlaybackController;
class ScalingPanel;
class SensitivityModel;
class SensitivityPanel;
class SystemPanel;
class TimelineDock;
class UtilizationPanel;
class WaferView;
struct FrameSnapshot;

// The widgets of the main window, for the screenshot and for tests that look at what is drawn.
struct MainWindowViews {
    WaferView* wafer = nullptr; // the central view
    MessagePanel* messages = nullptr;
    ModelPanel* model = nullptr;
    SystemPanel* system = nullptr;
    PlacementPanel* placement = nullptr;
    TimelineDock* timelines = nullptr; // the run's timeline and the baseline's
    ScalingPanel* scaling = nullptr;
    LayersPanel* layers = nullptr;
    UtilizationPanel* utilization = nullptr;
    SensitivityPanel* sensitivity = nullptr; // "What this result depends on"
    ClusterPanel* cluster = nullptr; // jobs files on a shared cluster
    PlaybackBar* playback = nullptr;
};

// The main window: builds the docks, toolbars and menus and wires them to the models beside it:
// the Document (the model, plan and run, and the jobs that make them), the SensitivityModel, the
// ClusterSession and the WaferPresenter (what the wafer view shows, and the stepper). Settings,
// runs and the stepper are driven through those objects; the window holds no state of its own
// beyond its widgets. GUI thread.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(std::vector<core::SystemSpec> systems, QWidget* parent = nullptr);
    ~MainWindow() override;

    // The models the window shows and drives.
    Document* document() const { return m_document; } // settings, the chain, exports, baseline
    WaferPresenter* presenter() const { return m_presenter; } // the overlay, selected region, stepper
    SensitivityModel* sensitivity() const { return m_sensitivity; } // "What this result depends on"
    ClusterSession* cluster() const { return m_cluster; } // the jobs file on its shared cluster
    const MainWindowViews& views() const { return m_views; }

    // Opens a model file (File > Open, drag and drop, command line) off the GUI thread; on
    // failure the previously loaded model stays. A jobs file (a top-level `jobs:` key) goes to the
    // Cluster dock instead, which it brings to the front. Which of the two it is, is read on the
    // Document's worker (a FIFO or a slow mount never holds up the window).
    void openFile(const QString& path);
    // Several files (a drop, a multiple selection): opens the last, lists the others in the
    // recent files.
    void openFiles(const QStringList& paths);
    QStringList recentFiles() const;

    // The session (QSettings): recent files, run settings, geometry and dock layout. A layout
    // that cannot be restored (damaged, or from an older version) leaves the default one and
    // says so in Messages. The window never reads or writes settings on its own.
    void restoreSession(QSettings& settings);
    void saveSession(QSettings& settings) const;
    // File > Export report (the document writes it, with the dock's sweep when it has one);
    // File > Save wafer image: the wafer view as shown, PNG (pixels) or SVG (by the suffix).
    // Writes atomically; returns the error text, or an empty string.
    void exportReport(const QString& directory);
    QString saveWaferImage(const QString& path);
    void showError(const QString& message); // in Messages and the status bar
    // Shows a dock and brings it to the front of its tabs: a name of dockNames() ("sensitivity"
    // for the "sensitivityDock", "cluster" for the Cluster dock). False when there is no such dock.
    bool raiseDock(const QString& name);

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
    void connectViews();
    void showPlan(const QString& reason);
    void showRun(const QString& reason);
    void showBaseline();
    void showStep(const std::shared_ptr<const FrameSnapshot>& snapshot);
    void showRegion(int planIndex);
    void loadClusterJob(const QString& paramsPath, const QString& system, int numCsx, core::RunMode mode);

    Document* m_document; // the model, plan and run, and the jobs that make them
    MainWindowViews m_views;
    WaferPresenter* m_presenter; // what the wafer view shows; owns the stepper
    SensitivityModel* m_sensitivity; // the sweep of the run on screen
    ClusterSession* m_cluster; // the jobs file, its schedule and its worker (before the menus, which use it)
    MainMenus* m_menus;
};

} // namespace waferscope::ui
