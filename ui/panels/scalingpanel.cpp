#include "ui/panels/scalingpanel.h"

#include "ui/panels/plotsupport.h"

#include <QChart>
#include <QChartView>
#include <QLabel>
#include <QLegend>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace waferscope::ui {

ScalingPanel::ScalingPanel(QWidget* parent)
    : QWidget(parent)
    , m_view(new QChartView(this))
    , m_summary(new QLabel(this))
{
    stackSummaryAbove(this, m_summary, m_view);
    m_view->setRenderHint(QPainter::Antialiasing);
    clear(tr("Throughput against the number of systems appears here for a model compiled for training."));
}

void ScalingPanel::showChart(QChart* chart)
{
    // The view takes the new chart but only releases the previous one (its own default chart
    // the first time): deleted here, or every sweep would leak a chart with its series.
    QChart* previous = m_view->chart();
    m_view->setChart(chart);
    delete previous;
}

QString ScalingPanel::summary() const
{
    return m_summary->text();
}

void ScalingPanel::clear(const QString& message)
{
    m_sweep.reset();
    auto* chart = new QChart;
    chart->legend()->hide();
    showChart(chart);
    m_summary->setText(message);
}

void ScalingPanel::setSweep(
    std::shared_ptr<const core::sweeps::ScalingSweep> sweep, int currentNumCsx, const QString& title)
{
    m_sweep = std::move(sweep);
    auto* chart = new QChart;
    chart->setTitle(title);
    auto* measured = new QLineSeries;
    measured->setName(tr("simulated samples/s"));
    auto* ideal = new QLineSeries;
    ideal->setName(tr("ideal (linear)"));
    ideal->setPen(QPen(Qt::gray, 1.5, Qt::DashLine));
    auto* efficiency = new QLineSeries;
    efficiency->setName(tr("efficiency"));
    efficiency->setPen(QPen(QColor(0xf0, 0x8c, 0x2e), 1.5, Qt::DotLine));
    auto* current = new QScatterSeries;
    current->setName(tr("num_csx %1").arg(currentNumCsx));
    current->setMarkerSize(12.0);
    current->setColor(QColor(0xd0, 0x30, 0x30));
    auto* limit = new QScatterSeries;
    limit->setName(tr("stream path binds"));
    limit->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    limit->setMarkerSize(10.0);
    limit->setColor(QColor(0x4c, 0x8e, 0xda));
    double top = 0.0;
    int crossover = -1;
    QString crossoverBound;
    for (const core::sweeps::ScalingPoint& point : m_sweep->points) {
        measured->append(point.numCsx, point.samplesPerS);
        ideal->append(point.numCsx, m_sweep->baselineSamplesPerS * point.numCsx);
        efficiency->append(point.numCsx, point.efficiency);
        top = std::max({ top, point.samplesPerS, m_sweep->baselineSamplesPerS * point.numCsx });
        if (point.numCsx == currentNumCsx)
            current->append(point.numCsx, point.samplesPerS);
        if (crossover < 0 && point.bottleneck != core::Bound::Compute && point.bottleneck != core::Bound::Fabric) {
            crossover = point.numCsx;
            crossoverBound = QString::fromLatin1(core::toString(point.bottleneck));
            limit->append(point.numCsx, point.samplesPerS);
        }
    }
    for (QAbstractSeries* series : { static_cast<QAbstractSeries*>(ideal), static_cast<QAbstractSeries*>(measured),
             static_cast<QAbstractSeries*>(limit), static_cast<QAbstractSeries*>(current),
             static_cast<QAbstractSeries*>(efficiency) })
        chart->addSeries(series);
    auto* x = new QLogValueAxis;
    x->setBase(2.0);
    x->setLabelFormat("%d");
    x->setTitleText(tr("CS-X systems"));
    const int last = m_sweep->points.empty() ? 1 : m_sweep->points.back().numCsx;
    x->setRange(1.0, std::max(2.0, double(last)));
    auto* y = new QLogValueAxis;
    y->setBase(10.0);
    y->setLabelFormat("%g");
    y->setTitleText(tr("samples/s"));
    const double first = m_sweep->points.empty() ? 1.0 : m_sweep->points.front().samplesPerS;
    y->setRange(std::max(1e-9, first * 0.5), std::max(first, top) * 1.5);
    auto* eff = new QValueAxis;
    eff->setRange(0.0, 1.05);
    eff->setTitleText(tr("efficiency"));
    eff->setLabelFormat("%.1f");
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    chart->addAxis(eff, Qt::AlignRight);
    for (QAbstractSeries* series : chart->series()) {
        series->attachAxis(x);
        series->attachAxis(series == efficiency ? static_cast<QAbstractAxis*>(eff) : static_cast<QAbstractAxis*>(y));
    }
    chart->legend()->setAlignment(Qt::AlignBottom);
    showChart(chart);

    QString text;
    const auto at = std::find_if(m_sweep->points.begin(), m_sweep->points.end(),
        [&](const core::sweeps::ScalingPoint& p) { return p.numCsx == currentNumCsx; });
    if (at != m_sweep->points.end())
        text = tr("%1 systems: %2 samples/s, speedup %3, efficiency %4 (%5). ")
                   .arg(at->numCsx)
                   .arg(at->samplesPerS, 0, 'f', 1)
                   .arg(at->speedup, 0, 'f', 2)
                   .arg(at->efficiency, 0, 'f', 3)
                   .arg(QString::fromLatin1(core::toString(at->bottleneck)));
    text += crossover > 0
        ? tr("From %1 systems the stream path (%2) binds instead of the wafer, with a global batch of %3.")
              .arg(crossover)
              .arg(crossoverBound)
              .arg(m_sweep->globalBatch)
        : tr("The wafer stays the bound up to %1 systems with a global batch of %2.")
              .arg(last)
              .arg(m_sweep->globalBatch);
    m_summary->setText(text);
}

} // namespace waferscope::ui
