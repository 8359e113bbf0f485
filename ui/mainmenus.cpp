#include "ui/mainmenus.h"

#include "ui/mainwindow.h"
#include "ui/models/clustersession.h"
#include "ui/models/document.h"
#include "ui/models/fabricruns.h"
#include "ui/models/sessionstate.h"
#include "ui/panels/validationdialog.h"
#include "ui/wafer/waferview.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QStyle>

namespace waferscope::ui {

MainMenus::MainMenus(MainWindow* window, Document* document)
    : QObject(window)
    , m_window(window)
    , m_document(document)
{
    createFileMenu();
    createRunMenu();
    createCompareMenu();
    m_viewMenu = window->menuBar()->addMenu(tr("&View"));
    WaferView* view = window->views().wafer;
    m_viewMenu->addAction(tr("&Fit wafer"), QKeySequence(Qt::Key_F), view, &WaferView::fitToView);
    m_viewMenu->addAction(tr("Zoom &in"), QKeySequence::ZoomIn, view, [view] { view->zoomBy(1.25); });
    m_viewMenu->addAction(tr("Zoom &out"), QKeySequence::ZoomOut, view, [view] { view->zoomBy(0.8); });
    m_viewMenu->addSeparator();
    QMenu* help = window->menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&Validation against published figures…"), this, [this] {
        if (!m_validation) {
            m_validation = new ValidationDialog(m_window);
            m_validation->setObjectName(QStringLiteral("validationDialog"));
        }
        m_validation->show();
        m_validation->raise();
        if (!m_validation->isComputing() && m_validation->results().empty())
            m_validation->start();
    });
    help->addAction(tr("&About WaferScope"), window, [window] {
        QMessageBox::about(window, tr("About WaferScope"),
            tr("<b>WaferScope %1</b><p>Explorer and simulator of Cerebras-style wafer-scale systems: "
               "WSE-1/2/3 wafers, CS-X systems, MemoryX and SwarmX clusters.</p>")
                .arg(QApplication::applicationVersion()));
    });
    connect(document, &Document::modelChanged, this, [this] { addRecent(m_document->model()->path); });
}

void MainMenus::createFileMenu()
{
    QMenu* file = m_window->menuBar()->addMenu(tr("&File"));
    m_openAction
        = file->addAction(m_window->style()->standardIcon(QStyle::SP_DialogOpenButton), tr("&Open…"), this, [this] {
              m_window->openFiles(QFileDialog::getOpenFileNames(m_window, tr("Open Model Zoo params files"), QString(),
                  tr("Model Zoo params or jobs files (*.yaml *.yml);;All files (*)")));
          });
    m_openAction->setShortcut(QKeySequence::Open);
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    rebuildRecentMenu();
    file->addSeparator();
    QAction* timeline = file->addAction(tr("Export &timeline (Chrome trace)…"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(m_window, tr("Export the run's timeline"),
            QStringLiteral("trace.json"), tr("Chrome trace (*.json);;All files (*)"));
        if (!path.isEmpty())
            reportFailure(m_document->exportTimeline(path));
    });
    QAction* report = file->addAction(tr("Export &report (JSON, CSV, HTML, PDF, trace)…"), this, [this] {
        const QString directory = QFileDialog::getExistingDirectory(m_window, tr("Export the run's report into"));
        if (!directory.isEmpty())
            m_window->exportReport(directory);
    });
    report->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    for (QAction* action : { timeline, report }) {
        action->setEnabled(false);
        connect(m_document, &Document::runChanged, action,
            [this, action] { action->setEnabled(m_document->run() != nullptr); });
    }
    QAction* saveJobs = file->addAction(tr("Save &jobs as…"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(m_window, tr("Save the Cluster dock's jobs"),
            QStringLiteral("jobs.yaml"), tr("WaferScope jobs file (*.yaml *.yml);;All files (*)"));
        if (!path.isEmpty())
            reportFailure(m_window->cluster()->saveJobsAs(path));
    });
    saveJobs->setEnabled(false);
    connect(m_window->cluster(), &ClusterSession::scheduled, saveJobs,
        [this, saveJobs] { saveJobs->setEnabled(m_window->cluster()->hasJobs()); });
    file->addAction(tr("Save &wafer image…"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(m_window, tr("Save the wafer view"),
            QStringLiteral("wafer.png"), tr("PNG image (*.png);;SVG drawing (*.svg)"));
        if (!path.isEmpty())
            reportFailure(m_window->saveWaferImage(path));
    });
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, qApp, &QApplication::closeAllWindows);
}

void MainMenus::createCompareMenu()
{
    QMenu* compare = m_window->menuBar()->addMenu(tr("&Compare"));
    QAction* keep = compare->addAction(
        tr("&Keep this run as baseline"), QKeySequence(Qt::CTRL | Qt::Key_B), m_document, &Document::keepRunAsBaseline);
    keep->setToolTip(tr("Compare later runs (another system count, system or model) with this one"));
    keep->setEnabled(false);
    QAction* clear = compare->addAction(tr("&Clear baseline"), m_document, &Document::clearBaseline);
    clear->setEnabled(false);
    connect(m_document, &Document::runChanged, keep, [this, keep] { keep->setEnabled(m_document->run() != nullptr); });
    connect(m_document, &Document::baselineChanged, clear,
        [this, clear] { clear->setEnabled(m_document->baseline().frames != nullptr); });
}

void MainMenus::createRunMenu()
{
    QMenu* run = m_window->menuBar()->addMenu(tr("&Run"));
    m_runTokenAction = run->addAction(tr("Run token on &fabric"), QKeySequence(Qt::CTRL | Qt::Key_T), m_document,
        [this] { m_document->fabric()->runToken(); });
    m_runTokenAction->setObjectName(QStringLiteral("runTokenOnFabric"));
    run->setToolTipsVisible(true);
    // The engine's software profile: the built-in ones, or a calibration file (--calibration).
    QMenu* profiles = run->addMenu(tr("Software &profile"));
    auto* group = new QActionGroup(profiles);
    const core::engine::Calibration& builtin = core::engine::builtinCalibration();
    for (const std::string& name : builtin.profiles) {
        QAction* action = profiles->addAction(QString::fromStdString(name));
        action->setCheckable(true);
        action->setChecked(name == m_document->calibration().profile);
        action->setObjectName(QStringLiteral("profile:") + QString::fromStdString(name));
        group->addAction(action);
        connect(action, &QAction::triggered, this,
            [this, name] { reportFailure(m_document->setCalibration(QString::fromStdString(name))); });
    }
    profiles->addSeparator();
    profiles->addAction(tr("Calibration &file…"), this, [this, group] {
        const QString path = QFileDialog::getOpenFileName(
            m_window, tr("Open a calibration file"), QString(), tr("Calibration (*.json);;All files (*)"));
        if (path.isEmpty())
            return;
        const QString error = m_document->setCalibration(path);
        reportFailure(error);
        if (error.isEmpty())
            for (QAction* action : group->actions())
                action->setChecked(false);
    });
    connect(m_document, &Document::planChanged, this, &MainMenus::updateRunToken);
    connect(m_document, &Document::modelChanged, this, &MainMenus::updateRunToken);
    connect(m_document->fabric(), &FabricRuns::tokenStarted, this, &MainMenus::updateRunToken);
    connect(m_document->fabric(), &FabricRuns::tokenFinished, this, &MainMenus::updateRunToken);
    connect(m_document, &Document::busyChanged, this, &MainMenus::updateRunToken);
    updateRunToken();
}

void MainMenus::updateRunToken()
{
    const QString why = m_document->fabric()->isTokenRunning()
        ? tr("A token is running on the fabric; Cancel (Esc) stops it.")
        : m_document->fabric()->tokenUnavailableReason();
    m_runTokenAction->setEnabled(why.isEmpty());
    m_runTokenAction->setToolTip(why.isEmpty() ? tr("Run the prompt and one decode step of this plan on the "
                                                    "cycle-level fabric, watching its PEs and links live")
                                               : why);
}

void MainMenus::setRecentFiles(const QStringList& paths)
{
    m_recentFiles = paths;
    rebuildRecentMenu();
}

void MainMenus::addRecent(const QString& path)
{
    setRecentFiles(withRecent(m_recentFiles, path));
}

void MainMenus::rebuildRecentMenu()
{
    m_recentMenu->clear();
    for (const QString& path : m_recentFiles)
        m_recentMenu->addAction(QFileInfo(path).fileName(), this, [this, path] { m_window->openFile(path); })
            ->setToolTip(path);
    m_recentMenu->setEnabled(!m_recentFiles.isEmpty());
    m_recentMenu->setToolTipsVisible(true);
}

void MainMenus::reportFailure(const QString& error)
{
    if (!error.isEmpty())
        m_window->showError(error);
}

} // namespace waferscope::ui
