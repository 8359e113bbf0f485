#pragma once

class QCustomPlot;
class QCPItemStraightLine;
class QLabel;
class QWidget;

namespace waferscope::ui {

// What the chart docks (Timeline, Utilization, Scaling) share.

// The dock's layout: a wrapped summary line above its chart, which takes the rest.
void stackSummaryAbove(QWidget* panel, QLabel* summary, QWidget* chart);

// A QCustomPlot over the run's time in ms: the wheel zooms and dragging pans the time axis only.
void setUpTimePlot(QCustomPlot* plot);

// The time cursor: a red vertical line on a buffered layer of its own (moving it repaints only
// that layer), hidden until placed.
QCPItemStraightLine* addTimeCursor(QCustomPlot* plot);
void placeTimeCursor(QCPItemStraightLine* cursor, double ms);

} // namespace waferscope::ui
