#include "ui/mainwindow.h"

#include "ui/clusterpanel.h"
#include "ui/document.h"
#include "ui/layerspanel.h"
#include "ui/mainmenus.h"
#include "ui/messagepanel.h"
#include "ui/modelpanel.h"
#include "ui/optionnames.h"
#include "ui/placementoverlay.h"
#include "ui/placementpanel.h"
#include "ui/playbackbar.h"
#include "ui/playbackcontroller.h"
#include "ui/regiontablemodel.h"
#include "ui/runtoolbar.h"
#include "ui/scalingpanel.h"
#include "ui/screenshot.h"
#include "ui/sensitivitypanel.h"
#include "ui/sessionstate.h"
#include "ui/systempanel.h"
#include "ui/timelinedock.h"
#include "ui/timelinepanel.h"
#include "ui/utilizationpanel.h"
#include "ui/waferpresenter.h"
#include "ui/waferview.h"
#include "ui/windowstatus.h"

#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QMenu>
#include <QMimeData>
#include <QSettings>
#include <QStatusBar>
#include <QTableView>

// Resources live in the static UI library; register them once before first use.
static void initResources()
{
    Q_INIT_RESOURCE(waferscope);
}

namespace waferscope::ui {

MainWindow::MainWindow(std::vector<core::SystemSpec> systems, QWidget* parent)
    : QMainWindow(parent)
    , m_document(new Document(std::move(systems), this))
    , m_waferView(new WaferView(this))
    , m_presenter(new WaferPresenter(m_document, m_waferView, this))
    , m_clusterPanel(new ClusterPanel(this))
    , m_menus(new MainMenus(this, m_document))
    , m_playbackBar(new PlaybackBar(m_presenter->playback(), this))
    , m_messages(new MessagePanel(this))
    , m_modelPanel(new ModelPanel(this))
    , m_systemPanel(new SystemPanel(this))
    , m_placementPanel(new PlacementPanel(this))
    , m_timelines(new TimelineDock(this))
    , m_scalingPanel(new ScalingPanel(this))
    , m_layersPanel(new LayersPanel(this))
    , m_utilizationPanel(new UtilizationPanel(this))
    , m_sensitivityPanel(new SensitivityPanel(this))
{
    initResources();
    setWindowTitle(tr("WaferScope"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/waferscope.svg")));
    setAcceptDrops(true);
    setCentralWidget(m_waferView);
    setDockOptions(AnimatedDocks | AllowTabbedDocks | AllowNestedDocks);

    auto* toolBar = new RunToolBar(m_document, m_presenter, this);
    toolBar->addAction(m_menus->openAction());
    toolBar->addAction(tr("Fit wafer"), m_waferView, &WaferView::fitToView);
    toolBar->addAction(m_menus->runTokenAction());
    addToolBar(toolBar);
    addToolBarBreak();
    addToolBar(m_playbackBar);
    createDocks();

    auto* status = new WindowStatus(this, m_document);
    connect(m_presenter, &WaferPresenter::hoverTextChanged, status, &WindowStatus::setHoverText);
    connect(m_waferView, &WaferView::zoomChanged, status, &WindowStatus::setZoom);
    connectDocument();
    connect(m_presenter, &WaferPresenter::stepShown, this, &MainWindow::showStep);
    connect(m_presenter, &WaferPresenter::regionSelected, this, &MainWindow::showRegion);
    connect(m_placementPanel, &PlacementPanel::regionSelected, m_presenter, &WaferPresenter::selectRegion);
    connect(m_placementPanel, &PlacementPanel::runRequested, this,
        [this] { m_document->runKernel(m_presenter->selectedRegion()); });
    // The timeline's cursor moves the stepper to the work the wafer runs at that moment.
    connect(m_timelines->run(), &TimelinePanel::timeSelected, this, [this](double seconds) {
        if (const core::engine::FrameSource* frames = playback()->source()) {
            playback()->pause();
            playback()->seek(frames->stepAt(seconds));
        }
    });
    // A layer picked in the Layers dock: the stepper goes to its first step (its region on the
    // wafer, the cursors at its start); a layer without steps still selects its region.
    connect(m_layersPanel, &LayersPanel::layerPicked, this, [this](int layer) {
        if (const core::engine::FrameSource* frames = playback()->source())
            for (std::size_t i = 0; i < frames->steps().size(); ++i)
                if (frames->steps()[i].layer == layer) {
                    playback()->pause();
                    playback()->seek(i);
                    return;
                }
        if (const auto run = m_document->run(); run && std::size_t(layer) < run->metrics.layers.size())
            m_presenter->selectRegion(run->metrics.layers[std::size_t(layer)].region);
    });
    connect(m_clusterPanel, &ClusterPanel::jobActivated, this, &MainWindow::loadClusterJob);
    connect(m_clusterPanel, &ClusterPanel::failed, this, &MainWindow::showError);
    connect(m_clusterPanel, &ClusterPanel::scheduled, this, &MainWindow::settled);
    m_systemPanel->setSystem(currentSystem(), numSystems());
    statusBar()->showMessage(tr("Drop a Model Zoo params YAML on the window to load a model."));
}

MainWindow::~MainWindow() = default;

void MainWindow::connectDocument()
{
    Document* document = m_document;
    connect(document, &Document::info, this, [this](const QString& text) {
        m_messages->addMessage(MessagePanel::Severity::Info, text);
        statusBar()->showMessage(text, 10000);
    });
    connect(document, &Document::warning, this,
        [this](const QString& text) { m_messages->addMessage(MessagePanel::Severity::Warning, text); });
    connect(document, &Document::error, this, &MainWindow::showError);
    connect(document, &Document::status, this, [this](const QString& text) { statusBar()->showMessage(text, 10000); });
    connect(document, &Document::settingsChanged, this,
        [this] { m_systemPanel->setSystem(currentSystem(), numSystems()); });
    connect(document, &Document::loadStarted, this, [this](const QString& path) {
        m_modelPanel->setStatus(tr("Loading %1 …").arg(QFileInfo(path).fileName()));
        statusBar()->showMessage(tr("Loading %1 …").arg(path));
    });
    connect(document, &Document::modelChanged, this,
        [this] { m_modelPanel->setGraph(m_document->model()->path, m_document->graph()); });
    connect(document, &Document::loadFailed, this, [this](const QString& path) {
        m_modelPanel->setStatus(
            tr("Could not load %1 (see Messages); the model shown is unchanged.").arg(QFileInfo(path).fileName()));
    });
    connect(document, &Document::planChanged, this, &MainWindow::showPlan);
    connect(document, &Document::runChanged, this, &MainWindow::showRun);
    connect(document, &Document::baselineChanged, this, &MainWindow::showBaseline);
    connect(document, &Document::settled, this, &MainWindow::settled);
    connect(document, &Document::jobsFileOpened, this, &MainWindow::openJobsFile);
    connect(document, &Document::reportExported, this, &MainWindow::reportExported);
    // The regions of a token run on the fabric: measured cycles beside the model's.
    connect(document, &Document::tokenFinished, this, [this] {
        m_placementPanel->regionModel()->setTokenRun(m_document->tokenRun());
        m_playbackBar->setStepText(m_presenter->stepText()); // no longer "so far"
    });
    connect(document, &Document::kernelStarted, m_placementPanel, &PlacementPanel::setRunStatus);
    connect(document, &Document::kernelFinished, this,
        [this](const core::fabric::KernelResult&, const QString& text) { m_placementPanel->setRunStatus(text); });
    connect(document, &Document::kernelFailed, this, [this](const QString& message) {
        m_placementPanel->setRunStatus(tr("The cycle-level run failed: %1").arg(message));
    });
}

QDockWidget* MainWindow::addDock(
    const QString& title, const QString& objectName, QWidget* content, Qt::DockWidgetArea area)
{
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(objectName);
    dock->setWidget(content);
    addDockWidget(area, dock);
    m_menus->viewMenu()->addAction(dock->toggleViewAction());
    return dock;
}

void MainWindow::createDocks()
{
    QDockWidget* model = addDock(tr("Model"), QStringLiteral("modelDock"), m_modelPanel, Qt::LeftDockWidgetArea);
    QDockWidget* placement
        = addDock(tr("Placement"), QStringLiteral("placementDock"), m_placementPanel, Qt::LeftDockWidgetArea);
    splitDockWidget(model, placement, Qt::Vertical);
    QDockWidget* system = addDock(tr("System"), QStringLiteral("systemDock"), m_systemPanel, Qt::RightDockWidgetArea);
    QDockWidget* messages
        = addDock(tr("Messages"), QStringLiteral("messagesDock"), m_messages, Qt::BottomDockWidgetArea);
    QDockWidget* timeline
        = addDock(tr("Timeline"), QStringLiteral("timelineDock"), m_timelines, Qt::BottomDockWidgetArea);
    QDockWidget* scaling
        = addDock(tr("Scaling"), QStringLiteral("scalingDock"), m_scalingPanel, Qt::BottomDockWidgetArea);
    QDockWidget* layers = addDock(tr("Layers"), QStringLiteral("layersDock"), m_layersPanel, Qt::BottomDockWidgetArea);
    QDockWidget* utilization
        = addDock(tr("Utilization"), QStringLiteral("utilizationDock"), m_utilizationPanel, Qt::BottomDockWidgetArea);
    tabifyDockWidget(messages, timeline);
    tabifyDockWidget(timeline, utilization);
    tabifyDockWidget(utilization, scaling);
    QDockWidget* sensitivity = addDock(tr("What this result depends on"), QStringLiteral("sensitivityDock"),
        m_sensitivityPanel, Qt::BottomDockWidgetArea);
    tabifyDockWidget(scaling, layers);
    tabifyDockWidget(layers, sensitivity);
    QDockWidget* cluster
        = addDock(tr("Cluster"), QStringLiteral("clusterDock"), m_clusterPanel, Qt::BottomDockWidgetArea);
    tabifyDockWidget(sensitivity, cluster);
    timeline->raise();
    resizeDocks({ model, system }, { 560, 380 }, Qt::Horizontal);
    resizeDocks({ model, placement }, { 320, 480 }, Qt::Vertical);
    resizeDocks({ messages }, { 230 }, Qt::Vertical);
}

void MainWindow::showPlan(const QString& reason)
{
    if (const auto plan = m_document->plan())
        m_placementPanel->setPlan(plan, m_document->graph());
    else
        m_placementPanel->clearPlan(reason);
    // The presenter may have picked the plan's first region before the panel had the plan.
    showRegion(m_presenter->selectedRegion());
}

void MainWindow::showRun(const QString& reason)
{
    const std::shared_ptr<const RunState> state = m_document->runState();
    m_layersPanel->setRun(state ? state->run : nullptr);
    m_playbackBar->setStepText(m_presenter->stepText());
    if (!state) {
        if (reason.isEmpty())
            m_sensitivityPanel->clear(tr("What the run's throughput depends on appears here once a model has run."));
        else
            m_sensitivityPanel->clear(reason);
        m_utilizationPanel->clear(reason);
        m_timelines->run()->clear(reason);
        // While an inference run is on its way the scaling dock says why it will stay empty.
        const bool inferring
            = m_document->mode() == core::RunMode::Inference && m_document->plan() && m_document->isBusy();
        m_scalingPanel->clear(
            inferring ? tr("The scaling sweep is for training; switch Compile for to training to see it.") : reason);
        return;
    }
    m_timelines->run()->setRun(state->run, m_document->plan());
    m_sensitivityPanel->setRun(
        m_document->graph(), currentSystem(), m_document->compileOptions(), state->options, m_document->calibration());
    m_utilizationPanel->setSeries(state->utilization,
        tr("Share of each resource's capacity over %1 step(s) of the run, in bins of %2; the part up to the "
           "cursor is the run so far.")
            .arg(state->run->metrics.stepTimesS.size())
            .arg(state->utilization.binS >= 1e-3 ? tr("%1 ms").arg(state->utilization.binS * 1e3, 0, 'g', 3)
                                                 : tr("%1 us").arg(state->utilization.binS * 1e6, 0, 'g', 3)));
    if (state->sweep)
        m_scalingPanel->setSweep(state->sweep, numSystems(),
            tr("%1 on %2: training throughput")
                .arg(m_document->modelName(), QString::fromStdString(currentSystem().displayName)));
    else if (!state->sweepError.isEmpty())
        m_scalingPanel->clear(tr("No scaling sweep: %1").arg(state->sweepError));
    else
        m_scalingPanel->clear(tr("The scaling sweep is for training; switch Compile for to training to see it."));
}

bool MainWindow::raiseDock(const QString& name)
{
    auto* dock = findChild<QDockWidget*>(name + QStringLiteral("Dock"));
    if (!dock)
        return false;
    dock->show();
    dock->raise();
    return true;
}

void MainWindow::showBaseline()
{
    const Baseline& baseline = m_document->baseline();
    TimelinePanel* panel = m_timelines->baseline();
    if (baseline.frames)
        panel->setRun(baseline.run, baseline.plan);
    panel->setVisible(baseline.frames != nullptr);
}

void MainWindow::showStep(const std::shared_ptr<const FrameSnapshot>& snapshot)
{
    if (!snapshot->fabricFrame) { // a token on the fabric has its own clock, not the run's timeline
        m_timelines->run()->setCursorTime(snapshot->step.start);
        const Baseline& baseline = m_document->baseline();
        if (baseline.frames && snapshot->baselineIndex < baseline.frames->steps().size())
            m_timelines->baseline()->setCursorTime(baseline.frames->steps()[snapshot->baselineIndex].start);
        m_utilizationPanel->setCursorTime(snapshot->step.start);
        if (snapshot->step.layer >= 0)
            m_layersPanel->showLayer(snapshot->step.layer);
    }
    m_playbackBar->setStepText(m_presenter->stepText());
    Q_EMIT stepShown(snapshot->index);
}

void MainWindow::showRegion(int planIndex)
{
    m_placementPanel->selectRegion(planIndex);
    const auto plan = m_document->plan();
    if (planIndex >= 0 && plan)
        statusBar()->showMessage(describeRegion(*plan, m_document->graph().get(), planIndex));
    const QString unavailable = m_document->kernelUnavailableReason(planIndex);
    m_placementPanel->setRunnable(unavailable.isEmpty(),
        unavailable.isEmpty()
            ? tr("Run this region's GEMV for one token on the cycle-level fabric and check it against a reference.")
            : unavailable);
}

void MainWindow::openFiles(const QStringList& paths)
{
    if (paths.isEmpty())
        return;
    for (qsizetype i = 0; i + 1 < paths.size(); ++i)
        m_menus->addRecent(paths[i]);
    openFile(paths.back());
}

void MainWindow::openFile(const QString& path)
{
    m_document->open(path); // a jobs file comes back as Document::jobsFileOpened
}

void MainWindow::openJobsFile(const QString& path)
{
    if (const auto model = m_document->model())
        m_modelPanel->setGraph(model->path, m_document->graph());
    else
        m_modelPanel->setStatus(tr("%1 is a jobs file: see the Cluster dock.").arg(QFileInfo(path).fileName()));
    statusBar()->showMessage(tr("%1 is a jobs file: scheduling it in the Cluster dock").arg(path), 10000);
    m_menus->addRecent(path);
    raiseDock(QStringLiteral("cluster"));
    // The schedule needs room: once it is shown, the bottom docks take half the window.
    connect(
        m_clusterPanel, &ClusterPanel::scheduled, this,
        [this] {
            if (auto* dock = findChild<QDockWidget*>(QStringLiteral("clusterDock")))
                resizeDocks({ dock }, { height() / 2 }, Qt::Vertical);
        },
        Qt::SingleShotConnection);
    m_clusterPanel->open(path);
}

// A job clicked in the Cluster dock: its model, on its system and allocation, in the other docks.
void MainWindow::loadClusterJob(const QString& paramsPath, const QString& system, int numCsx, core::RunMode mode)
{
    if (!selectSystem(system))
        return showError(tr("%1: error: no such system").arg(system));
    setRunMode(core::compileModeFor(mode));
    if (mode != core::RunMode::Inference)
        if (const QString error = setNumSystems(numCsx); !error.isEmpty())
            return showError(error);
    m_document->open(paramsPath);
}

void MainWindow::exportReport(const QString& directory)
{
    statusBar()->showMessage(tr("Writing the report into %1 …").arg(directory));
    // The dock's sweep is of the run on screen (a new run clears it): the report reuses it.
    m_document->exportReport(
        directory, m_sensitivityPanel->isComputing() ? std::nullopt : m_sensitivityPanel->sensitivity());
}

QString MainWindow::saveWaferImage(const QString& path)
{
    const QString error = saveWidgetImage(m_waferView, path, windowTitle());
    if (error.isEmpty())
        m_messages->addMessage(MessagePanel::Severity::Info, tr("%1: saved the wafer view").arg(path));
    return error;
}

void MainWindow::showError(const QString& message)
{
    m_messages->addMessage(MessagePanel::Severity::Error, message);
    statusBar()->showMessage(message, 10000);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    if (event->mimeData()->hasUrls())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    const QList<QUrl> urls = event->mimeData()->urls();
    if (urls.isEmpty())
        return;
    event->acceptProposedAction();
    QStringList paths;
    for (const QUrl& url : urls) {
        if (!url.isLocalFile()) {
            showError(tr("%1: error: only local files can be opened").arg(url.toString()));
            continue;
        }
        paths << url.toLocalFile();
    }
    openFiles(paths);
}

void MainWindow::saveSession(QSettings& settings) const
{
    SessionState state;
    state.recentFiles = recentFiles();
    state.system = QString::fromStdString(currentSystem().name);
    state.numCsx = numSystems();
    state.mode = runModeName(m_document->mode());
    state.execution = executionName(m_document->execution());
    state.overlay = overlayName(overlay());
    state.speed = playback()->speed();
    state.stepUnit = int(m_playbackBar->stepUnit());
    state.geometry = saveGeometry();
    state.windowState = saveState(kLayoutVersion);
    writeSession(settings, state);
}

void MainWindow::restoreSession(QSettings& settings)
{
    const SessionState state = readSession(settings);
    m_menus->setRecentFiles(state.recentFiles);
    if (!state.system.isEmpty())
        selectSystem(state.system);
    if (state.numCsx > 0)
        setNumSystems(state.numCsx); // refused quietly when the generation cannot have that many
    if (const auto mode = runModeFromName(state.mode))
        setRunMode(*mode);
    if (const auto execution = executionFromName(state.execution))
        setExecution(*execution);
    if (const auto shown = overlayFromName(state.overlay))
        setOverlay(*shown);
    if (state.speed > 0.0)
        m_playbackBar->setSpeed(state.speed);
    if (state.stepUnit >= 0)
        m_playbackBar->setStepUnit(core::engine::StepUnit(state.stepUnit));
    if (!state.geometry.isEmpty())
        restoreGeometry(state.geometry);
    if (!state.windowState.isEmpty() && !restoreState(state.windowState, kLayoutVersion))
        m_messages->addMessage(MessagePanel::Severity::Warning,
            tr("%1: the saved window layout could not be restored (damaged, or from another version); using the "
               "default layout")
                .arg(settings.fileName()));
}

} // namespace waferscope::ui
