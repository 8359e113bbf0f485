#include "ui/wafer/waferpresenter.h"

#include "ui/models/document.h"
#include "ui/models/fabricruns.h"
#include "ui/models/optionnames.h"
#include "ui/wafer/placementoverlay.h"
#include "ui/wafer/playbackcontroller.h"
#include "ui/wafer/waferview.h"

#include <QCursor>
#include <QToolTip>

#include <cmath>

namespace waferscope::ui {

WaferPresenter::WaferPresenter(Document* document, WaferView* view, QObject* parent)
    : QObject(parent)
    , m_document(document)
    , m_view(view)
    , m_playback(new PlaybackController(this))
{
    connect(m_document, &Document::settingsChanged, this, &WaferPresenter::showScene);
    connect(m_document, &Document::planChanged, this, &WaferPresenter::planChanged);
    connect(m_document, &Document::runChanged, this, [this] {
        const std::shared_ptr<const RunState> run = m_document->runState();
        m_playback->setSource(run ? run->frames : nullptr);
        showScene(); // no heat of an earlier run stays on screen
    });
    connect(m_document, &Document::baselineChanged, this, [this] {
        m_playback->setBaseline(m_document->baseline().frames);
        showScene();
    });
    connect(m_document->fabric(), &FabricRuns::tokenStarted, this,
        [this](std::shared_ptr<const core::fabric::RecordedFrames> frames) {
            m_playback->setFabricFrames(std::move(frames));
            if (m_overlay == MeshOverlay::Placement || m_overlay == MeshOverlay::Sram)
                setOverlay(MeshOverlay::Activity); // what a token run measures
            else
                showScene();
        });
    connect(m_document->fabric(), &FabricRuns::tokenFinished, this, &WaferPresenter::showScene);
    connect(m_playback, &PlaybackController::frameShown, this, &WaferPresenter::showSnapshot);
    connect(m_view, &WaferView::hoveredPeChanged, this, &WaferPresenter::showHoveredPe);
    connect(m_view, &WaferView::peClicked, this, [this](WaferPe pe) { selectRegion(m_view->scene().planIndexAt(pe)); });
    showScene();
}

void WaferPresenter::setOverlay(MeshOverlay overlay)
{
    if (overlay == m_overlay)
        return;
    m_overlay = overlay;
    showScene();
    Q_EMIT overlayChanged(overlay);
    Q_EMIT hoverTextChanged(hoverText());
}

void WaferPresenter::planChanged()
{
    m_selected = -1;
    const std::shared_ptr<const core::ExecutionPlan> plan = m_document->plan();
    int initial = -1;
    if (plan && plan->mode == core::ExecutionMode::WeightStreaming) {
        // Show the first streamed matrix op rather than the embedding lookup.
        for (std::size_t i = 0; i < plan->regions.size() && initial < 0; ++i)
            if (plan->regions[i].kernel.kind == core::KernelPlan::Kind::StreamedGemm)
                initial = int(i);
    }
    showScene();
    Q_EMIT regionSelected(-1);
    selectRegion(initial);
}

void WaferPresenter::selectRegion(int planIndex)
{
    const std::shared_ptr<const core::ExecutionPlan> plan = m_document->plan();
    if (!plan || planIndex >= int(plan->regions.size()))
        planIndex = -1;
    if (planIndex == m_selected)
        return;
    m_selected = planIndex;
    if (plan && plan->mode == core::ExecutionMode::WeightStreaming) {
        if (planIndex >= 0)
            showScene(); // the selected op's kernel on the whole fabric
        else
            m_view->setHighlighted(-1);
    } else {
        m_view->setHighlighted(planIndex);
    }
    Q_EMIT regionSelected(planIndex);
}

void WaferPresenter::showScene()
{
    const core::SystemSpec& system = m_document->system();
    const core::WaferSpec& wafer = system.wafer;
    const std::shared_ptr<const core::ExecutionPlan> plan = m_document->plan();
    MeshScene scene { wafer.fabricWidth, wafer.fabricHeight,
        QRect(wafer.usableX, wafer.usableY, wafer.usableWidth, wafer.usableHeight) };
    QString caption = tr("%1 · %2 · %3 x %4 PEs (usable %5 x %6)")
                          .arg(QString::fromStdString(system.displayName), QString::fromStdString(wafer.name))
                          .arg(wafer.fabricWidth)
                          .arg(wafer.fabricHeight)
                          .arg(wafer.usableWidth)
                          .arg(wafer.usableHeight);
    if (plan) {
        const bool streaming = plan->mode == core::ExecutionMode::WeightStreaming;
        scene.wafers = wafersShown(*plan);
        const int shown = streaming || plan->stackedLayers ? std::max(0, m_selected) : 0;
        if (m_placement.plan != plan || m_placement.shown != shown)
            m_placement = { plan, shown, std::make_shared<const std::vector<PlacedRegion>>(placedRegions(*plan, shown)),
                nullptr };
        scene.regions = m_placement.regions;
        scene.highlighted = -1; // the selected region's place among those drawn
        for (std::size_t i = 0; i < scene.regions->size() && m_selected >= 0; ++i)
            if ((*scene.regions)[i].planIndex == m_selected)
                scene.highlighted = int(i);
        const QString model = m_document->modelName();
        if (streaming && !scene.regions->empty())
            caption
                += tr("\n%1 · weight streaming: %2 on the whole fabric")
                       .arg(model,
                           QString::fromStdString(plan->regions[std::size_t((*scene.regions)[0].planIndex)].opName));
        else
            caption += tr("\n%1 · %2 · %3 regions on %4")
                           .arg(model, executionModeLabel(plan->mode))
                           .arg(plan->regions.size())
                           .arg(scene.wafers == 1 ? tr("one wafer") : tr("%1 wafers").arg(scene.wafers));
        if (plan->stackedLayers)
            caption += tr("\nblocks stacked in SRAM tiers: one drawn per band (select a region to draw its tier)");
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
    case MeshOverlay::Difference: {
        const Baseline& baseline = m_document->baseline();
        scene.scale = { baseline.frames ? tr("PE activity: this run minus the baseline (%1)").arg(baseline.label)
                                        : tr("PE activity vs a baseline: Compare > Keep this run as baseline first"),
            tr("points"), 100.0, {}, {} };
        if (snapshot)
            scene.field = snapshot->difference;
        break;
    }
    case MeshOverlay::Sram:
        scene.scale = { tr("SRAM per PE (of what the program may use)"), tr("KiB"),
            plan ? double(plan->sramPerPeBytes) / 1024.0 : 0.0, {}, {} };
        if (plan && scene.regions && !m_placement.sram)
            m_placement.sram = std::make_shared<const MeshField>(sramField(*plan, *scene.regions, scene.wafers));
        scene.field = plan ? m_placement.sram : nullptr;
        break;
    }
    if (snapshot && m_overlay != MeshOverlay::Placement && m_overlay != MeshOverlay::Sram)
        caption += QLatin1Char('\n') + stepText();
    m_view->setScene(scene, caption);
}

void WaferPresenter::showSnapshot(const std::shared_ptr<const FrameSnapshot>& snapshot)
{
    const std::shared_ptr<const core::engine::RunResult> run = m_document->run();
    if (snapshot && snapshot->fabricFrame) {
        showScene();
        Q_EMIT stepShown(snapshot);
        Q_EMIT hoverTextChanged(hoverText());
        return;
    }
    if (!run || !snapshot)
        return;
    const int layer = snapshot->step.layer;
    const bool known = layer >= 0 && std::size_t(layer) < run->metrics.layers.size();
    const int region = known ? run->metrics.layers[std::size_t(layer)].region : -1;
    const int before = m_selected;
    if (region >= 0)
        selectRegion(region);
    // Under weight streaming a new op redraws the scene (that op on the whole fabric) already.
    const std::shared_ptr<const core::ExecutionPlan> plan = m_document->plan();
    const bool redrawn = plan && plan->mode == core::ExecutionMode::WeightStreaming && m_selected != before;
    if (!redrawn)
        showScene();
    Q_EMIT stepShown(snapshot);
    Q_EMIT hoverTextChanged(hoverText());
}

QString WaferPresenter::stepText() const
{
    const std::shared_ptr<const FrameSnapshot> snapshot = m_playback->shown();
    if (snapshot && snapshot->fabricFrame)
        return fabricStepText(*snapshot);
    const std::shared_ptr<const RunState> state = m_document->runState();
    if (state && !state->frames)
        return tr("no frames: they would not fit in memory (see Messages)");
    if (!snapshot || !state)
        return tr("no run yet");
    const core::engine::Metrics& metrics = state->run->metrics;
    const core::engine::FrameStep& step = snapshot->step;
    const QString layer = step.layer >= 0 && std::size_t(step.layer) < metrics.layers.size()
        ? QString::fromStdString(metrics.layers[std::size_t(step.layer)].name)
        : tr("(no layer)");
    const bool inference = state->options.mode == core::engine::RunMode::Inference;
    QString text
        = tr("step %1 of %2 · %3 %4 · %5 · %6")
              .arg(snapshot->index + 1)
              .arg(m_playback->frameCount())
              .arg(inference ? tr("token") : tr("iteration"))
              .arg(step.iteration + 1)
              .arg(layer,
                  QString::fromLatin1(core::engine::toString(step.phase)).replace(QLatin1Char('_'), QLatin1Char(' ')));
    if (!inference && metrics.microBatchesPerStep > 1)
        text += tr(" · micro-batch %1 of %2").arg(step.microBatch + 1).arg(metrics.microBatchesPerStep);
    text += tr(" · t = %1 ms").arg(step.start * 1e3, 0, 'f', 3);
    return text;
}

QString WaferPresenter::fabricStepText(const FrameSnapshot& snapshot) const
{
    const core::fabric::CompactFrame& frame = *snapshot.fabricFrame;
    const core::fabric::RecordedFrames* frames = m_playback->fabricFrames();
    QString text = tr("token on the fabric · frame %1 of %2%3 · %4 position %5 · cycles %6 to %7 of the token "
                      "(measured, %8-cycle window)")
                       .arg(snapshot.index + 1)
                       .arg(m_playback->frameCount())
                       .arg(frames && !frames->finished() ? tr(" so far") : QString())
                       .arg(QString::fromStdString(frame.phase))
                       .arg(frame.position)
                       .arg(frame.tokenCycle - std::min(frame.tokenCycle, frame.intervalCycles))
                       .arg(frame.tokenCycle)
                       .arg(frame.intervalCycles);
    if (frames && frames->halvings() > 0)
        text += tr(" · windows merged to keep the whole run in at most %1 frames").arg(frames->capacity());
    return text;
}

void WaferPresenter::showHoveredPe(std::optional<WaferPe> pe)
{
    Q_EMIT hoverTextChanged(hoverText());
    const std::shared_ptr<const core::ExecutionPlan> plan = m_document->plan();
    const int placed = pe ? m_view->scene().planIndexAt(*pe) : -1;
    if (placed >= 0 && plan)
        QToolTip::showText(QCursor::pos(), describeRegion(*plan, m_document->graph().get(), placed), m_view);
    else
        QToolTip::hideText();
}

QString WaferPresenter::hoverText() const
{
    const std::optional<WaferPe> pe = m_view->hovered();
    if (!pe)
        return {};
    const bool usable = m_document->system().wafer.isUsable(pe->pe.x(), pe->pe.y());
    const MeshScene& scene = m_view->scene();
    const std::shared_ptr<const core::ExecutionPlan> plan = m_document->plan();
    QString text = scene.wafers > 1 ? tr("wafer %1 · ").arg(pe->wafer) : QString();
    text += tr("PE (%1, %2)").arg(pe->pe.x()).arg(pe->pe.y());
    const int placed = scene.planIndexAt(*pe);
    if (placed >= 0 && plan) {
        const core::Region& region = plan->regions[std::size_t(placed)];
        text += tr(" · %1 · SRAM %2 of %3 per PE")
                    .arg(QString::fromStdString(region.opName), formatKib(region.sramBytesPerPe),
                        formatKib(plan->sramPerPeBytes));
    } else {
        text += usable ? (plan ? tr(" · idle") : tr(" · usable")) : tr(" · I/O margin");
    }
    if (!usable)
        return text;
    const std::optional<float> value = scene.valueAt(*pe);
    if (value && scene.overlay == MeshOverlay::Activity) {
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
