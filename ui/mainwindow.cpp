#include "ui/mainwindow.h"

#include "ui/compilecontroller.h"
#include "ui/kernelruncontroller.h"
#include "ui/messagepanel.h"
#include "ui/modelloadcontroller.h"
#include "ui/modelpanel.h"
#include "ui/optionnames.h"
#include "ui/placementoverlay.h"
#include "ui/placementpanel.h"
#include "ui/playbackcontroller.h"
#include "ui/reportexporter.h"
#include "ui/runcontroller.h"
#include "ui/runlayertablemodel.h"
#include "ui/scalingpanel.h"
#include "ui/systempanel.h"
#include "ui/timelinepanel.h"
#include "ui/utilizationpanel.h"
#include "ui/waferview.h"

#include "core/hardware/clusterspec.h"

#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTableView>
#include <QToolBar>
#include <QToolButton>

#include <cmath>

// Resources live in the static UI library; register them once before first use.
static void initResources()
{
    Q_INIT_RESOURCE(waferscope);
}

namespace waferscope::ui {

MainWindow::MainWindow(std::vector<core::SystemSpec> systems, QWidget* parent)
    : QMainWindow(parent)
    , m_systems(std::move(systems))
    , m_waferView(new WaferView(this))
    , m_messages(new MessagePanel(this))
    , m_modelPanel(new ModelPanel(this))
    , m_systemPanel(new SystemPanel(this))
    , m_loader(new ModelLoadController(this))
    , m_compiler(new CompileController(this))
    , m_placementPanel(new PlacementPanel(this))
    , m_kernelRunner(new KernelRunController(this))
    , m_runner(new RunController(this))
    , m_timelinePanel(new TimelinePanel(this))
    , m_scalingPanel(new ScalingPanel(this))
    , m_layerModel(new RunLayerTableModel(this))
    , m_layerSorted(new QSortFilterProxyModel(this))
    , m_layerTable(new QTableView(this))
    , m_utilizationPanel(new UtilizationPanel(this))
    , m_playback(new PlaybackController(this))
{
    Q_ASSERT(!m_systems.empty());
    initResources();
    setWindowTitle(tr("WaferScope"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/waferscope.svg")));
    setAcceptDrops(true);
    setCentralWidget(m_waferView);
    setDockOptions(AnimatedDocks | AllowTabbedDocks | AllowNestedDocks);

    createActions();
    createToolBar();
    addToolBarBreak();
    createPlaybackBar();
    createDocks();

    m_hoverLabel = new QLabel(this);
    m_zoomLabel = new QLabel(this);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 0); // busy: the engine's stages report no fraction
    m_progress->setMaximumWidth(160);
    m_progress->setMaximumHeight(fontMetrics().height() + 4);
    m_progress->hide();
    m_cancelButton = new QToolButton(this);
    m_cancelButton->setText(tr("Cancel"));
    m_cancelButton->setToolTip(tr("Stop waiting for this work; what is on screen stays (Esc)"));
    m_cancelButton->setShortcut(QKeySequence(Qt::Key_Escape));
    m_cancelButton->hide();
    connect(m_cancelButton, &QToolButton::clicked, this, &MainWindow::cancelWork);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_cancelButton);
    statusBar()->addPermanentWidget(m_hoverLabel);
    statusBar()->addPermanentWidget(m_zoomLabel);
    connect(m_waferView, &WaferView::hoveredPeChanged, this, &MainWindow::showHoveredPe);
    connect(m_waferView, &WaferView::zoomChanged, this,
        [this](double pixelsPerPe) { m_zoomLabel->setText(tr("zoom %1 px/PE").arg(pixelsPerPe, 0, 'f', 2)); });

    connect(m_loader, &ModelLoadController::loaded, this,
        [this](int, const QString& path, std::shared_ptr<const core::ModelGraph> graph) { modelLoaded(path, graph); });
    connect(m_loader, &ModelLoadController::failed, this, [this](int, const QString& path, const QString& message) {
        reportError(message);
        setIdle(m_fileName.isEmpty() ? tr("%1 could not be loaded").arg(QFileInfo(path).fileName())
                                     : tr("%1 could not be loaded; this model stays").arg(QFileInfo(path).fileName()));
        m_modelPanel->setStatus(
            tr("Could not load %1 (see Messages); the model shown is unchanged.").arg(QFileInfo(path).fileName()));
        Q_EMIT settled();
    });
    connect(m_compiler, &CompileController::compiled, this,
        [this](int, std::shared_ptr<const core::ExecutionPlan> plan) { planCompiled(std::move(plan)); });
    connect(m_compiler, &CompileController::failed, this, [this](int, const QString& message) { planFailed(message); });
    m_exporter = new ReportExporter(this);
    connect(m_exporter, &ReportExporter::finished, this, [this](const QString& directory, const QString& error) {
        if (error.isEmpty()) {
            const QString done = tr("%1: wrote the report (%2)")
                                     .arg(directory, ReportExporter::fileNames().join(QStringLiteral(", ")));
            m_messages->addMessage(MessagePanel::Severity::Info, done);
            statusBar()->showMessage(done, 10000);
            setIdle({});
        } else if (error == ReportExporter::cancelledMessage(directory)) {
            m_messages->addMessage(MessagePanel::Severity::Info, error);
        } else {
            reportError(error);
            setIdle(tr("the report was not written"));
        }
        Q_EMIT reportExported(directory, error);
    });
    connect(m_runner, &RunController::finished, this, [this](int, const RunOutcome& outcome) { runFinished(outcome); });
    connect(m_runner, &RunController::failed, this, [this](int, const QString& message) {
        m_run.reset();
        m_exportTimelineAction->setEnabled(false);
        m_exportReportAction->setEnabled(false);
        m_playback->setSource(nullptr);
        m_utilizationPanel->clear(tr("The run failed: %1").arg(message));
        m_layerModel->setRun(nullptr);
        m_timelinePanel->clear(tr("The run failed: %1").arg(message));
        m_scalingPanel->clear(tr("The run failed: %1").arg(message));
        reportError(message);
        setIdle(tr("the run failed"));
        Q_EMIT settled();
    });
    // The timeline's cursor moves the stepper to the work the wafer runs at that moment.
    connect(m_timelinePanel, &TimelinePanel::timeSelected, this, [this](double seconds) {
        if (!m_playback->source())
            return;
        m_playback->pause();
        m_playback->seek(m_playback->source()->stepAt(seconds));
    });
    // A layer picked in the Layers dock: the stepper goes to its first step (its region on the
    // wafer, the cursors at its start); a layer without steps still selects its region.
    connect(m_layerTable->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
        [this](const QModelIndex& current) {
            if (!m_run || !current.isValid() || m_syncing)
                return;
            const int layer = m_layerSorted->mapToSource(current).row();
            if (const core::engine::FrameSource* frames = m_playback->source())
                for (std::size_t i = 0; i < frames->steps().size(); ++i)
                    if (frames->steps()[i].layer == layer) {
                        m_playback->pause();
                        m_playback->seek(i);
                        return;
                    }
            const int region = m_run->metrics.layers[std::size_t(layer)].region;
            if (region >= 0)
                selectRegion(region);
        });
    connect(m_playback, &PlaybackController::frameShown, this, &MainWindow::showSnapshot);
    connect(m_playback, &PlaybackController::playingChanged, this, [this](bool playing) {
        m_playAction->setIcon(style()->standardIcon(playing ? QStyle::SP_MediaPause : QStyle::SP_MediaPlay));
        m_playAction->setText(playing ? tr("Pause") : tr("Run"));
    });
    connect(m_placementPanel, &PlacementPanel::regionSelected, this, &MainWindow::selectRegion);
    connect(m_placementPanel, &PlacementPanel::runRequested, this, &MainWindow::runSelectedRegion);
    connect(
        m_kernelRunner, &KernelRunController::finished, this, [this](int, const core::fabric::KernelResult& result) {
            const QString text = tr("%1: %2 cycles on the fabric; the plan's FMAC bound is %3 cycles, the rest is "
                                    "multicast and reduction latency; max |error| %4 against a double-precision "
                                    "reference; %5 s")
                                     .arg(m_runWhat)
                                     .arg(result.cycles)
                                     .arg(m_runBound, 0, 'f', 0)
                                     .arg(result.maxAbsError, 0, 'g', 2)
                                     .arg(result.wallS, 0, 'f', 2);
            m_placementPanel->setRunStatus(text);
            m_messages->addMessage(MessagePanel::Severity::Info, text);
        });
    connect(m_kernelRunner, &KernelRunController::failed, this, [this](int, const QString& message) {
        m_placementPanel->setRunStatus(tr("The cycle-level run failed: %1").arg(message));
        reportError(message);
    });
    connect(m_waferView, &WaferView::peClicked, this,
        [this](WaferPe pe) { selectRegion(m_waferView->scene().planIndexAt(pe)); });

    systemChanged();
    statusBar()->showMessage(tr("Drop a Model Zoo params YAML on the window to load a model."));
}

void MainWindow::createActions()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    // One Open action for the menu and the toolbar.
    m_openAction = file->addAction(style()->standardIcon(QStyle::SP_DialogOpenButton), tr("&Open…"), this, [this] {
        openFiles(QFileDialog::getOpenFileNames(
            this, tr("Open Model Zoo params files"), QString(), tr("Model Zoo params (*.yaml *.yml);;All files (*)")));
    });
    m_openAction->setShortcut(QKeySequence::Open);
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    rebuildRecentMenu();
    file->addSeparator();
    m_exportTimelineAction = file->addAction(tr("Export &timeline (Chrome trace)…"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export the run's timeline"),
            QStringLiteral("trace.json"), tr("Chrome trace (*.json);;All files (*)"));
        if (!path.isEmpty())
            if (const QString error = exportTimeline(path); !error.isEmpty())
                reportError(error);
    });
    m_exportTimelineAction->setEnabled(false);
    m_exportReportAction = file->addAction(tr("Export &report (JSON, CSV, HTML, PDF, trace)…"), this, [this] {
        const QString directory = QFileDialog::getExistingDirectory(this, tr("Export the run's report into"));
        if (!directory.isEmpty())
            exportReport(directory);
    });
    m_exportReportAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    m_exportReportAction->setEnabled(false);
    file->addAction(tr("Save &wafer image…"), this, [this] {
        QString filter;
        const QString path = QFileDialog::getSaveFileName(this, tr("Save the wafer view"), QStringLiteral("wafer.png"),
            tr("PNG image (*.png);;SVG drawing (*.svg)"), &filter);
        if (!path.isEmpty())
            if (const QString error = saveWaferImage(path); !error.isEmpty())
                reportError(error);
    });
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, qApp, &QApplication::closeAllWindows);

    createCompareMenu();
    m_viewMenu = menuBar()->addMenu(tr("&View"));
    m_viewMenu->addAction(tr("&Fit wafer"), QKeySequence(Qt::Key_F), m_waferView, &WaferView::fitToView);
    m_viewMenu->addAction(tr("Zoom &in"), QKeySequence::ZoomIn, m_waferView, [this] { m_waferView->zoomBy(1.25); });
    m_viewMenu->addAction(tr("Zoom &out"), QKeySequence::ZoomOut, m_waferView, [this] { m_waferView->zoomBy(0.8); });
    m_viewMenu->addSeparator();

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About WaferScope"), this, [this] {
        QMessageBox::about(this, tr("About WaferScope"),
            tr("<b>WaferScope %1</b><p>Explorer and simulator of Cerebras-style wafer-scale systems: "
               "WSE-1/2/3 wafers, CS-X systems, MemoryX and SwarmX clusters.</p>")
                .arg(QApplication::applicationVersion()));
    });
}

void MainWindow::createToolBar()
{
    QToolBar* bar = addToolBar(tr("Run"));
    bar->setObjectName(QStringLiteral("runToolBar"));
    bar->setMovable(false);
    bar->addWidget(new QLabel(tr(" System "), bar));
    m_systemBox = new QComboBox(bar);
    for (const core::SystemSpec& system : m_systems)
        m_systemBox->addItem(QStringLiteral("%1 (%2)").arg(
                                 QString::fromStdString(system.displayName), QString::fromStdString(system.wafer.name)),
            QString::fromStdString(system.name));
    bar->addWidget(m_systemBox);
    bar->addWidget(new QLabel(tr("  Systems (num_csx) "), bar));
    m_numSystemsBox = new QSpinBox(bar);
    m_numSystemsBox->setMinimum(1);
    bar->addWidget(m_numSystemsBox);
    bar->addWidget(new QLabel(tr("  Compile for "), bar));
    m_modeBox = new QComboBox(bar);
    m_modeBox->addItem(tr("training"), int(core::RunMode::Train));
    m_modeBox->addItem(tr("inference"), int(core::RunMode::Inference));
    m_modeBox->setToolTip(tr("Training: layer-pipelined when the model fits the wafer, weight streaming otherwise. "
                             "Inference: the blocks on as many wafers as the weights and KV cache need."));
    bar->addWidget(m_modeBox);
    bar->addWidget(new QLabel(tr("  Execution "), bar));
    m_executionBox = new QComboBox(bar);
    m_executionBox->addItem(tr("auto"), int(core::ExecutionChoice::Auto));
    m_executionBox->addItem(tr("layer pipelined"), int(core::ExecutionChoice::Pipelined));
    m_executionBox->addItem(tr("weight streaming"), int(core::ExecutionChoice::WeightStreaming));
    m_executionBox->setToolTip(tr("Training: auto pipelines the layers when the model fits the wafer and streams "
                                  "the weights from MemoryX otherwise; the other two force one."));
    bar->addWidget(m_executionBox);
    bar->addWidget(new QLabel(tr("  Show "), bar));
    m_overlayBox = new QComboBox(bar);
    m_overlayBox->addItem(tr("placement"), int(MeshOverlay::Placement));
    m_overlayBox->addItem(tr("PE activity"), int(MeshOverlay::Activity));
    m_overlayBox->addItem(tr("SRAM"), int(MeshOverlay::Sram));
    m_overlayBox->addItem(tr("fabric traffic"), int(MeshOverlay::Traffic));
    m_overlayBox->addItem(tr("activity vs baseline"), int(MeshOverlay::Difference));
    m_overlayBox->setToolTip(tr("What the wafer view colours the PEs by: the compiler's regions, or from the run's "
                                "current step each PE's compute activity, its SRAM use, or its links' load."));
    bar->addWidget(m_overlayBox);
    bar->addSeparator();
    bar->addAction(m_openAction);
    bar->addAction(tr("Fit wafer"), m_waferView, &WaferView::fitToView);

    connect(m_systemBox, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (index >= 0 && std::size_t(index) != m_current) {
            m_current = std::size_t(index);
            systemChanged();
        }
    });
    connect(m_numSystemsBox, &QSpinBox::valueChanged, this, [this](int) {
        m_systemPanel->setSystem(currentSystem(), numSystems());
        recompile();
    });
    connect(m_modeBox, &QComboBox::currentIndexChanged, this, [this](int) { recompile(); });
    connect(m_executionBox, &QComboBox::currentIndexChanged, this, [this](int) { recompile(); });
    connect(m_overlayBox, &QComboBox::currentIndexChanged, this,
        [this](int) { setOverlay(MeshOverlay(m_overlayBox->currentData().toInt())); });
}

void MainWindow::setExecution(core::ExecutionChoice execution)
{
    m_executionBox->setCurrentIndex(m_executionBox->findData(int(execution)));
}

QDockWidget* MainWindow::addDock(
    const QString& title, const QString& objectName, QWidget* content, Qt::DockWidgetArea area)
{
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(objectName);
    dock->setWidget(content);
    addDockWidget(area, dock);
    m_viewMenu->addAction(dock->toggleViewAction());
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
    // The baseline's timeline sits above the run's while there is one (Compare menu).
    auto* timelines = new QSplitter(Qt::Vertical, this);
    m_baselineTimeline = new TimelinePanel(timelines);
    m_baselineTimeline->setObjectName(QStringLiteral("baselineTimeline"));
    m_baselineTimeline->hide();
    timelines->addWidget(m_baselineTimeline);
    timelines->addWidget(m_timelinePanel);
    QDockWidget* timeline
        = addDock(tr("Timeline"), QStringLiteral("timelineDock"), timelines, Qt::BottomDockWidgetArea);
    QDockWidget* scaling
        = addDock(tr("Scaling"), QStringLiteral("scalingDock"), m_scalingPanel, Qt::BottomDockWidgetArea);
    m_layerSorted->setSourceModel(m_layerModel);
    m_layerSorted->setSortRole(Qt::UserRole);
    m_layerTable->setModel(m_layerSorted);
    m_layerTable->setSortingEnabled(true);
    m_layerTable->sortByColumn(RunLayerTableModel::NameColumn, Qt::AscendingOrder);
    m_layerTable->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_layerTable->setSelectionMode(QAbstractItemView::SingleSelection);
    m_layerTable->verticalHeader()->hide();
    m_layerTable->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    m_layerTable->setWordWrap(false);
    m_layerTable->horizontalHeader()->setResizeContentsPrecision(64);
    m_layerTable->horizontalHeader()->setStretchLastSection(true);
    QDockWidget* layers = addDock(tr("Layers"), QStringLiteral("layersDock"), m_layerTable, Qt::BottomDockWidgetArea);
    QDockWidget* utilization
        = addDock(tr("Utilization"), QStringLiteral("utilizationDock"), m_utilizationPanel, Qt::BottomDockWidgetArea);
    tabifyDockWidget(messages, timeline);
    tabifyDockWidget(timeline, utilization);
    tabifyDockWidget(utilization, scaling);
    tabifyDockWidget(scaling, layers);
    timeline->raise();
    resizeDocks({ model, system }, { 560, 380 }, Qt::Horizontal);
    resizeDocks({ model, placement }, { 320, 480 }, Qt::Vertical);
    resizeDocks({ messages }, { 230 }, Qt::Vertical);
}

const core::SystemSpec& MainWindow::currentSystem() const
{
    return m_systems[m_current];
}

int MainWindow::numSystems() const
{
    return m_numSystemsBox->value();
}

bool MainWindow::selectSystem(const QString& name)
{
    const int index = m_systemBox->findData(name);
    if (index < 0)
        return false;
    m_systemBox->setCurrentIndex(index);
    return true;
}

QString MainWindow::setNumSystems(int numSystems)
{
    core::Expected<core::ClusterSpec> cluster = core::ClusterSpec::make(currentSystem(), numSystems);
    if (!cluster)
        return QString::fromStdString(cluster.error().message);
    m_numSystemsBox->setValue(numSystems);
    return {};
}

void MainWindow::systemChanged()
{
    const core::SystemSpec& system = currentSystem();
    m_numSystemsBox->setMaximum(system.swarmx.supported ? system.swarmx.maxSystems : 1);
    m_systemPanel->setSystem(system, numSystems());
    m_plan.reset(); // placed for another wafer
    showScene();
    recompile();
}

void MainWindow::setRunMode(core::RunMode mode)
{
    m_modeBox->setCurrentIndex(m_modeBox->findData(int(mode)));
}

core::RunMode MainWindow::runMode() const
{
    return core::RunMode(m_modeBox->currentData().toInt());
}

void MainWindow::recompile()
{
    if (!m_graph) {
        m_compiler->cancel();
        return;
    }
    core::CompileOptions options;
    options.mode = runMode();
    options.execution = core::ExecutionChoice(m_executionBox->currentData().toInt());
    options.numSystems = numSystems();
    setBusy(tr("compiling"));
    m_placementPanel->clearPlan(tr("Compiling %1 for %2 (%3) …")
                                    .arg(QString::fromStdString(m_graph->config.name),
                                        QString::fromStdString(currentSystem().displayName), m_modeBox->currentText()));
    m_runner->cancel();
    m_run.reset();
    m_exportTimelineAction->setEnabled(false);
    m_exportReportAction->setEnabled(false);
    m_playback->setSource(nullptr);
    m_layerModel->setRun(nullptr);
    m_compileOptions = options;
    m_compiler->compile(m_graph, currentSystem(), options);
}

void MainWindow::planCompiled(std::shared_ptr<const core::ExecutionPlan> plan)
{
    m_kernelRunner->cancel();
    m_plan = std::move(plan);
    m_selectedRegion = -1;
    int initial = -1;
    if (m_plan->mode == core::ExecutionMode::WeightStreaming) {
        // Show the first streamed matrix op rather than the embedding lookup.
        for (std::size_t i = 0; i < m_plan->regions.size() && initial < 0; ++i)
            if (m_plan->regions[i].kernel.kind == core::KernelPlan::Kind::StreamedGemm)
                initial = int(i);
    }
    m_placementPanel->setPlan(m_plan, m_graph);
    showScene();
    selectRegion(initial);
    const int wafers = wafersShown(*m_plan);
    QString summary = tr("compiled %1 for %2: %3, %4 regions on %5, PEs used %6%")
                          .arg(QString::fromStdString(m_graph->config.name),
                              QString::fromStdString(currentSystem().displayName), executionModeLabel(m_plan->mode))
                          .arg(m_plan->regions.size())
                          .arg(wafers == 1 ? tr("one wafer") : tr("%1 wafers").arg(wafers))
                          .arg(100.0 * m_plan->peUtilization, 0, 'f', 1);
    if (m_plan->mode != core::ExecutionMode::WeightStreaming)
        summary += tr(", load imbalance %1").arg(m_plan->loadImbalance, 0, 'f', 3);
    m_messages->addMessage(MessagePanel::Severity::Info, summary);
    statusBar()->showMessage(summary, 10000);
    // Run the plan on the simulated cluster (and sweep the cluster size for training); the
    // window is settled once that is on screen too.
    core::engine::RunOptions options;
    options.mode = core::runKindFor(runMode());
    options.maxSteps = kStepsShown;
    m_utilizationPanel->clear(tr("Running …"));
    m_timelinePanel->clear(
        tr("Running %1 on the simulated cluster …").arg(QString::fromStdString(m_graph->config.name)));
    m_scalingPanel->clear(options.mode == core::engine::RunKind::Inference
            ? tr("The scaling sweep is for training; switch Compile for to training to see it.")
            : tr("Sweeping 1 to %1 systems …")
                  .arg(currentSystem().swarmx.supported ? currentSystem().swarmx.maxSystems : 1));
    setBusy(tr("running"));
    m_runOptions = options;
    m_runner->run(m_graph, m_plan, currentSystem(), options, numSystems());
}

void MainWindow::runFinished(const RunOutcome& outcome)
{
    m_run = outcome.run;
    m_timelinePanel->setRun(m_run, m_plan);
    m_utilizationPanel->setSeries(outcome.utilization,
        tr("Share of each resource's capacity over %1 step(s) of the run, in bins of %2; the part up to the "
           "cursor is the run so far.")
            .arg(m_run->metrics.stepTimesS.size())
            .arg(outcome.utilization.binS >= 1e-3 ? tr("%1 ms").arg(outcome.utilization.binS * 1e3, 0, 'g', 3)
                                                  : tr("%1 us").arg(outcome.utilization.binS * 1e6, 0, 'g', 3)));
    // Frames of hundreds of wafers would not fit in memory: the run stands, without them.
    const std::optional<core::Diagnostic> noFrames
        = outcome.frames ? core::engine::checkFrameMemory(*outcome.frames, currentSystem()) : std::nullopt;
    if (noFrames)
        m_messages->addMessage(MessagePanel::Severity::Warning, QString::fromStdString(noFrames->message));
    m_playback->setSource(noFrames ? nullptr : outcome.frames);
    m_exportTimelineAction->setEnabled(true);
    m_exportReportAction->setEnabled(true);
    m_sweep = outcome.sweep;
    m_frames = noFrames ? nullptr : outcome.frames;
    m_stepLabel->setText(stepText());
    m_keepBaselineAction->setEnabled(true);
    m_layerModel->setRun(m_run);
    m_layerTable->resizeColumnsToContents();
    const QString name = QString::fromStdString(m_graph ? m_graph->config.name : std::string());
    if (outcome.sweep)
        m_scalingPanel->setSweep(outcome.sweep, numSystems(),
            tr("%1 on %2: training throughput").arg(name, QString::fromStdString(currentSystem().displayName)));
    else if (!outcome.sweepError.isEmpty())
        m_scalingPanel->clear(tr("No scaling sweep: %1").arg(outcome.sweepError));
    const core::engine::Metrics& m = m_run->metrics;
    const QString summary = m.mode == core::RunKind::Inference
        ? tr("ran %1: %2 tokens/s per user, first token after %3 ms, MFU %4%")
              .arg(name)
              .arg(m.tokensPerS, 0, 'f', 1)
              .arg(m.timeToFirstTokenS * 1e3, 0, 'f', 2)
              .arg(100.0 * m.mfu, 0, 'f', 2)
        : tr("ran %1 on %2 x %3: step %4 ms, %5 samples/s, MFU %6%, bound by %7")
              .arg(name)
              .arg(m.numSystems)
              .arg(QString::fromStdString(currentSystem().displayName))
              .arg(m.stepTimeS * 1e3, 0, 'f', 2)
              .arg(m.samplesPerS, 0, 'f', 1)
              .arg(100.0 * m.mfu, 0, 'f', 1)
              .arg(QString::fromLatin1(core::toString(m.bottleneck)));
    m_messages->addMessage(MessagePanel::Severity::Info, summary);
    statusBar()->showMessage(summary, 10000);
    setIdle(m.mode == core::RunKind::Inference
            ? tr("%1 tokens/s per user on %2 wafer(s)").arg(m.tokensPerS, 0, 'f', 0).arg(m.numSystems)
            : tr("%1 samples/s on %2 x %3, %4")
                  .arg(m.samplesPerS, 0, 'f', 0)
                  .arg(m.numSystems)
                  .arg(QString::fromStdString(currentSystem().displayName), executionModeLabel(m_plan->mode)));
    Q_EMIT settled();
}

void MainWindow::planFailed(const QString& message)
{
    m_kernelRunner->cancel();
    m_plan.reset();
    m_selectedRegion = -1;
    const QString text = tr("%1 cannot be mapped onto %2: %3")
                             .arg(QString::fromStdString(m_graph ? m_graph->config.name : std::string()),
                                 QString::fromStdString(currentSystem().displayName), message);
    m_placementPanel->clearPlan(text);
    m_runner->cancel();
    m_run.reset();
    m_exportTimelineAction->setEnabled(false);
    m_exportReportAction->setEnabled(false);
    m_playback->setSource(nullptr);
    m_utilizationPanel->clear(text);
    m_layerModel->setRun(nullptr);
    m_timelinePanel->clear(text);
    m_scalingPanel->clear(text);
    m_messages->addMessage(MessagePanel::Severity::Warning, text);
    statusBar()->showMessage(text, 10000);
    showScene();
    setIdle(tr("cannot be mapped onto %1").arg(QString::fromStdString(currentSystem().displayName)));
    Q_EMIT settled();
}

void MainWindow::selectRegion(int planIndex)
{
    if (!m_plan || planIndex >= int(m_plan->regions.size()))
        planIndex = -1;
    if (planIndex == m_selectedRegion)
        return;
    m_selectedRegion = planIndex;
    m_placementPanel->selectRegion(planIndex);
    if (m_plan && m_plan->mode == core::ExecutionMode::WeightStreaming) {
        if (planIndex >= 0)
            showScene(); // the selected op's kernel on the whole fabric
        else
            m_waferView->setHighlighted(-1);
    } else {
        m_waferView->setHighlighted(planIndex);
    }
    if (planIndex >= 0)
        statusBar()->showMessage(describeRegion(*m_plan, m_graph.get(), planIndex));
    if (planIndex < 0 || !m_graph) {
        m_placementPanel->setRunnable(false, tr("Select a region to run its kernel on the cycle-level fabric."));
        return;
    }
    const core::Expected<core::fabric::KernelConfig> kernel
        = core::fabricKernelFor(m_plan->regions[std::size_t(planIndex)], *m_graph, currentSystem());
    m_placementPanel->setRunnable(kernel.hasValue(),
        kernel ? tr("Run this region's GEMV for one token on the cycle-level fabric and check it against a reference.")
               : QString::fromStdString(kernel.error().message));
}

void MainWindow::runSelectedRegion()
{
    if (!m_plan || !m_graph || m_selectedRegion < 0)
        return;
    const core::Region& region = m_plan->regions[std::size_t(m_selectedRegion)];
    const core::Expected<core::fabric::KernelConfig> kernel = core::fabricKernelFor(region, *m_graph, currentSystem());
    if (!kernel)
        return;
    const core::fabric::KernelConfig config = *kernel;
    // The plan's bound for one token: each PE's FMACs over its tile, SIMD wide.
    const double simd = std::max(1, config.simdWidth);
    const double bound = double(region.kernel.tileCols) * std::ceil(double(region.kernel.tileRows) / simd);
    const QString what = tr("%1 (%2 x %3 GEMV on %4 x %5 PEs, one token)")
                             .arg(QString::fromStdString(region.opName))
                             .arg(config.matrixRows)
                             .arg(config.matrixCols)
                             .arg(config.regionCols)
                             .arg(config.regionRows);
    m_placementPanel->setRunStatus(tr("Running %1 at cycle level …").arg(what));
    m_runWhat = what;
    m_runBound = bound;
    m_kernelRunner->run(config);
}

void MainWindow::reportError(const QString& message)
{
    m_messages->addMessage(MessagePanel::Severity::Error, message);
    statusBar()->showMessage(message, 10000);
}

} // namespace waferscope::ui
