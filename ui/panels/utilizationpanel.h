#pragma once

#include "core/engine/framesource.h"

#include <QWidget>

class QCustomPlot;
class QCPGraph;
class QCPItemStraightLine;
class QLabel;

namespace waferscope::ui {

// Utilization over the run (QCustomPlot): compute, fabric, I/O, MemoryX and SwarmX as shares of
// their capacity in equal time bins. The run so far (up to the time cursor the player moves) is
// drawn in full colour, the rest faint, so the chart fills in as the run plays. Behind them a
// hatched area, drawn for the whole run, shows the share of the wafers' PEs running work whose
// link load has no model, where the fabric line's zero means "not modelled", not "idle".
class UtilizationPanel : public QWidget {
    Q_OBJECT
public:
    explicit UtilizationPanel(QWidget* parent = nullptr);

    void setSeries(const core::engine::UtilizationSeries& series, const QString& title);
    void clear(const QString& message);
    void setCursorTime(double seconds);

    // For tests: the series' names in legend order, and how many points each draws up to the cursor.
    QStringList seriesNames() const;
    QCPGraph* unmodelledArea() const { return m_unmodelled; }
    int pointsUpToCursor() const;
    QCustomPlot* plot() const { return m_plot; }

private:
    QCustomPlot* m_plot;
    QCPItemStraightLine* m_cursor;
    QLabel* m_summary;
    QCPGraph* m_unmodelled; // fabricUnmodelled, hatched, under the lines
    core::engine::UtilizationSeries m_series;
    double m_cursorS = 0.0;
};

} // namespace waferscope::ui
