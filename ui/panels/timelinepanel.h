#pragma once

#include "core/compiler/plan.h"
#include "core/engine/engine.h"

#include <QColor>
#include <QString>
#include <QWidget>

#include <memory>
#include <vector>

class QCustomPlot;
class QCPItemStraightLine;
class QLabel;

namespace waferscope::ui {

class TimelineBars;

// The run's timeline (QCustomPlot): one lane per resource (MemoryX, SwarmX, a representative
// CS-X's I/O and wafer; the wafers and wafer links of an inference plan; the stages of a
// pipeline), a bar per event coloured by phase, zoom and drag on the time axis, a tooltip with
// the event's bytes and FLOPs, and a time cursor.
class TimelinePanel : public QWidget {
    Q_OBJECT
public:
    explicit TimelinePanel(QWidget* parent = nullptr);

    void setRun(std::shared_ptr<const core::engine::RunResult> run, std::shared_ptr<const core::ExecutionPlan> plan);
    void clear(const QString& message);
    void setCursorTime(double seconds);
    double cursorTime() const; // seconds (0 while hidden)

    // For tests and tooltips: the lane names top to bottom, and the event under a point of the
    // plot (index into the timeline, or -1).
    QStringList laneNames() const { return m_laneNames; }
    int eventAt(const QPointF& pixel) const;
    QCustomPlot* plot() const { return m_plot; }
    static QColor phaseColor(core::engine::Phase phase);

Q_SIGNALS:
    void timeSelected(double seconds);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void labelLanes(); // as many lane labels as fit the plot's height

    QCustomPlot* m_plot;
    TimelineBars* m_bars;
    QCPItemStraightLine* m_cursor;
    QLabel* m_summary;
    QStringList m_laneNames;
    std::vector<int> m_laneOfEvent; // per timeline event
    std::shared_ptr<const core::engine::RunResult> m_run;
};

} // namespace waferscope::ui
