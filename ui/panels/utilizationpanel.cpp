#include "ui/panels/utilizationpanel.h"

#include "ui/panels/plotsupport.h"
#include "ui/panels/qcustomplotinclude.h"

#include <QLabel>
#include <QVBoxLayout>

#include <algorithm>

namespace waferscope::ui {

namespace {

struct SeriesStyle {
    const char* name;
    QColor color;
    const std::vector<double> core::engine::UtilizationSeries::*values;
};

const SeriesStyle kSeries[] = {
    { QT_TRANSLATE_NOOP("UtilizationPanel", "compute"), QColor(0x3f, 0xb9, 0x50),
        &core::engine::UtilizationSeries::compute },
    { QT_TRANSLATE_NOOP("UtilizationPanel", "fabric"), QColor(0xe0, 0xa0, 0x20),
        &core::engine::UtilizationSeries::fabric },
    { QT_TRANSLATE_NOOP("UtilizationPanel", "CS-X I/O"), QColor(0x4c, 0x8e, 0xda),
        &core::engine::UtilizationSeries::io },
    { QT_TRANSLATE_NOOP("UtilizationPanel", "MemoryX"), QColor(0xe0, 0x4a, 0x4a),
        &core::engine::UtilizationSeries::memoryx },
    { QT_TRANSLATE_NOOP("UtilizationPanel", "SwarmX"), QColor(0xc0, 0x4f, 0xb4),
        &core::engine::UtilizationSeries::swarmx },
};
constexpr int kSeriesCount = int(std::size(kSeries));

} // namespace

UtilizationPanel::UtilizationPanel(QWidget* parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
    , m_cursor(addTimeCursor(m_plot))
    , m_summary(new QLabel(this))
    , m_unmodelled(nullptr)
{
    stackSummaryAbove(this, m_summary, m_plot);
    setUpTimePlot(m_plot);
    m_plot->yAxis->setLabel(tr("utilization (%)"));
    m_plot->yAxis->setRange(0, 105);
    m_plot->legend->setVisible(true);
    m_plot->legend->setFont(font());
    m_plot->legend->setBrush(QColor(255, 255, 255, 210));
    m_plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    // Per series: the whole run faint (not in the legend), the run so far in full colour.
    for (const SeriesStyle& style : kSeries) {
        QCPGraph* all = m_plot->addGraph();
        QColor faint = style.color;
        faint.setAlpha(110);
        all->setPen(QPen(faint, 1));
        all->setLineStyle(QCPGraph::lsStepLeft);
        all->removeFromLegend();
    }
    for (const SeriesStyle& style : kSeries) {
        QCPGraph* sofar = m_plot->addGraph();
        sofar->setPen(QPen(style.color, 1.6));
        sofar->setLineStyle(QCPGraph::lsStepLeft);
        sofar->setName(tr(style.name));
    }
    m_unmodelled = m_plot->addGraph();
    m_unmodelled->setLayer(QStringLiteral("grid")); // under the series, over the background
    m_unmodelled->setPen(Qt::NoPen);
    m_unmodelled->setBrush(QBrush(QColor(0x70, 0x78, 0x84, 170), Qt::BDiagPattern));
    m_unmodelled->setLineStyle(QCPGraph::lsStepLeft);
    m_unmodelled->setName(tr("share of PEs on work without a traffic model"));
    m_unmodelled->removeFromLegend();
    clear(tr("Utilization over time appears here once a model has run."));
}

void UtilizationPanel::clear(const QString& message)
{
    m_series = {};
    for (int g = 0; g < m_plot->graphCount(); ++g)
        m_plot->graph(g)->data()->clear();
    m_unmodelled->removeFromLegend();
    m_cursor->setVisible(false);
    m_summary->setText(message);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void UtilizationPanel::setSeries(const core::engine::UtilizationSeries& series, const QString& title)
{
    m_series = series;
    m_summary->setText(title);
    // A series as a step line in percent over milliseconds, its last bin closed so the line spans it.
    const auto setSteps = [&](QCPGraph* graph, const std::vector<double>& values) {
        QVector<double> keys;
        QVector<double> percent;
        for (std::size_t b = 0; b < values.size() && b < m_series.start.size(); ++b) {
            keys << m_series.start[b] * 1e3;
            percent << values[b] * 100.0;
        }
        if (!keys.isEmpty()) {
            keys << (m_series.start.back() + m_series.binS) * 1e3;
            percent << percent.back();
        }
        graph->setData(keys, percent, true);
    };
    for (int s = 0; s < kSeriesCount; ++s)
        setSteps(m_plot->graph(s), m_series.*(kSeries[s].values));
    // The share of PEs on work the fabric line cannot count (attention, experts, lookups).
    setSteps(m_unmodelled, m_series.fabricUnmodelled);
    const std::vector<double>& unmodelled = m_series.fabricUnmodelled;
    if (std::any_of(unmodelled.begin(), unmodelled.end(), [](double share) { return share > 0.0; }))
        m_unmodelled->addToLegend();
    else
        m_unmodelled->removeFromLegend();
    const double endMs = m_series.start.empty() ? 1.0 : (m_series.start.back() + m_series.binS) * 1e3;
    m_plot->xAxis->setRange(0, endMs);
    setCursorTime(m_cursorS);
}

void UtilizationPanel::setCursorTime(double seconds)
{
    m_cursorS = seconds;
    const double ms = seconds * 1e3;
    for (int s = 0; s < kSeriesCount; ++s) {
        QCPGraph* all = m_plot->graph(s);
        QVector<double> keys;
        QVector<double> values;
        for (auto it = all->data()->constBegin(); it != all->data()->constEnd() && it->key <= ms; ++it) {
            keys << it->key;
            values << it->value;
        }
        // The bin the cursor is in, up to the cursor.
        if (!keys.isEmpty() && keys.back() < ms) {
            keys << ms;
            values << values.back();
        }
        m_plot->graph(kSeriesCount + s)->setData(keys, values, true);
    }
    placeTimeCursor(m_cursor, ms);
    m_cursor->setVisible(!m_series.start.empty());
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QStringList UtilizationPanel::seriesNames() const
{
    QStringList names;
    for (int s = 0; s < kSeriesCount; ++s)
        names << m_plot->graph(kSeriesCount + s)->name();
    return names;
}

int UtilizationPanel::pointsUpToCursor() const
{
    return m_plot->graph(kSeriesCount)->data()->size();
}

} // namespace waferscope::ui
