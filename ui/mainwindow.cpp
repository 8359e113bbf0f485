#include "ui/mainwindow.h"

#include "ui/compilecontroller.h"
#include "ui/kernelruncontroller.h"
#include "ui/messagepanel.h"
#include "ui/modelloadcontroller.h"
#include "ui/modelpanel.h"
#include "ui/placementoverlay.h"
#include "ui/placementpanel.h"
#include "ui/runcontroller.h"
#include "ui/runlayertablemodel.h"
#include "ui/scalingpanel.h"
#include "ui/systempanel.h"
#include "ui/timelinepanel.h"
#include "ui/waferview.h"

#include "core/common/units.h"
#include "core/hardware/clusterspec.h"
#include "core/model/graphjson.h"

#include <QApplication>
#include <QComboBox>
#include <QCursor>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QStatusBar>
#include <QTableView>
#include <QToolBar>
#include <QToolTip>

#include <cmath>

// Resources live in the static UI library; register them once before first use.
static void initResources()
{
    Q_INIT_RESOURCE(waferscope);
}

namespace waferscope::ui {

namespace {

QString modeName(core::ExecutionMode mode)
{
    return QString::fromLatin1(core::toString(mode)).replace(QLatin1Char('_'), QLatin1Char(' '));
}

} // namespace

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
    createDocks();

    m_hoverLabel = new QLabel(this);
    m_zoomLabel = new QLabel(this);
    statusBar()->addPermanentWidget(m_hoverLabel);
    statusBar()->addPermanentWidget(m_zoomLabel);
    connect(m_waferView, &WaferView::hoveredPeChanged, this, &MainWindow::showHoveredPe);
    connect(m_waferView, &WaferView::zoomChanged, this,
        [this](double pixelsPerPe) { m_zoomLabel->setText(tr("zoom %1 px/PE").arg(pixelsPerPe, 0, 'f', 2)); });

    connect(m_loader, &ModelLoadController::loaded, this,
        [this](int, const QString& path, std::shared_ptr<const core::ModelGraph> graph) { modelLoaded(path, graph); });
    connect(m_loader, &ModelLoadController::failed, this, [this](int, const QString& path, const QString& message) {
        reportError(message);
        m_modelPanel->setStatus(
            tr("Could not load %1 (see Messages); the model shown is unchanged.").arg(QFileInfo(path).fileName()));
        Q_EMIT settled();
    });
    connect(m_compiler, &CompileController::compiled, this,
        [this](int, std::shared_ptr<const core::ExecutionPlan> plan) { planCompiled(std::move(plan)); });
    connect(m_compiler, &CompileController::failed, this, [this](int, const QString& message) { planFailed(message); });
    connect(m_runner, &RunController::finished, this, [this](int, const RunOutcome& outcome) { runFinished(outcome); });
    connect(m_runner, &RunController::failed, this, [this](int, const QString& message) {
        m_run.reset();
        m_layerModel->setRun(nullptr);
        m_timelinePanel->clear(tr("The run failed: %1").arg(message));
        m_scalingPanel->clear(tr("The run failed: %1").arg(message));
        reportError(message);
        Q_EMIT settled();
    });
    // The timeline's cursor selects what the wafer runs at that moment.
    connect(m_timelinePanel, &TimelinePanel::timeSelected, this, [this](double seconds) {
        if (!m_run || !m_plan)
            return;
        for (const core::engine::TimelineEvent& event : m_run->timeline.events) {
            const bool onWafer
                = event.lane == core::engine::LaneKind::CsxCompute || event.lane == core::engine::LaneKind::Region;
            if (!onWafer || event.layer < 0 || seconds < event.start || seconds >= event.end)
                continue;
            const int region = m_run->metrics.layers[std::size_t(event.layer)].region;
            if (region >= 0)
                selectRegion(region);
            return;
        }
    });
    // A layer picked in the Layers dock: its region on the wafer, the cursor at its first event.
    connect(m_layerTable->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
        [this](const QModelIndex& current) {
            if (!m_run || !current.isValid())
                return;
            const int layer = m_layerSorted->mapToSource(current).row();
            const int region = m_run->metrics.layers[std::size_t(layer)].region;
            if (region >= 0 && region != m_selectedRegion)
                selectRegion(region);
            for (const core::engine::TimelineEvent& event : m_run->timeline.events)
                if (event.layer == layer) {
                    m_timelinePanel->setCursorTime(event.start);
                    break;
                }
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
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Open a Model Zoo params file"), QString(), tr("Model Zoo params (*.yaml *.yml);;All files (*)"));
        if (!path.isEmpty())
            openFile(path);
    });
    m_openAction->setShortcut(QKeySequence::Open);
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, qApp, &QApplication::closeAllWindows);

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
    QDockWidget* timeline
        = addDock(tr("Timeline"), QStringLiteral("timelineDock"), m_timelinePanel, Qt::BottomDockWidgetArea);
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
    m_layerTable->horizontalHeader()->setStretchLastSection(true);
    QDockWidget* layers = addDock(tr("Layers"), QStringLiteral("layersDock"), m_layerTable, Qt::BottomDockWidgetArea);
    tabifyDockWidget(messages, timeline);
    tabifyDockWidget(timeline, scaling);
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

void MainWindow::showScene()
{
    const core::SystemSpec& system = currentSystem();
    const core::WaferSpec& wafer = system.wafer;
    MeshScene scene { wafer.fabricWidth, wafer.fabricHeight,
        QRect(wafer.usableX, wafer.usableY, wafer.usableWidth, wafer.usableHeight) };
    QString caption = tr("%1 · %2 · %3 x %4 PEs (usable %5 x %6)")
                          .arg(QString::fromStdString(system.displayName), QString::fromStdString(wafer.name))
                          .arg(wafer.fabricWidth)
                          .arg(wafer.fabricHeight)
                          .arg(wafer.usableWidth)
                          .arg(wafer.usableHeight);
    if (m_plan) {
        const bool streaming = m_plan->mode == core::ExecutionMode::WeightStreaming;
        scene.wafers = wafersShown(*m_plan);
        scene.regions = std::make_shared<const std::vector<PlacedRegion>>(
            placedRegions(*m_plan, streaming ? std::max(0, m_selectedRegion) : 0));
        scene.highlighted = streaming ? (m_selectedRegion >= 0 ? 0 : -1) : m_selectedRegion;
        const QString model = m_graph ? QString::fromStdString(m_graph->config.name) : QString();
        if (streaming && !scene.regions->empty())
            caption
                += tr("\n%1 · weight streaming: %2 on the whole fabric")
                       .arg(model,
                           QString::fromStdString(m_plan->regions[std::size_t((*scene.regions)[0].planIndex)].opName));
        else
            caption += tr("\n%1 · %2 · %3 regions on %4")
                           .arg(model, modeName(m_plan->mode))
                           .arg(m_plan->regions.size())
                           .arg(scene.wafers == 1 ? tr("one wafer") : tr("%1 wafers").arg(scene.wafers));
    }
    m_waferView->setScene(scene, caption);
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
    options.numSystems = numSystems();
    m_placementPanel->clearPlan(tr("Compiling %1 for %2 (%3) …")
                                    .arg(QString::fromStdString(m_graph->config.name),
                                        QString::fromStdString(currentSystem().displayName), m_modeBox->currentText()));
    m_runner->cancel();
    m_run.reset();
    m_layerModel->setRun(nullptr);
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
                              QString::fromStdString(currentSystem().displayName), modeName(m_plan->mode))
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
    options.mode
        = runMode() == core::RunMode::Inference ? core::engine::RunKind::Inference : core::engine::RunKind::Train;
    m_timelinePanel->clear(
        tr("Running %1 on the simulated cluster …").arg(QString::fromStdString(m_graph->config.name)));
    m_scalingPanel->clear(options.mode == core::engine::RunKind::Inference
            ? tr("The scaling sweep is for training; switch Compile for to training to see it.")
            : tr("Sweeping 1 to %1 systems …")
                  .arg(currentSystem().swarmx.supported ? currentSystem().swarmx.maxSystems : 1));
    m_runner->run(m_graph, m_plan, currentSystem(), options, numSystems());
}

void MainWindow::runFinished(const RunOutcome& outcome)
{
    m_run = outcome.run;
    m_timelinePanel->setRun(m_run, m_plan);
    m_layerModel->setRun(m_run);
    m_layerTable->resizeColumnsToContents();
    const QString name = QString::fromStdString(m_graph ? m_graph->config.name : std::string());
    if (outcome.sweep)
        m_scalingPanel->setSweep(outcome.sweep, numSystems(),
            tr("%1 on %2: training throughput").arg(name, QString::fromStdString(currentSystem().displayName)));
    else if (!outcome.sweepError.isEmpty())
        m_scalingPanel->clear(tr("No scaling sweep: %1").arg(outcome.sweepError));
    const core::engine::Metrics& m = m_run->metrics;
    const QString summary = m.mode == "inference"
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
              .arg(QString::fromStdString(m.bottleneck));
    m_messages->addMessage(MessagePanel::Severity::Info, summary);
    statusBar()->showMessage(summary, 10000);
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
    m_layerModel->setRun(nullptr);
    m_timelinePanel->clear(text);
    m_scalingPanel->clear(text);
    m_messages->addMessage(MessagePanel::Severity::Warning, text);
    statusBar()->showMessage(text, 10000);
    showScene();
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

void MainWindow::showHoveredPe(std::optional<WaferPe> pe)
{
    m_hoverLabel->setText(hoverText());
    if (!pe) {
        QToolTip::hideText();
        return;
    }
    const int placed = m_waferView->scene().planIndexAt(*pe);
    if (placed >= 0 && m_plan)
        QToolTip::showText(QCursor::pos(), describeRegion(*m_plan, m_graph.get(), placed), m_waferView);
    else
        QToolTip::hideText();
}

QString MainWindow::hoverText() const
{
    const std::optional<WaferPe> pe = m_waferView->hovered();
    if (!pe)
        return {};
    const bool usable = currentSystem().wafer.isUsable(pe->pe.x(), pe->pe.y());
    QString text = m_waferView->scene().wafers > 1 ? tr("wafer %1 · ").arg(pe->wafer) : QString();
    text += tr("PE (%1, %2)").arg(pe->pe.x()).arg(pe->pe.y());
    const int placed = m_waferView->scene().planIndexAt(*pe);
    if (placed >= 0 && m_plan) {
        const core::Region& region = m_plan->regions[std::size_t(placed)];
        text += tr(" · %1 · SRAM %2 of %3 per PE")
                    .arg(QString::fromStdString(region.opName), formatKib(region.sramBytesPerPe),
                        formatKib(m_plan->sramPerPeBytes));
    } else {
        text += usable ? (m_plan ? tr(" · idle") : tr(" · usable")) : tr(" · I/O margin");
    }
    return text;
}

void MainWindow::reportError(const QString& message)
{
    m_messages->addMessage(MessagePanel::Severity::Error, message);
    statusBar()->showMessage(message, 10000);
}

void MainWindow::openFile(const QString& path)
{
    m_modelPanel->setStatus(tr("Loading %1 …").arg(QFileInfo(path).fileName()));
    statusBar()->showMessage(tr("Loading %1 …").arg(path));
    m_loader->load(path);
}

void MainWindow::modelLoaded(const QString& path, std::shared_ptr<const core::ModelGraph> graph)
{
    setWindowTitle(tr("%1 — WaferScope").arg(QFileInfo(path).fileName()));
    const QString summary = tr("%1: loaded %2 (%3, %4 parameters, %5 ops)")
                                .arg(path, QString::fromStdString(graph->config.name),
                                    QString::fromLatin1(core::toString(graph->config.family)),
                                    QString::fromStdString(core::formatCount(double(graph->totalParams))))
                                .arg(graph->ops.size());
    m_messages->addMessage(MessagePanel::Severity::Info, summary);
    for (const std::string& warning : core::formatWarnings(graph->config))
        m_messages->addMessage(MessagePanel::Severity::Warning, QString::fromStdString(warning));
    statusBar()->showMessage(summary, 10000);
    m_graph = graph;
    m_plan.reset();
    m_modelPanel->setGraph(path, std::move(graph));
    showScene();
    recompile();
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
    for (const QUrl& url : urls) {
        if (!url.isLocalFile()) {
            reportError(tr("%1: error: only local files can be opened").arg(url.toString()));
            continue;
        }
        openFile(url.toLocalFile());
    }
}

} // namespace waferscope::ui
