// MainWindow, the wafer view and the stepper: the scene for the current plan, overlay and step;
// the Playback toolbar; what a step shows in every view; the hover text.
#include "ui/mainwindow.h"

#include "ui/optionnames.h"
#include "ui/placementoverlay.h"
#include "ui/playbackcontroller.h"
#include "ui/runlayertablemodel.h"
#include "ui/timelinepanel.h"
#include "ui/utilizationpanel.h"
#include "ui/waferview.h"

#include <QAction>
#include <QComboBox>
#include <QCursor>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QTableView>
#include <QToolBar>
#include <QToolTip>

#include <cmath>

namespace waferscope::ui {

void MainWindow::createPlaybackBar()
{
    QToolBar* bar = addToolBar(tr("Playback"));
    bar->setObjectName(QStringLiteral("playbackToolBar"));
    bar->setMovable(false);
    const auto stepUnit = [this] { return core::engine::StepUnit(m_stepUnitBox->currentData().toInt()); };
    bar->addAction(style()->standardIcon(QStyle::SP_MediaSkipBackward), tr("Reset"), QKeySequence(Qt::Key_Home),
           m_playback, &PlaybackController::reset)
        ->setToolTip(tr("Back to the first step (Home)"));
    bar->addAction(style()->standardIcon(QStyle::SP_MediaSeekBackward), tr("Step back"), QKeySequence(Qt::Key_Comma),
           this, [this, stepUnit] { m_playback->step(stepUnit(), -1); })
        ->setToolTip(tr("One step back by the unit chosen (,); one layer phase: Ctrl+,"));
    m_playAction = bar->addAction(style()->standardIcon(QStyle::SP_MediaPlay), tr("Run"), QKeySequence(Qt::Key_Space),
        this, [this] { m_playback->isPlaying() ? m_playback->pause() : m_playback->play(); });
    m_playAction->setToolTip(tr("Play the run step by step at the speed chosen, or pause it (Space)"));
    bar->addAction(style()->standardIcon(QStyle::SP_MediaSeekForward), tr("Step forward"), QKeySequence(Qt::Key_Period),
           this, [this, stepUnit] { m_playback->step(stepUnit(), +1); })
        ->setToolTip(tr("One step forward by the unit chosen (.); one layer phase: Ctrl+."));
    // Fixed-unit shortcuts: Ctrl for a phase, [ ] for a layer, { } for an iteration.
    const auto shortcut = [this](QKeySequence keys, core::engine::StepUnit unit, int direction) {
        auto* action = new QAction(this);
        action->setShortcut(keys);
        connect(action, &QAction::triggered, this, [this, unit, direction] { m_playback->step(unit, direction); });
        addAction(action);
    };
    shortcut(QKeySequence(Qt::CTRL | Qt::Key_Comma), core::engine::StepUnit::Phase, -1);
    shortcut(QKeySequence(Qt::CTRL | Qt::Key_Period), core::engine::StepUnit::Phase, +1);
    shortcut(QKeySequence(Qt::Key_BracketLeft), core::engine::StepUnit::Layer, -1);
    shortcut(QKeySequence(Qt::Key_BracketRight), core::engine::StepUnit::Layer, +1);
    shortcut(QKeySequence(Qt::Key_BraceLeft), core::engine::StepUnit::Iteration, -1);
    shortcut(QKeySequence(Qt::Key_BraceRight), core::engine::StepUnit::Iteration, +1);
    bar->addWidget(new QLabel(tr(" by "), bar));
    m_stepUnitBox = new QComboBox(bar);
    m_stepUnitBox->addItem(tr("layer phase"), int(core::engine::StepUnit::Phase));
    m_stepUnitBox->addItem(tr("layer"), int(core::engine::StepUnit::Layer));
    m_stepUnitBox->addItem(tr("iteration"), int(core::engine::StepUnit::Iteration));
    m_stepUnitBox->setToolTip(tr("How far Step goes: one layer phase (a frame), one layer ([ ]), one iteration ({ })"));
    bar->addWidget(m_stepUnitBox);
    bar->addWidget(new QLabel(tr("  speed "), bar));
    m_speedBox = new QComboBox(bar);
    for (int perSecond : { 1, 2, 5, 10, 30, 60 })
        m_speedBox->addItem(tr("%1 steps/s").arg(perSecond), perSecond);
    m_speedBox->setCurrentIndex(m_speedBox->findData(int(m_playback->speed())));
    connect(m_speedBox, &QComboBox::currentIndexChanged, this,
        [this](int) { m_playback->setSpeed(m_speedBox->currentData().toDouble()); });
    bar->addWidget(m_speedBox);
    bar->addSeparator();
    m_stepLabel = new QLabel(tr("no run yet"), bar);
    bar->addWidget(m_stepLabel);
}

void MainWindow::setOverlay(MeshOverlay overlay)
{
    m_overlay = overlay;
    if (const int index = m_overlayBox->findData(int(overlay)); index != m_overlayBox->currentIndex())
        m_overlayBox->setCurrentIndex(index); // comes back here once more, harmlessly
    showScene();
    m_hoverLabel->setText(hoverText());
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
        const int shown = streaming ? std::max(0, m_selectedRegion) : 0;
        if (m_placement.plan != m_plan || m_placement.shown != shown)
            m_placement = { m_plan, shown,
                std::make_shared<const std::vector<PlacedRegion>>(placedRegions(*m_plan, shown)), nullptr };
        scene.regions = m_placement.regions;
        scene.highlighted = streaming ? (m_selectedRegion >= 0 ? 0 : -1) : m_selectedRegion;
        const QString model = m_graph ? QString::fromStdString(m_graph->config.name) : QString();
        if (streaming && !scene.regions->empty())
            caption
                += tr("\n%1 · weight streaming: %2 on the whole fabric")
                       .arg(model,
                           QString::fromStdString(m_plan->regions[std::size_t((*scene.regions)[0].planIndex)].opName));
        else
            caption += tr("\n%1 · %2 · %3 regions on %4")
                           .arg(model, executionModeLabel(m_plan->mode))
                           .arg(m_plan->regions.size())
                           .arg(scene.wafers == 1 ? tr("one wafer") : tr("%1 wafers").arg(scene.wafers));
    }
    scene.overlay = m_overlay;
    const std::shared_ptr<const FrameSnapshot> snapshot = m_playback->shown();
    switch (m_overlay) {
    case MeshOverlay::Placement:
        break;
    case MeshOverlay::Activity:
        scene.scale = { tr("PE compute activity (share of its FMAC cycles busy)"), tr("%"), 100.0, {}, {} };
        if (snapshot)
            scene.field = snapshot->activity;
        break;
    case MeshOverlay::Traffic:
        scene.scale = { tr("fabric link load (zoomed out: each PE's busiest link)"), tr("wavelets/cycle"),
            snapshot ? snapshot->trafficMax : 1.0,
            snapshot && snapshot->trafficUnmodelled ? tr("link load not modelled (attention, experts, lookups)")
                                                    : QString(),
            snapshot && !snapshot->trafficModelled ? tr("no modelled link carries load in this step") : QString() };
        if (snapshot)
            scene.field = snapshot->traffic;
        break;
    case MeshOverlay::Difference:
        scene.scale = { m_baseline.frames ? tr("PE activity: this run minus the baseline (%1)").arg(m_baseline.label)
                                          : tr("PE activity vs a baseline: Compare > Keep this run as baseline first"),
            tr("points"), 100.0, {}, {} };
        if (snapshot)
            scene.field = snapshot->difference;
        break;
    case MeshOverlay::Sram:
        scene.scale = { tr("SRAM per PE (of what the program may use)"), tr("KiB"),
            m_plan ? double(m_plan->sramPerPeBytes) / 1024.0 : 0.0, {}, {} };
        if (m_plan && scene.regions && !m_placement.sram)
            m_placement.sram = std::make_shared<const MeshField>(sramField(*m_plan, *scene.regions, scene.wafers));
        scene.field = m_plan ? m_placement.sram : nullptr;
        break;
    }
    if (snapshot && m_overlay != MeshOverlay::Placement && m_overlay != MeshOverlay::Sram)
        caption += QLatin1Char('\n') + stepText();
    m_waferView->setScene(scene, caption);
}

void MainWindow::showSnapshot(const std::shared_ptr<const FrameSnapshot>& snapshot)
{
    if (!m_run || !snapshot)
        return;
    m_syncing = true;
    const int layer = snapshot->step.layer;
    const bool known = layer >= 0 && std::size_t(layer) < m_run->metrics.layers.size();
    const int region = known ? m_run->metrics.layers[std::size_t(layer)].region : -1;
    const int before = m_selectedRegion;
    if (region >= 0)
        selectRegion(region);
    // Under weight streaming a new op redraws the scene (that op on the whole fabric) already.
    const bool redrawn = m_plan && m_plan->mode == core::ExecutionMode::WeightStreaming && m_selectedRegion != before;
    m_timelinePanel->setCursorTime(snapshot->step.start);
    if (m_baseline.frames && snapshot->baselineIndex < m_baseline.frames->steps().size())
        m_baselineTimeline->setCursorTime(m_baseline.frames->steps()[snapshot->baselineIndex].start);
    m_utilizationPanel->setCursorTime(snapshot->step.start);
    if (known) {
        const QModelIndex row = m_layerSorted->mapFromSource(m_layerModel->index(layer, 0));
        if (row.isValid() && m_layerTable->currentIndex().row() != row.row()) {
            m_layerTable->setCurrentIndex(row);
            m_layerTable->scrollTo(row);
        }
    }
    m_syncing = false;
    m_stepLabel->setText(stepText());
    if (!redrawn)
        showScene();
    m_hoverLabel->setText(hoverText());
    Q_EMIT stepShown(snapshot->index);
}

QString MainWindow::stepText() const
{
    const std::shared_ptr<const FrameSnapshot> snapshot = m_playback->shown();
    if (m_run && !m_frames)
        return tr("no frames: they would not fit in memory (see Messages)");
    if (!snapshot || !m_run)
        return tr("no run yet");
    const core::engine::FrameStep& step = snapshot->step;
    const QString layer = step.layer >= 0 && std::size_t(step.layer) < m_run->metrics.layers.size()
        ? QString::fromStdString(m_run->metrics.layers[std::size_t(step.layer)].name)
        : tr("(no layer)");
    const bool inference = m_run->metrics.mode == core::RunKind::Inference;
    QString text
        = tr("step %1 of %2 · %3 %4 · %5 · %6")
              .arg(snapshot->index + 1)
              .arg(m_playback->frameCount())
              .arg(inference ? tr("token") : tr("iteration"))
              .arg(step.iteration + 1)
              .arg(layer,
                  QString::fromLatin1(core::engine::toString(step.phase)).replace(QLatin1Char('_'), QLatin1Char(' ')));
    if (!inference && m_run->metrics.microBatchesPerStep > 1)
        text += tr(" · micro-batch %1 of %2").arg(step.microBatch + 1).arg(m_run->metrics.microBatchesPerStep);
    text += tr(" · t = %1 ms").arg(step.start * 1e3, 0, 'f', 3);
    return text;
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
    const MeshScene& scene = m_waferView->scene();
    if (!usable)
        return text;
    if (const std::optional<float> value = scene.valueAt(*pe); value && scene.overlay == MeshOverlay::Activity) {
        text += tr(" · activity %1%").arg(100.0 * double(*value), 0, 'f', 1);
    } else if (value && scene.overlay == MeshOverlay::Difference) {
        text += tr(" · activity %1 points vs the baseline").arg(100.0 * (2.0 * double(*value) - 1.0), 0, 'f', 1);
    } else if (value && scene.overlay == MeshOverlay::Traffic && std::isnan(*value)) {
        text += tr(" · no link-load model for this op");
    } else if (value && scene.overlay == MeshOverlay::Traffic) {
        QStringList links;
        const char* names[] = { "N", "S", "E", "W" };
        for (int direction = 0; direction < 4; ++direction)
            links << QStringLiteral("%1 %2")
                         .arg(QLatin1String(names[direction]))
                         .arg(double(scene.linkAt(*pe, direction).value_or(0.0f)) * scene.scale.max, 0, 'g', 3);
        text += tr(" · links %1 wavelets/cycle").arg(links.join(QStringLiteral(", ")));
    }
    return text;
}

} // namespace waferscope::ui
