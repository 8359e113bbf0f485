// MainWindow, files and the session: opening and dropping files, the recent files, the busy
// state with its progress bar and cancel, the saved session, and the exports.
#include "ui/mainwindow.h"

#include "ui/compilecontroller.h"
#include "ui/messagepanel.h"
#include "ui/modelloadcontroller.h"
#include "ui/modelpanel.h"
#include "ui/optionnames.h"
#include "ui/playbackcontroller.h"
#include "ui/reportexporter.h"
#include "ui/runcontroller.h"
#include "ui/session.h"
#include "ui/timelinepanel.h"
#include "ui/waferview.h"

#include "core/common/units.h"
#include "core/model/graphjson.h"
#include "core/report/atomicfile.h"
#include "core/report/chrometrace.h"

#include <QBuffer>
#include <QComboBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QMenu>
#include <QMimeData>
#include <QPainter>
#include <QProgressBar>
#include <QSettings>
#include <QStatusBar>
#include <QSvgGenerator>
#include <QToolButton>

namespace waferscope::ui {

QString MainWindow::exportTimeline(const QString& path)
{
    if (!m_run)
        return tr("%1: error: there is no run to export yet").arg(path);
    const std::string trace = core::report::chromeTrace(*m_run, m_plan.get());
    if (const std::optional<core::Diagnostic> error = core::report::writeFileAtomically(path.toStdString(), trace))
        return QString::fromStdString(error->format());
    m_messages->addMessage(MessagePanel::Severity::Info,
        tr("%1: wrote the timeline (%2 events) as a Chrome trace").arg(path).arg(m_run->timeline.events.size()));
    return {};
}

void MainWindow::exportReport(const QString& directory)
{
    if (!m_run || m_exporter->isBusy()) {
        const QString error = m_run ? tr("%1: error: a report is still being written").arg(directory)
                                    : tr("%1: error: there is no run to export yet").arg(directory);
        reportError(error);
        Q_EMIT reportExported(directory, error);
        return;
    }
    statusBar()->showMessage(tr("Writing the report into %1 …").arg(directory));
    setBusy(tr("writing the report"));
    m_exporter->start(
        ReportJob { directory, m_inputPath, m_graph, m_plan, m_run, m_sweep, m_compileOptions, m_runOptions });
}

QString MainWindow::saveWaferImage(const QString& path)
{
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    if (path.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive)) {
        QSvgGenerator svg;
        svg.setOutputDevice(&buffer);
        svg.setSize(m_waferView->size());
        svg.setViewBox(m_waferView->rect());
        svg.setTitle(windowTitle());
        svg.setDescription(tr("The wafer view of WaferScope"));
        QPainter painter(&svg);
        m_waferView->render(&painter);
    } else if (!m_waferView->grab().save(&buffer, "PNG")) {
        return tr("%1: error: the image could not be encoded").arg(path);
    }
    buffer.close();
    if (const std::optional<core::Diagnostic> error
        = core::report::writeFileAtomically(path.toStdString(), bytes.toStdString()))
        return QString::fromStdString(error->format());
    m_messages->addMessage(MessagePanel::Severity::Info, tr("%1: saved the wafer view").arg(path));
    return {};
}

void MainWindow::openFiles(const QStringList& paths)
{
    if (paths.isEmpty())
        return;
    for (qsizetype i = 0; i + 1 < paths.size(); ++i)
        m_recentFiles = withRecent(m_recentFiles, paths[i]);
    rebuildRecentMenu();
    openFile(paths.back());
}

void MainWindow::openFile(const QString& path)
{
    setBusy(tr("loading %1").arg(QFileInfo(path).fileName()));
    m_modelPanel->setStatus(tr("Loading %1 …").arg(QFileInfo(path).fileName()));
    statusBar()->showMessage(tr("Loading %1 …").arg(path));
    m_loader->load(path);
}

void MainWindow::modelLoaded(const QString& path, std::shared_ptr<const core::ModelGraph> graph)
{
    m_fileName = QFileInfo(path).fileName();
    m_inputPath = path;
    m_recentFiles = withRecent(m_recentFiles, path);
    rebuildRecentMenu();
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
    QStringList paths;
    for (const QUrl& url : urls) {
        if (!url.isLocalFile()) {
            reportError(tr("%1: error: only local files can be opened").arg(url.toString()));
            continue;
        }
        paths << url.toLocalFile();
    }
    openFiles(paths);
}

void MainWindow::setBusy(const QString& what)
{
    m_progress->setToolTip(what);
    m_progress->show();
    m_cancelButton->show();
    setWindowTitle(
        m_fileName.isEmpty() ? tr("WaferScope — %1 …").arg(what) : tr("%1 [%2 …] — WaferScope").arg(m_fileName, what));
}

void MainWindow::setIdle(const QString& state)
{
    m_progress->hide();
    m_cancelButton->hide();
    if (m_fileName.isEmpty())
        setWindowTitle(state.isEmpty() ? tr("WaferScope") : tr("WaferScope — %1").arg(state));
    else
        setWindowTitle(state.isEmpty() ? tr("%1 — WaferScope").arg(m_fileName)
                                       : tr("%1 [%2] — WaferScope").arg(m_fileName, state));
}

bool MainWindow::isBusy() const
{
    return !m_progress->isHidden();
}

void MainWindow::cancelWork()
{
    if (!isBusy())
        return;
    m_loader->cancel();
    m_compiler->cancel();
    m_runner->cancel();
    m_exporter->cancel(); // its `finished` says so; the files in place stay
    const QString text = tr("Cancelled; what is on screen stays as it was.");
    m_messages->addMessage(MessagePanel::Severity::Info, text);
    statusBar()->showMessage(text, 5000);
    if (!m_run)
        m_timelinePanel->clear(tr("The run was cancelled."));
    setIdle(tr("cancelled"));
    Q_EMIT settled();
}

void MainWindow::rebuildRecentMenu()
{
    m_recentMenu->clear();
    for (const QString& path : m_recentFiles)
        m_recentMenu->addAction(QFileInfo(path).fileName(), this, [this, path] { openFile(path); })->setToolTip(path);
    m_recentMenu->setEnabled(!m_recentFiles.isEmpty());
    m_recentMenu->setToolTipsVisible(true);
}

void MainWindow::saveSession(QSettings& settings) const
{
    SessionState state;
    state.recentFiles = m_recentFiles;
    state.system = QString::fromStdString(currentSystem().name);
    state.numCsx = numSystems();
    state.mode = runModeName(runMode());
    state.execution = executionName(core::ExecutionChoice(m_executionBox->currentData().toInt()));
    state.overlay = overlayName(m_overlay);
    state.speed = m_playback->speed();
    state.stepUnit = m_stepUnitBox->currentData().toInt();
    state.geometry = saveGeometry();
    state.windowState = saveState(kLayoutVersion);
    writeSession(settings, state);
}

void MainWindow::restoreSession(QSettings& settings)
{
    const SessionState state = readSession(settings);
    m_recentFiles = state.recentFiles;
    rebuildRecentMenu();
    if (!state.system.isEmpty())
        selectSystem(state.system);
    if (state.numCsx > 0)
        setNumSystems(state.numCsx); // refused quietly when the generation cannot have that many
    if (const auto mode = runModeFromName(state.mode))
        setRunMode(*mode);
    if (const auto execution = executionFromName(state.execution))
        setExecution(*execution);
    if (const auto overlay = overlayFromName(state.overlay))
        setOverlay(*overlay);
    if (state.speed > 0.0) {
        m_playback->setSpeed(state.speed);
        if (const int index = m_speedBox->findData(int(state.speed)); index >= 0)
            m_speedBox->setCurrentIndex(index);
    }
    if (state.stepUnit >= 0)
        m_stepUnitBox->setCurrentIndex(m_stepUnitBox->findData(state.stepUnit));
    if (!state.geometry.isEmpty())
        restoreGeometry(state.geometry);
    if (!state.windowState.isEmpty() && !restoreState(state.windowState, kLayoutVersion))
        m_messages->addMessage(MessagePanel::Severity::Warning,
            tr("%1: the saved window layout could not be restored (damaged, or from another version); using the "
               "default layout")
                .arg(settings.fileName()));
}

} // namespace waferscope::ui
