#include "ui/panels/plotsupport.h"

#include "ui/panels/qcustomplotinclude.h"

#include <QLabel>
#include <QVBoxLayout>

namespace waferscope::ui {

void stackSummaryAbove(QWidget* panel, QLabel* summary, QWidget* chart)
{
    auto* layout = new QVBoxLayout(panel);
    layout->setContentsMargins(4, 2, 4, 2);
    layout->setSpacing(2);
    summary->setWordWrap(true);
    layout->addWidget(summary);
    layout->addWidget(chart, 1);
}

void setUpTimePlot(QCustomPlot* plot)
{
    plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plot->axisRect()->setRangeDrag(Qt::Horizontal);
    plot->axisRect()->setRangeZoom(Qt::Horizontal);
    plot->xAxis->setLabel(QObject::tr("time (ms)"));
}

QCPItemStraightLine* addTimeCursor(QCustomPlot* plot)
{
    auto* cursor = new QCPItemStraightLine(plot);
    cursor->setPen(QPen(QColor(0xd0, 0x30, 0x30), 1.5));
    cursor->setVisible(false);
    const QString layer = QStringLiteral("cursor");
    plot->addLayer(layer, plot->layer(QStringLiteral("overlay")), QCustomPlot::limBelow);
    plot->layer(layer)->setMode(QCPLayer::lmBuffered);
    cursor->setLayer(layer);
    return cursor;
}

void placeTimeCursor(QCPItemStraightLine* cursor, double ms)
{
    cursor->point1->setCoords(ms, 0.0);
    cursor->point2->setCoords(ms, 1.0);
    cursor->setVisible(true);
}

} // namespace waferscope::ui
