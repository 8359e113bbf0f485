#include "ui/panels/timelinepanel.h"

#include "ui/panels/plotsupport.h"
#include "ui/panels/qcustomplotinclude.h"

#include <QHelpEvent>
#include <QLabel>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <map>

namespace waferscope::ui {

// Draws the bars of every lane straight from the timeline, culled to the visible time range,
// so tens of thousands of events zoom and pan smoothly.
class TimelineBars : public QCPLayerable {
public:
    struct Bar {
        int lane = 0;
        double start = 0.0; // ms
        double end = 0.0;
        QColor color;
    };

    explicit TimelineBars(QCustomPlot* plot)
        : QCPLayerable(plot)
    {
    }
    std::vector<Bar> bars;

protected:
    void applyDefaultAntialiasingHint(QCPPainter* painter) const override { painter->setAntialiasing(false); }
    QRect clipRect() const override { return parentPlot()->axisRect()->rect(); }
    void draw(QCPPainter* painter) override
    {
        QCPAxis* x = parentPlot()->xAxis;
        QCPAxis* y = parentPlot()->yAxis;
        const QCPRange visible = x->range();
        painter->setPen(Qt::NoPen);
        // Zoomed out, thousands of bars fall within a pixel or two of each other: consecutive
        // bars of a lane in one colour that touch on screen are drawn as one rectangle.
        struct Pending {
            double left = 0.0;
            double right = -1.0;
            QColor color;
        };
        std::vector<Pending> pending;
        const auto flush = [&](int lane) {
            Pending& run = pending[std::size_t(lane)];
            if (run.right < run.left)
                return;
            const double top = y->coordToPixel(lane - 0.38);
            const double bottom = y->coordToPixel(lane + 0.38);
            painter->setBrush(run.color);
            painter->drawRect(
                QRectF(QPointF(run.left, std::min(top, bottom)), QPointF(run.right, std::max(top, bottom))));
            run.right = run.left - 1.0;
        };
        for (const Bar& bar : bars) {
            if (bar.end < visible.lower || bar.start > visible.upper)
                continue;
            if (std::size_t(bar.lane) >= pending.size())
                pending.resize(std::size_t(bar.lane) + 1);
            const double left = x->coordToPixel(bar.start);
            const double right = std::max(left + 1.0, x->coordToPixel(bar.end));
            Pending& run = pending[std::size_t(bar.lane)];
            if (run.right >= run.left && run.color == bar.color && left <= run.right + 1.0 && left >= run.left) {
                run.right = std::max(run.right, right);
                continue;
            }
            flush(bar.lane);
            run = { left, right, bar.color };
        }
        for (std::size_t lane = 0; lane < pending.size(); ++lane)
            flush(int(lane));
    }
};

QColor TimelinePanel::phaseColor(core::engine::Phase phase)
{
    using core::engine::Phase;
    switch (phase) {
    case Phase::StreamIn:
        return QColor(0x4c, 0x8e, 0xda);
    case Phase::Forward:
        return QColor(0x3f, 0xb9, 0x50);
    case Phase::BackwardDelta:
        return QColor(0xf0, 0x8c, 0x2e);
    case Phase::BackwardGradient:
        return QColor(0xc8, 0x5a, 0x12);
    case Phase::GradientOut:
        return QColor(0x8e, 0x6b, 0xd8);
    case Phase::Reduce:
        return QColor(0xc0, 0x4f, 0xb4);
    case Phase::OptimizerUpdate:
        return QColor(0xe0, 0x4a, 0x4a);
    case Phase::Prefill:
        return QColor(0x2a, 0xa8, 0xa8);
    case Phase::Decode:
        return QColor(0x7a, 0xc9, 0x43);
    case Phase::CheckpointOut:
        return QColor(0x9a, 0x8f, 0x3a);
    case Phase::CheckpointIn:
        return QColor(0x6f, 0x9f, 0x9a);
    case Phase::FlashStreamIn:
        return QColor(0x1f, 0x4e, 0x8c); // a darker stream_in: the same weights, from the slower tier
    }
    return Qt::gray;
}

TimelinePanel::TimelinePanel(QWidget* parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
    , m_bars(new TimelineBars(m_plot))
    , m_cursor(addTimeCursor(m_plot))
    , m_summary(new QLabel(this))
{
    stackSummaryAbove(this, m_summary, m_plot);
    m_summary->setTextFormat(Qt::RichText);
    m_plot->setMinimumHeight(110);
    setUpTimePlot(m_plot);
    m_plot->yAxis->setRangeReversed(true);
    m_plot->yAxis->grid()->setVisible(false);
    m_plot->installEventFilter(this);
    connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
        if (event->button() != Qt::LeftButton || !m_run)
            return;
        const double ms = m_plot->xAxis->pixelToCoord(event->position().x());
        setCursorTime(ms / 1e3);
        Q_EMIT timeSelected(ms / 1e3);
    });
    clear(tr("The timeline of a run appears here once a model is compiled."));
}

void TimelinePanel::clear(const QString& message)
{
    m_run.reset();
    m_bars->bars.clear();
    m_laneOfEvent.clear();
    m_laneNames.clear();
    m_cursor->setVisible(false);
    m_summary->setText(message);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelinePanel::setRun(
    std::shared_ptr<const core::engine::RunResult> run, std::shared_ptr<const core::ExecutionPlan> plan)
{
    using core::engine::LaneKind;
    m_run = std::move(run);
    const core::engine::Metrics& metrics = m_run->metrics;
    // Lanes in a fixed order: the MemoryX -> SwarmX -> CS-X path, then wafers or stages, then links.
    std::map<std::pair<int, int>, QString> lanes; // (order, index) -> name
    const auto laneKey = [&](const core::engine::TimelineEvent& event) -> std::pair<int, int> {
        switch (event.lane) {
        case LaneKind::MemoryX:
            return { 0, 0 };
        case LaneKind::SwarmX:
            return { 1, 0 };
        case LaneKind::CsxIo:
            return { 2, 0 };
        case LaneKind::CsxCompute:
            return { 3, 0 };
        case LaneKind::Region: {
            const core::Region& region = plan->regions[std::size_t(event.laneIndex)];
            return plan->mode == core::ExecutionMode::Inference ? std::pair { 4, region.system }
                                                                : std::pair { 5, region.stage };
        }
        case LaneKind::WaferLink:
            return { 6, event.laneIndex };
        }
        return { 7, 0 };
    };
    const auto laneName = [&](std::pair<int, int> key) {
        const QString systems = metrics.numSystems > 1 ? tr(" (each of %1)").arg(metrics.numSystems) : QString();
        switch (key.first) {
        case 0:
            return tr("MemoryX");
        case 1:
            return tr("SwarmX");
        case 2:
            return tr("CS-X I/O") + systems;
        case 3:
            return tr("CS-X wafer") + systems;
        case 4:
            return tr("wafer %1").arg(key.second);
        case 5:
            return tr("stage %1").arg(key.second);
        case 6:
            return tr("link %1 → %2").arg(key.second).arg(key.second + 1);
        default:
            return tr("other");
        }
    };
    for (const core::engine::TimelineEvent& event : m_run->timeline.events) {
        const auto key = laneKey(event);
        lanes.emplace(key, laneName(key));
    }
    std::map<std::pair<int, int>, int> laneIndex;
    m_laneNames.clear();
    for (const auto& [key, name] : lanes) {
        laneIndex[key] = int(m_laneNames.size());
        m_laneNames.push_back(name);
    }
    labelLanes();
    m_bars->bars.clear();
    m_laneOfEvent.clear();
    for (const core::engine::TimelineEvent& event : m_run->timeline.events) {
        const int lane = laneIndex[laneKey(event)];
        m_laneOfEvent.push_back(lane);
        m_bars->bars.push_back({ lane, event.start * 1e3, event.end * 1e3, phaseColor(event.phase) });
    }
    m_plot->yAxis->setRange(-0.6, double(m_laneNames.size()) - 0.4);
    m_plot->xAxis->setRange(0.0, std::max(1e-6, m_run->timeline.span * 1e3));
    m_cursor->setVisible(false);
    QString text;
    if (metrics.mode == core::RunMode::Inference)
        text = tr("Prefill of %1 tokens, then %2 decode step(s): %3 tokens/s per user, first token after %4 ms.")
                   .arg(metrics.promptTokens)
                   .arg(metrics.stepTimesS.size())
                   .arg(metrics.tokensPerS, 0, 'f', 1)
                   .arg(metrics.timeToFirstTokenS * 1e3, 0, 'f', 3);
    if (metrics.speculative && metrics.speculative->draftTokens > 0) {
        // Speculative decoding: a decode step on the timeline is a pass's average token.
        const core::engine::SpeculativeDecode& s = *metrics.speculative;
        text += tr(" Speculative: %1 drafts %2 tokens a pass %3; %4 tokens a pass at acceptance %5 (%6 tokens/s "
                   "without the draft).")
                    .arg(QString::fromStdString(s.draft))
                    .arg(s.draftTokens)
                    .arg(s.sharesWafer ? tr("on wafer %1").arg(s.wafer)
                                       : tr("on %1 wafer(s) of its own").arg(s.draftWafers))
                    .arg(s.tokensPerPass, 0, 'f', 2)
                    .arg(s.acceptanceRate, 0, 'f', 2)
                    .arg(s.targetTokensPerS, 0, 'f', 1);
    } else if (metrics.mode != core::RunMode::Inference)
        text = tr("%1 step(s) of %2 ms (%3): %4 samples/s, MFU %5%, bound by %6.")
                   .arg(metrics.stepTimesS.size())
                   .arg(metrics.stepTimeS * 1e3, 0, 'f', 3)
                   .arg(QString::fromLatin1(core::toString(metrics.execution)))
                   .arg(metrics.samplesPerS, 0, 'f', 1)
                   .arg(100.0 * metrics.mfu, 0, 'f', 1)
                   .arg(QString::fromLatin1(core::toString(metrics.bottleneck)));
    // A legend of the phases this run has, in their colours.
    std::vector<bool> present(int(core::engine::Phase::FlashStreamIn) + 1, false);
    for (const core::engine::TimelineEvent& event : m_run->timeline.events)
        present[std::size_t(event.phase)] = true;
    QString legend;
    for (std::size_t phase = 0; phase < present.size(); ++phase)
        if (present[phase]) {
            const auto p = core::engine::Phase(phase);
            legend += QStringLiteral(" <span style=\"color:%1\">&#9632;</span>&nbsp;%2")
                          .arg(phaseColor(p).name(), QString::fromUtf8(core::engine::toString(p)).replace('_', ' '));
        }
    m_summary->setText(text.toHtmlEscaped() + QStringLiteral("&nbsp;&nbsp;") + legend);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelinePanel::setCursorTime(double seconds)
{
    const double ms = seconds * 1e3;
    placeTimeCursor(m_cursor, ms);
    // Zoomed in, the view follows the cursor (a player stepping past the edge).
    const QCPRange range = m_plot->xAxis->range();
    if (ms < range.lower || ms > range.upper) {
        m_plot->xAxis->setRange(ms - 0.1 * range.size(), ms + 0.9 * range.size());
        m_plot->replot(QCustomPlot::rpQueuedReplot); // one repaint however often the player moves it
    } else {
        m_cursor->layer()->replot(); // the bars stay as they are
    }
}

double TimelinePanel::cursorTime() const
{
    return m_cursor->visible() ? m_cursor->point1->coords().x() / 1e3 : 0.0;
}

int TimelinePanel::eventAt(const QPointF& pixel) const
{
    if (!m_run)
        return -1;
    const double ms = m_plot->xAxis->pixelToCoord(pixel.x());
    const double laneCoord = m_plot->yAxis->pixelToCoord(pixel.y());
    const int lane = int(std::lround(laneCoord));
    if (std::fabs(laneCoord - lane) > 0.4)
        return -1;
    // One pixel of slack, so that short events stay hoverable when zoomed out.
    const double slack = std::fabs(m_plot->xAxis->pixelToCoord(pixel.x() + 1.0) - ms);
    for (std::size_t i = 0; i < m_run->timeline.events.size(); ++i) {
        const core::engine::TimelineEvent& event = m_run->timeline.events[i];
        if (m_laneOfEvent[i] == lane && event.start * 1e3 <= ms + slack && ms - slack <= event.end * 1e3)
            return int(i);
    }
    return -1;
}

void TimelinePanel::labelLanes()
{
    // The dock keeps its height: when the lanes outnumber the lines of text that fit (a long
    // pipeline, many wafers), every k-th is labelled and the tooltip names the rest.
    const int lineHeight = QFontMetrics(m_plot->yAxis->tickLabelFont()).height() + 2;
    const int axisHeight = m_plot->height() - 50; // less the time axis, its labels and margins
    const int fit = std::max(1, axisHeight / std::max(1, lineHeight));
    const int lanes = int(m_laneNames.size());
    const int labelEvery = std::max(1, (lanes + fit - 1) / fit);
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    for (int lane = 0; lane < lanes; lane += labelEvery)
        ticker->addTick(double(lane), m_laneNames[lane]);
    m_plot->yAxis->setTicker(ticker);
}

bool TimelinePanel::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_plot && event->type() == QEvent::Resize && !m_laneNames.isEmpty()) {
        const bool handled = QWidget::eventFilter(watched, event);
        QTimer::singleShot(0, this, [this] {
            labelLanes();
            m_plot->replot(QCustomPlot::rpQueuedReplot);
        });
        return handled;
    }
    if (watched == m_plot && event->type() == QEvent::ToolTip && m_run) {
        const auto* help = static_cast<QHelpEvent*>(event);
        const int index = eventAt(help->pos());
        if (index < 0) {
            QToolTip::hideText();
            return true;
        }
        const core::engine::TimelineEvent& e = m_run->timeline.events[std::size_t(index)];
        const auto& layers = m_run->metrics.layers;
        const QString layer = e.layer >= 0 && std::size_t(e.layer) < layers.size()
            ? QString::fromStdString(layers[std::size_t(e.layer)].name)
            : tr("(whole model)");
        QString text = tr("<b>%1</b> %2<br>%3, step %4, micro-batch %5<br>%6 ms → %7 ms (%8 ms)")
                           .arg(layer, QString::fromUtf8(core::engine::toString(e.phase)),
                               m_laneNames[m_laneOfEvent[std::size_t(index)]])
                           .arg(e.iteration)
                           .arg(e.microBatch)
                           .arg(e.start * 1e3, 0, 'f', 4)
                           .arg(e.end * 1e3, 0, 'f', 4)
                           .arg((e.end - e.start) * 1e3, 0, 'f', 4);
        if (e.bytes > 0.0)
            text += tr("<br>%1 MB moved").arg(e.bytes / 1e6, 0, 'f', 2);
        if (e.flops > 0.0)
            text += tr("<br>%1 TFLOP").arg(e.flops / 1e12, 0, 'f', 4);
        QToolTip::showText(help->globalPos(), text, m_plot);
        return true;
    }
    return QWidget::eventFilter(watched, event);
}

} // namespace waferscope::ui
