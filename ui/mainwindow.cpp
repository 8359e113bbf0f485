#include "ui/mainwindow.h"

#include "ui/cluster/clusterpanel.h"
#include "ui/mainmenus.h"
#include "ui/models/clustersession.h"
#include "ui/models/document.h"
#include "ui/models/fabricruns.h"
#include "ui/models/optionnames.h"
#include "ui/models/sensitivitymodel.h"
#include "ui/models/sessionstate.h"
#include "ui/panels/layerspanel.h"
#include "ui/panels/messagepanel.h"
#include "ui/panels/modelpanel.h"
#include "ui/panels/placementpanel.h"
#include "ui/panels/regiontablemodel.h"
#include "ui/panels/scalingpanel.h"
#include "ui/panels/sensitivitypanel.h"
#include "ui/panels/systempanel.h"
#include "ui/panels/timelinedock.h"
#include "ui/panels/timelinepanel.h"
#include "ui/panels/utilizationpanel.h"
#include "ui/runtoolbar.h"
#include "ui/screenshot.h"
#include "ui/wafer/meshrenderer.h"
#include "ui/wafer/placementoverlay.h"
#include "ui/wafer/playbackbar.h"
#include "ui/wafer/playbackcontroller.h"
#include "ui/wafer/waferpresenter.h"
#include "ui/wafer/waferview.h"
#include "ui/windowstatus.h"

#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QMenu>
#include <QMimeData>
#include <QSettings>
#include <QStatusBar>

// Resources live in the static UI library; register them once before first use.
static void initResources()
{
    Q_INIT_RESOURCE(waferscope);
}

namespace waferscope::ui {

MainWindow::MainWindow(std::vector<core::SystemSpec> systems, QWidget* parent)
    : QMainWindow(parent)
    , m_document(new Document(std::move(systems), this))
    , m_views { .wafer = new WaferView(this) }
    , m_presenter(new WaferPresenter(m_document, m_views.wafer, this))
    , m_sensitivity(new SensitivityModel(this))
    , m_cluster(new ClusterSession(this))
    , m_menus(nullptr)
{
    m_views.cluster = new ClusterPanel(m_cluster, this);
    m_menus = new MainMenus(this, m_document);
    m_views.playback = new PlaybackBar(m_presenter->playback(), this);
    m_views.messages = new MessagePanel(this);
    m_views.model = new ModelPanel(this);
    m_views.system = new SystemPanel(this);
    m_views.placement = new PlacementPanel(this);
    m_views.timelines = new TimelineDock(this);
    m_views.scaling = new ScalingPanel(this);
    m_views.layers = new LayersPanel(this);
    m_views.utilization = new UtilizationPanel(this);
    m_views.sensitivity = new SensitivityPanel(m_sensitivity, this);
    initResources();
    setWindowTitle(tr("WaferScope"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/waferscope.svg")));
    setAcceptDrops(true);
    setCentralWidget(m_views.wafer);
    setDockOptions(AnimatedDocks | AllowTabbedDocks | AllowNestedDocks);

    auto* toolBar = new RunToolBar(m_document, m_presenter, this);
    toolBar->addAction(m_menus->openAction());
    toolBar->addAction(tr("Fit wafer"), m_views.wafer, &WaferView::fitToView);
    toolBar->addAction(m_menus->runTokenAction());
    addToolBar(toolBar);
    addToolBarBreak();
    addToolBar(m_views.playback);
    createDocks();

    auto* status = new WindowStatus(this, m_document);
    connect(m_presenter, &WaferPresenter::hoverTextChanged, status, &WindowStatus::setHoverText);
    connect(m_views.wafer, &WaferView::zoomChanged, status, &WindowStatus::setZoom);
    connectDocument();
    connectViews();
    m_views.system->setSystem(m_document->system(), m_document->numSystems());
    statusBar()->showMessage(tr("Drop a Model Zoo params YAML on the window to load a model."));
}

void MainWindow::connectViews()
{
    PlaybackController* playback = m_presenter->playback();
    connect(m_presenter, &WaferPresenter::stepShown, this, &MainWindow::showStep);
    connect(m_presenter, &WaferPresenter::regionSelected, this, &MainWindow::showRegion);
    connect(m_views.placement, &PlacementPanel::regionSelected, m_presenter, &WaferPresenter::selectRegion);
    connect(m_views.placement, &PlacementPanel::runRequested, this,
        [this] { m_document->fabric()->runKernel(m_presenter->selectedRegion()); });
    // The timeline's cursor moves the stepper to the work the wafer runs at that moment.
    connect(m_views.timelines->run(), &TimelinePanel::timeSelected, this, [playback](double seconds) {
        if (const core::engine::FrameSource* frames = playback->source()) {
            playback->pause();
            playback->seek(frames->stepAt(seconds));
        }
    });
    // A layer picked in the Layers dock: the stepper goes to its first step (its region on the
    // wafer, the cursors at its start); a layer without steps still selects its region.
    connect(m_views.layers, &LayersPanel::layerPicked, this, [this, playback](int layer) {
        if (const core::engine::FrameSource* frames = playback->source())
            for (std::size_t i = 0; i < frames->steps().size(); ++i)
                if (frames->steps()[i].layer == layer) {
                    playback->pause();
                    playback->seek(i);
                    return;
                }
        if (const auto run = m_document->run(); run && std::size_t(layer) < run->metrics.layers.size())
            m_presenter->selectRegion(run->metrics.layers[std::size_t(layer)].region);
    });
    connect(m_cluster, &ClusterSession::jobActivated, this, &MainWindow::loadClusterJob);
    connect(m_cluster, &ClusterSession::failed, this, &MainWindow::showError);
    connect(m_views.cluster, &ClusterPanel::editRefused, this, &MainWindow::showError);
    connect(m_cluster, &ClusterSession::scheduled, this, &MainWindow::settled);
}

MainWindow::~MainWindow() = default;

void MainWindow::connectDocument()
{
    Document* document = m_document;
    connect(document, &Document::info, this, [this](const QString& text) {
        m_views.messages->addMessage(MessagePanel::Severity::Info, text);
        statusBar()->showMessage(text, 10000);
    });
    connect(document, &Document::warning, this,
        [this](const QString& text) { m_views.messages->addMessage(MessagePanel::Severity::Warning, text); });
    connect(document, &Document::error, this, &MainWindow::showError);
    connect(document, &Document::status, this, [this](const QString& text) { statusBar()->showMessage(text, 10000); });
    connect(document, &Document::settingsChanged, this,
        [this] { m_views.system->setSystem(m_document->system(), m_document->numSystems()); });
    connect(document, &Document::loadStarted, this, [this](const QString& path) {
        m_views.model->setStatus(tr("Loading %1 …").arg(QFileInfo(path).fileName()));
        statusBar()->showMessage(tr("Loading %1 …").arg(path));
    });
    connect(document, &Document::modelChanged, this,
        [this] { m_views.model->setGraph(m_document->model()->path, m_document->graph()); });
    connect(document, &Document::loadFailed, this, [this](const QString& path) {
        m_views.model->setStatus(
            tr("Could not load %1 (see Messages); the model shown is unchanged.").arg(QFileInfo(path).fileName()));
    });
    connect(document, &Document::planChanged, this, &MainWindow::showPlan);
    connect(document, &Document::runChanged, this, &MainWindow::showRun);
    connect(document, &Document::baselineChanged, this, &MainWindow::showBaseline);
    connect(document, &Document::settled, this, &MainWindow::settled);
    connect(document, &Document::jobsFileOpened, this, &MainWindow::openJobsFile);
    connect(document, &Document::reportExported, this, &MainWindow::reportExported);
    // The regions of a token run on the fabric: measured cycles beside the model's.
    FabricRuns* fabric = document->fabric();
    connect(fabric, &FabricRuns::tokenFinished, this, [this] {
        m_views.placement->regionModel()->setTokenRun(m_document->fabric()->tokenRun());
        m_views.playback->setStepText(m_presenter->stepText()); // no longer "so far"
    });
    connect(fabric, &FabricRuns::kernelStarted, m_views.placement, &PlacementPanel::setRunStatus);
    connect(fabric, &FabricRuns::kernelFinished, this,
        [this](const core::fabric::KernelResult&, const QString& text) { m_views.placement->setRunStatus(text); });
    connect(fabric, &FabricRuns::kernelFailed, this, [this](const QString& message) {
        m_views.placement->setRunStatus(tr("The cycle-level run failed: %1").arg(message));
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
    QDockWidget* model = addDock(tr("Model"), QStringLiteral("modelDock"), m_views.model, Qt::LeftDockWidgetArea);
    QDockWidget* placement
        = addDock(tr("Placement"), QStringLiteral("placementDock"), m_views.placement, Qt::LeftDockWidgetArea);
    splitDockWidget(model, placement, Qt::Vertical);
    QDockWidget* system = addDock(tr("System"), QStringLiteral("systemDock"), m_views.system, Qt::RightDockWidgetArea);
    QDockWidget* messages
        = addDock(tr("Messages"), QStringLiteral("messagesDock"), m_views.messages, Qt::BottomDockWidgetArea);
    QDockWidget* timeline
        = addDock(tr("Timeline"), QStringLiteral("timelineDock"), m_views.timelines, Qt::BottomDockWidgetArea);
    QDockWidget* scaling
        = addDock(tr("Scaling"), QStringLiteral("scalingDock"), m_views.scaling, Qt::BottomDockWidgetArea);
    QDockWidget* layers = addDock(tr("Layers"), QStringLiteral("layersDock"), m_views.layers, Qt::BottomDockWidgetArea);
    QDockWidget* utilization
        = addDock(tr("Utilization"), QStringLiteral("utilizationDock"), m_views.utilization, Qt::BottomDockWidgetArea);
    tabifyDockWidget(messages, timeline);
    tabifyDockWidget(timeline, utilization);
    tabifyDockWidget(utilization, scaling);
    QDockWidget* sensitivity = addDock(tr("What this result depends on"), QStringLiteral("sensitivityDock"),
        m_views.sensitivity, Qt::BottomDockWidgetArea);
    tabifyDockWidget(scaling, layers);
    tabifyDockWidget(layers, sensitivity);
    QDockWidget* cluster
        = addDock(tr("Cluster"), QStringLiteral("clusterDock"), m_views.cluster, Qt::BottomDockWidgetArea);
    tabifyDockWidget(sensitivity, cluster);
    timeline->raise();
    resizeDocks({ model, system }, { 560, 380 }, Qt::Horizontal);
    resizeDocks({ model, placement }, { 320, 480 }, Qt::Vertical);
    resizeDocks({ messages }, { 230 }, Qt::Vertical);
}

void MainWindow::showPlan(const QString& reason)
{
    if (const auto plan = m_document->plan())
        m_views.placement->setPlan(plan, m_document->graph());
    else
        m_views.placement->clearPlan(reason);
    // The presenter may have picked the plan's first region before the panel had the plan.
    showRegion(m_presenter->selectedRegion());
}

void MainWindow::showRun(const QString& reason)
{
    const std::shared_ptr<const RunState> state = m_document->runState();
    m_views.layers->setRun(state ? state->run : nullptr);
    m_views.playback->setStepText(m_presenter->stepText());
    if (!state) {
        if (reason.isEmpty())
            m_sensitivity->clear(tr("What the run's throughput depends on appears here once a model has run."));
        else
            m_sensitivity->clear(reason);
        m_views.utilization->clear(reason);
        m_views.timelines->run()->clear(reason);
        // While an inference run is on its way the scaling dock says why it will stay empty.
        const bool inferring
            = m_document->mode() == core::RunMode::Inference && m_document->plan() && m_document->isBusy();
        m_views.scaling->clear(
            inferring ? tr("The scaling sweep is for training; switch Compile for to training to see it.") : reason);
        return;
    }
    m_views.timelines->run()->setRun(state->run, m_document->plan());
    m_sensitivity->setRun(m_document->graph(), m_document->system(), m_document->compileOptions(), state->options,
        m_document->calibration());
    m_views.utilization->setSeries(state->utilization,
        tr("Share of each resource's capacity over %1 step(s) of the run, in bins of %2; the part up to the "
           "cursor is the run so far.")
            .arg(state->run->metrics.stepTimesS.size())
            .arg(state->utilization.binS >= 1e-3 ? tr("%1 ms").arg(state->utilization.binS * 1e3, 0, 'g', 3)
                                                 : tr("%1 us").arg(state->utilization.binS * 1e6, 0, 'g', 3)));
    if (state->sweep)
        m_views.scaling->setSweep(state->sweep, m_document->numSystems(),
            tr("%1 on %2: training throughput")
                .arg(m_document->modelName(), QString::fromStdString(m_document->system().displayName)));
    else if (!state->sweepError.isEmpty())
        m_views.scaling->clear(tr("No scaling sweep: %1").arg(state->sweepError));
    else
        m_views.scaling->clear(tr("The scaling sweep is for training; switch Compile for to training to see it."));
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
    TimelinePanel* panel = m_views.timelines->baseline();
    if (baseline.frames)
        panel->setRun(baseline.run, baseline.plan);
    panel->setVisible(baseline.frames != nullptr);
}

void MainWindow::showStep(const std::shared_ptr<const FrameSnapshot>& snapshot)
{
    if (!snapshot->fabricFrame) { // a token on the fabric has its own clock, not the run's timeline
        m_views.timelines->run()->setCursorTime(snapshot->step.start);
        const Baseline& baseline = m_document->baseline();
        if (baseline.frames && snapshot->baselineIndex < baseline.frames->steps().size())
            m_views.timelines->baseline()->setCursorTime(baseline.frames->steps()[snapshot->baselineIndex].start);
        m_views.utilization->setCursorTime(snapshot->step.start);
        if (snapshot->step.layer >= 0)
            m_views.layers->showLayer(snapshot->step.layer);
    }
    m_views.playback->setStepText(m_presenter->stepText());
    Q_EMIT stepShown(snapshot->index);
}

void MainWindow::showRegion(int planIndex)
{
    m_views.placement->selectRegion(planIndex);
    const auto plan = m_document->plan();
    if (planIndex >= 0 && plan)
        statusBar()->showMessage(describeRegion(*plan, m_document->graph().get(), planIndex));
    const QString unavailable = m_document->fabric()->kernelUnavailableReason(planIndex);
    m_views.placement->setRunnable(unavailable.isEmpty(),
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

QStringList MainWindow::recentFiles() const
{
    return m_menus->recentFiles();
}

void MainWindow::openFile(const QString& path)
{
    m_document->open(path); // a jobs file comes back as Document::jobsFileOpened
}

void MainWindow::openJobsFile(const QString& path)
{
    if (const auto model = m_document->model())
        m_views.model->setGraph(model->path, m_document->graph());
    else
        m_views.model->setStatus(tr("%1 is a jobs file: see the Cluster dock.").arg(QFileInfo(path).fileName()));
    statusBar()->showMessage(tr("%1 is a jobs file: scheduling it in the Cluster dock").arg(path), 10000);
    m_menus->addRecent(path);
    raiseDock(QStringLiteral("cluster"));
    // The schedule needs room: once it is shown, the bottom docks take half the window.
    connect(
        m_cluster, &ClusterSession::scheduled, this,
        [this] {
            if (auto* dock = findChild<QDockWidget*>(QStringLiteral("clusterDock")))
                resizeDocks({ dock }, { height() / 2 }, Qt::Vertical);
        },
        Qt::SingleShotConnection);
    m_cluster->open(path);
}

// A job clicked in the Cluster dock: its model, on its system and allocation, in the other docks.
void MainWindow::loadClusterJob(const QString& paramsPath, const QString& system, int numCsx, core::RunMode mode)
{
    const std::optional<std::size_t> index = m_document->systemIndexOf(system);
    if (!index)
        return showError(tr("%1: error: no such system").arg(system));
    Settings settings = m_document->withSystem(*index);
    settings.mode = core::compileModeFor(mode);
    if (mode != core::RunMode::Inference)
        settings.numSystems = numCsx;
    if (const QString error = m_document->settingsError(settings); !error.isEmpty())
        return showError(error);
    // The load first: the settings then wait for it, and its chain is the one compile of both.
    m_document->open(paramsPath);
    m_document->applySettings(settings);
}

void MainWindow::exportReport(const QString& directory)
{
    statusBar()->showMessage(tr("Writing the report into %1 …").arg(directory));
    // The dock's sweep is of the run on screen (a new run clears it): the report reuses it.
    m_document->exportReport(directory, m_sensitivity->isComputing() ? std::nullopt : m_sensitivity->sensitivity());
}

QString MainWindow::saveWaferImage(const QString& path)
{
    const QString error = saveWidgetImage(m_views.wafer, path, windowTitle());
    if (error.isEmpty())
        m_views.messages->addMessage(MessagePanel::Severity::Info, tr("%1: saved the wafer view").arg(path));
    return error;
}

void MainWindow::showError(const QString& message)
{
    m_views.messages->addMessage(MessagePanel::Severity::Error, message);
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
    state.system = QString::fromStdString(m_document->system().name);
    state.numCsx = m_document->numSystems();
    state.mode = runModeName(m_document->mode());
    state.execution = executionName(m_document->execution());
    state.overlay = overlayName(m_presenter->overlay());
    state.speed = m_presenter->playback()->speed();
    state.stepUnit = int(m_views.playback->stepUnit());
    state.geometry = saveGeometry();
    state.windowState = saveState(kLayoutVersion);
    writeSession(settings, state);
}

void MainWindow::restoreSession(QSettings& settings)
{
    const SessionState state = readSession(settings);
    m_menus->setRecentFiles(state.recentFiles);
    // The run settings as one transaction (one compile, were a model loaded).
    Settings run = m_document->settings();
    if (const std::optional<std::size_t> index = m_document->systemIndexOf(state.system))
        run = m_document->withSystem(*index);
    Settings sized = run;
    sized.numSystems = state.numCsx;
    if (state.numCsx > 0 && m_document->settingsError(sized).isEmpty())
        run = sized; // refused quietly when the generation cannot have that many
    if (const auto mode = runModeFromName(state.mode))
        run.mode = *mode;
    if (const auto execution = executionFromName(state.execution))
        run.execution = *execution;
    m_document->applySettings(run);
    if (const auto shown = overlayFromName(state.overlay))
        m_presenter->setOverlay(*shown);
    if (state.speed > 0.0)
        m_views.playback->setSpeed(state.speed);
    if (state.stepUnit >= 0)
        m_views.playback->setStepUnit(core::engine::StepUnit(state.stepUnit));
    if (!state.geometry.isEmpty())
        restoreGeometry(state.geometry);
    if (!state.windowState.isEmpty() && !restoreState(state.windowState, kLayoutVersion))
        m_views.messages->addMessage(MessagePanel::Severity::Warning,
            tr("%1: the saved window layout could not be restored (damaged, or from another version); using the "
               "default layout")
                .arg(settings.fileName()));
}

} // namespace waferscope::ui
