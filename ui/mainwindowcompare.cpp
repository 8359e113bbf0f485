// MainWindow: comparing the run on screen with a baseline run kept from earlier (Compare menu).
#include "ui/mainwindow.h"

#include "ui/messagepanel.h"
#include "ui/optionnames.h"
#include "ui/playbackcontroller.h"
#include "ui/timelinepanel.h"

#include <QAction>
#include <QMenu>
#include <QMenuBar>
#include <QStatusBar>

namespace waferscope::ui {

void MainWindow::createCompareMenu()
{
    QMenu* compare = menuBar()->addMenu(tr("&Compare"));
    m_keepBaselineAction = compare->addAction(
        tr("&Keep this run as baseline"), QKeySequence(Qt::CTRL | Qt::Key_B), this, [this] { keepRunAsBaseline(); });
    m_keepBaselineAction->setToolTip(tr("Compare later runs (another system count, system or model) with this one"));
    m_keepBaselineAction->setEnabled(false);
    m_clearBaselineAction = compare->addAction(tr("&Clear baseline"), this, [this] { clearBaseline(); });
    m_clearBaselineAction->setEnabled(false);
}

void MainWindow::keepRunAsBaseline()
{
    if (!m_run || !m_frames || !m_plan)
        return;
    const core::engine::Metrics& m = m_run->metrics;
    m_baseline.frames = m_frames;
    m_baseline.label = tr("%1 on %2 x %3, %4")
                           .arg(QString::fromStdString(m_graph ? m_graph->config.name : std::string()))
                           .arg(m.numSystems)
                           .arg(QString::fromStdString(currentSystem().displayName), executionModeLabel(m_plan->mode));
    m_baselineTimeline->setRun(m_run, m_plan);
    m_baselineTimeline->show();
    m_playback->setBaseline(m_frames);
    m_clearBaselineAction->setEnabled(true);
    const QString text = tr("kept %1 as the baseline: the timeline shows it above later runs, and the wafer's "
                            "\"activity vs baseline\" overlay the difference")
                             .arg(m_baseline.label);
    m_messages->addMessage(MessagePanel::Severity::Info, text);
    statusBar()->showMessage(text, 10000);
    showScene();
}

void MainWindow::clearBaseline()
{
    m_baseline = {};
    m_baselineTimeline->hide();
    m_playback->setBaseline(nullptr);
    m_clearBaselineAction->setEnabled(false);
    showScene();
}

} // namespace waferscope::ui
