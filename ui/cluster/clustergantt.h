#pragma once

#include "core/cluster/cluster.h"

#include <QWidget>

#include <memory>
#include <vector>

class QCustomPlot;
class QCPAbstractItem;
class QCPItemStraightLine;

namespace waferscope::ui {

// The jobs of a schedule over time (QCustomPlot): a row per job, its run as a bar in its colour
// and its wait from submission to start as a pale one, and above them a queue lane whose height
// is how many jobs wait. Time is in hours (or minutes, or seconds, as the makespan reads best).
// Clicking places the cursor, which the Cluster dock's tiles follow. GUI thread.
class ClusterGantt : public QWidget {
    Q_OBJECT
public:
    explicit ClusterGantt(QWidget* parent = nullptr);

    void setSchedule(std::shared_ptr<const core::cluster::ClusterResult> result);
    void setCursor(double seconds);
    QCustomPlot* plot() const { return m_plot; }
    // Seconds per unit of the time axis (3600, 60 or 1).
    double secondsPerUnit() const { return m_unit; }

Q_SIGNALS:
    void timeSelected(double seconds);

private:
    QCustomPlot* m_plot;
    QCPItemStraightLine* m_cursor;
    std::vector<QCPAbstractItem*> m_bars; // the plot's items of the schedule shown
    std::shared_ptr<const core::cluster::ClusterResult> m_result;
    double m_unit = 3600.0;
};

} // namespace waferscope::ui
