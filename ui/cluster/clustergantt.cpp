#include "ui/cluster/clustergantt.h"

#include "ui/cluster/clustertiles.h"
#include "ui/panels/plotsupport.h"
#include "ui/panels/qcustomplotinclude.h"

#include <QVBoxLayout>

#include <algorithm>
#include <map>

namespace waferscope::ui {

namespace {

// The number of jobs waiting at each change, from submissions and starts: (time, depth) steps.
std::vector<std::pair<double, int>> queueDepth(const core::cluster::ClusterResult& result)
{
    std::map<double, int> changes;
    for (const core::cluster::JobResult& job : result.jobs)
        if (job.startS && *job.startS > job.submitS) {
            ++changes[job.submitS];
            --changes[*job.startS];
        }
    std::vector<std::pair<double, int>> steps;
    int depth = 0;
    for (const auto& [time, change] : changes) {
        depth += change;
        steps.push_back({ time, depth });
    }
    return steps;
}

} // namespace

ClusterGantt::ClusterGantt(QWidget* parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
    , m_cursor(addTimeCursor(m_plot))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    setUpTimePlot(m_plot);
    m_plot->yAxis->setRangeReversed(true);
    m_plot->yAxis->grid()->setVisible(false);
    m_plot->yAxis->setTickLength(0, 0);
    m_plot->yAxis->setSubTickLength(0, 0);
    connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
        if (!m_result || event->button() != Qt::LeftButton)
            return;
        const double seconds = m_plot->xAxis->pixelToCoord(event->position().x()) * m_unit;
        Q_EMIT timeSelected(std::max(0.0, seconds));
    });
}

void ClusterGantt::setSchedule(std::shared_ptr<const core::cluster::ClusterResult> result)
{
    m_result = std::move(result);
    for (QCPAbstractItem* item : m_bars)
        m_plot->removeItem(item);
    m_bars.clear();
    const auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    if (!m_result || !m_result->makespanS) {
        m_plot->yAxis->setTicker(ticker);
        m_plot->replot();
        return;
    }
    const double span = std::max(*m_result->makespanS, 1e-9);
    m_unit = span >= 7200.0 ? 3600.0 : span >= 120.0 ? 60.0 : 1.0;
    m_plot->xAxis->setLabel(m_unit == 3600.0 ? tr("hours") : m_unit == 60.0 ? tr("minutes") : tr("seconds"));
    const auto bar = [&](double from, double to, double row, const QColor& fill, double height) {
        auto* rect = new QCPItemRect(m_plot);
        rect->topLeft->setCoords(from / m_unit, row - height / 2.0);
        rect->bottomRight->setCoords(to / m_unit, row + height / 2.0);
        rect->setPen(Qt::NoPen);
        rect->setBrush(fill);
        rect->setClipToAxisRect(true);
        m_bars.push_back(rect);
    };
    // Row 0: the queue lane, its height the number of jobs waiting (the most fills the row).
    const std::vector<std::pair<double, int>> depth = queueDepth(*m_result);
    int deepest = 1;
    for (const auto& [time, count] : depth)
        deepest = std::max(deepest, count);
    for (std::size_t i = 0; i + 1 < depth.size(); ++i)
        if (depth[i].second > 0)
            bar(depth[i].first, depth[i + 1].first, 0.0, QColor(0x71, 0x80, 0x96), 0.8 * depth[i].second / deepest);
    ticker->addTick(0.0, tr("queue (up to %1)").arg(deepest));
    // A row per job: pale while it waits, in its colour while it runs.
    constexpr std::size_t kMostRows = 400; // beyond, rows are too thin to read; the table has them all
    const std::size_t rows = std::min(m_result->jobs.size(), kMostRows);
    for (std::size_t j = 0; j < rows; ++j) {
        const core::cluster::JobResult& job = m_result->jobs[j];
        const double row = double(j + 1);
        ticker->addTick(row, QString::fromStdString(job.name));
        if (!job.startS)
            continue;
        QColor pale = clusterJobColour(j);
        pale.setAlpha(70);
        if (*job.startS > job.submitS)
            bar(job.submitS, *job.startS, row, pale, 0.6);
        bar(*job.startS, *job.endS, row, clusterJobColour(j), 0.7);
    }
    m_plot->yAxis->setTicker(ticker);
    m_plot->yAxis->setRange(-0.6, double(rows) + 0.6);
    const double first = m_result->firstSubmitS.value_or(0.0);
    m_plot->xAxis->setRange(first / m_unit, (first + 1.02 * span) / m_unit);
    m_plot->replot();
}

void ClusterGantt::setCursor(double seconds)
{
    placeTimeCursor(m_cursor, seconds / m_unit);
    m_plot->layer(QStringLiteral("cursor"))->replot();
}

} // namespace waferscope::ui
