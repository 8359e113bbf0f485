#include "ui/panels/sensitivitypanel.h"

#include "ui/models/sensitivitymodel.h"
#include "ui/panels/emptystatepanel.h"
#include "ui/panels/plotsupport.h"
#include "ui/panels/qcustomplotinclude.h"

#include "core/engine/calibration.h"
#include "core/report/reportdocument.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableWidget>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace waferscope::ui {

namespace {

const QColor kLowColor(0x4c, 0x8e, 0xda);
const QColor kHighColor(0xf0, 0x8c, 0x2e);

QString number(double value)
{
    return QString::number(value, 'g', 4);
}

QString unitOf(const core::sweeps::Sensitivity& result)
{
    return QString::fromStdString(core::report::figureUnit(result.figure));
}

QString describe(const core::sweeps::FactorEffect& f, const QString& unit)
{
    return QObject::tr("%1\nvalue %2, range %3 .. %4\n%5 at its low: %6, at its high: %7\n%8")
        .arg(QString::fromStdString(f.name), number(f.value), number(f.lowValue), number(f.highValue), unit,
            number(f.figureAtLow), number(f.figureAtHigh), QString::fromStdString(f.reason));
}

} // namespace

SensitivityPanel::SensitivityPanel(SensitivityModel* model, QWidget* parent)
    : QWidget(parent)
    , m_model(model)
    , m_pages(new QStackedWidget(this))
    , m_empty(nullptr)
    , m_summary(new QLabel(this))
    , m_splitter(nullptr)
    , m_plot(new QCustomPlot(this))
    , m_table(new QTableWidget(this))
{
    auto* content = new QWidget(m_pages);
    m_splitter = new QSplitter(Qt::Horizontal, content);
    m_splitter->addWidget(m_plot);
    m_splitter->addWidget(m_table);
    m_splitter->setStretchFactor(0, 3);
    m_splitter->setStretchFactor(1, 2);
    m_splitter->setSizes({ 600, 400 });
    stackSummaryAbove(content, m_summary, m_splitter);
    m_pages->addWidget(content);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_pages);

    m_plot->setMinimumHeight(160);
    // The legend in a row of its own above the bars, so it never covers one.
    m_plot->legend->setVisible(true);
    m_plot->legend->setFont(font());
    m_plot->legend->setBorderPen(Qt::NoPen);
    m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    m_plot->plotLayout()->insertRow(0);
    m_plot->plotLayout()->addElement(0, 0, m_plot->legend);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.001);
    m_plot->legend->setMargins(QMargins(2, 0, 2, 0));
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText));
    m_plot->yAxis->grid()->setVisible(false);
    m_plot->setMouseTracking(true);
    connect(m_plot, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) { showTooltip(event->pos()); });

    m_table->setColumnCount(6);
    m_table->setHorizontalHeaderLabels(
        { tr("Factor"), tr("At its low"), tr("At its high"), tr("Value"), tr("Range"), tr("Why it spans its range") });
    m_table->verticalHeader()->setVisible(false);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->horizontalHeader()->setStretchLastSection(true);

    connect(m_model, &SensitivityModel::progress, this, [this](double fraction) {
        m_summary->setText(tr("Varying each ranged value alone … %1%").arg(int(100.0 * fraction)));
    });
    connect(m_model, &SensitivityModel::cleared, this, &SensitivityPanel::showEmpty);
    connect(m_model, &SensitivityModel::requested, this, &SensitivityPanel::showWaiting);
    connect(m_model, &SensitivityModel::computed, this, &SensitivityPanel::showSweep);
    m_model->setActive(isVisible());
    showEmpty(tr("Once a model has run, this shows how its throughput moves when each assumed hardware value and "
                 "calibration constant goes from the low to the high end of its plausible range."));
}

QString SensitivityPanel::summary() const
{
    return m_summary->text();
}

void SensitivityPanel::showEmpty(const QString& message)
{
    m_plot->clearPlottables();
    m_plot->clearItems();
    m_plot->replot();
    m_table->setRowCount(0);
    m_summary->clear();
    if (m_empty) {
        m_pages->removeWidget(m_empty);
        m_empty->deleteLater();
    }
    m_empty = new EmptyStatePanel(tr("What this result depends on"), message, m_pages);
    m_pages->addWidget(m_empty);
    m_pages->setCurrentWidget(m_empty);
}

void SensitivityPanel::showWaiting()
{
    // While the sweep waits or runs the summary line says so.
    m_summary->setText(tr("Varying each ranged value of the run alone …"));
    m_splitter->hide();
    m_pages->setCurrentIndex(0);
}

void SensitivityPanel::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    m_model->setActive(true);
}

void SensitivityPanel::hideEvent(QHideEvent* event)
{
    QWidget::hideEvent(event);
    m_model->setActive(false);
}

QStringList SensitivityPanel::rowNames() const
{
    QStringList names;
    if (const auto& sensitivity = m_model->sensitivity())
        for (std::size_t i = 0; i < sensitivity->factors.size() && i < std::size_t(kMaxRows); ++i)
            names << QString::fromStdString(sensitivity->factors[i].name);
    return names;
}

void SensitivityPanel::showSweep()
{
    if (!m_model->sensitivity())
        return; // it failed: the empty state says why
    const core::sweeps::Sensitivity& s = *m_model->sensitivity();
    const QString unit = unitOf(s);
    const int rows = int(std::min<std::size_t>(s.factors.size(), kMaxRows));
    m_plot->clearPlottables();
    m_plot->clearItems();
    // Row 0 (the largest effect) at the top: key rows - 1.
    auto* low = new QCPBars(m_plot->yAxis, m_plot->xAxis);
    auto* high = new QCPBars(m_plot->yAxis, m_plot->xAxis);
    low->setName(tr("factor at its low"));
    high->setName(tr("factor at its high"));
    for (auto [bars, color] : { std::pair { low, kLowColor }, std::pair { high, kHighColor } }) {
        bars->setBaseValue(s.baseline);
        bars->setWidth(0.6);
        QColor fill = color;
        fill.setAlpha(200);
        bars->setBrush(fill);
        bars->setPen(QPen(color.darker(130), 1));
    }
    auto ticker = QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText);
    double left = s.baseline, right = s.baseline;
    for (int i = 0; i < rows; ++i) {
        const core::sweeps::FactorEffect& f = s.factors[std::size_t(i)];
        const double key = double(rows - 1 - i);
        // A bar's value is drawn from the base value (the baseline) on.
        low->addData(key, f.figureAtLow - s.baseline);
        high->addData(key, f.figureAtHigh - s.baseline);
        ticker->addTick(key, QString::fromStdString(f.name));
        left = std::min({ left, f.figureAtLow, f.figureAtHigh });
        right = std::max({ right, f.figureAtLow, f.figureAtHigh });
    }
    m_plot->yAxis->setTicker(ticker);
    // Room for every row's name without overlap: a line of text per row, plus legend and axis.
    m_plot->setMinimumHeight(std::max(160, QFontMetrics(m_plot->yAxis->tickLabelFont()).height() * (rows + 1) + 80));
    m_plot->yAxis->setRange(-0.7, std::max(rows, 1) - 0.3);
    const double pad = right > left ? 0.08 * (right - left) : std::max(1e-9, 0.01 * std::abs(s.baseline));
    m_plot->xAxis->setRange(left - pad, right + pad);
    m_plot->xAxis->setLabel(tr("%1 (dashed: %2 as run)").arg(unit, number(s.baseline)));
    auto* baseline = new QCPItemStraightLine(m_plot);
    baseline->setPen(QPen(QColor(0x30, 0x30, 0x30), 1.2, Qt::DashLine));
    baseline->point1->setCoords(s.baseline, 0.0);
    baseline->point2->setCoords(s.baseline, 1.0);
    m_plot->legend->setVisible(rows > 0);
    m_plot->replot();

    m_table->setRowCount(int(s.factors.size()));
    for (std::size_t i = 0; i < s.factors.size(); ++i) {
        const core::sweeps::FactorEffect& f = s.factors[i];
        const QString tip = describe(f, unit);
        const QString cells[]
            = { QString::fromStdString(f.name), number(f.figureAtLow), number(f.figureAtHigh), number(f.value),
                  tr("%1 .. %2").arg(number(f.lowValue), number(f.highValue)), QString::fromStdString(f.reason) };
        for (int c = 0; c < 6; ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            item->setToolTip(tip);
            if (c >= 1 && c <= 4)
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_table->setItem(int(i), c, item);
        }
    }
    m_table->resizeColumnsToContents();
    m_table->setColumnWidth(0, std::min(m_table->columnWidth(0), 260));

    m_summary->setText(s.factors.empty()
            ? tr("No hardware value or calibration constant of this system carries a range.")
            : tr("%1 as run: %2, from %3 to %4 when the %5 ranged values each go alone from the low to the high end "
                 "of their range (largest effect on top; hover a bar for why it spans its range).")
                  .arg(unit, number(s.baseline), number(s.low), number(s.high))
                  .arg(s.factors.size()));
    m_splitter->show();
    m_pages->setCurrentIndex(0);
}

void SensitivityPanel::showTooltip(const QPoint& position)
{
    const auto& sensitivity = m_model->sensitivity();
    if (!sensitivity || !m_plot->axisRect()->rect().contains(position)) {
        QToolTip::hideText();
        return;
    }
    const int rows = int(std::min<std::size_t>(sensitivity->factors.size(), kMaxRows));
    const double key = m_plot->yAxis->pixelToCoord(position.y());
    const int nearest = int(std::lround(key));
    if (nearest < 0 || nearest >= rows || std::abs(key - nearest) > 0.4) {
        QToolTip::hideText();
        return;
    }
    const core::sweeps::FactorEffect& f = sensitivity->factors[std::size_t(rows - 1 - nearest)];
    QToolTip::showText(m_plot->mapToGlobal(position), describe(f, unitOf(*sensitivity)), m_plot);
}

} // namespace waferscope::ui
