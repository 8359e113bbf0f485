#pragma once

#include <QString>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QSlider;
class QTableWidget;

namespace waferscope::ui {

class ClusterGantt;
class ClusterSession;
class ClusterTiles;

// The Cluster dock, the view of a ClusterSession (the jobs file, its schedule and its worker);
// the main window only routes jobs files to the session and loads a clicked job into the other
// docks.
//
// Above: the file, the policy and the figures (makespan, utilization). Left: the systems as tiles
// coloured by job at the cursor's time, with a slider for the time. Right: the Gantt chart of the
// jobs with a queue lane, and the jobs table, whose num_csx cells are editable: an edit reschedules
// at once, newest only, on a worker. GUI thread.
class ClusterPanel : public QWidget {
    Q_OBJECT
public:
    explicit ClusterPanel(ClusterSession* session, QWidget* parent = nullptr);

    ClusterSession* session() const { return m_session; }
    void setTime(double seconds); // the cursor: tiles, Gantt and slider follow
    ClusterTiles* tiles() const { return m_tiles; }
    ClusterGantt* gantt() const { return m_gantt; }
    QTableWidget* table() const { return m_table; }
    // The line above the tiles as shown: the session's summary, or a schedule's progress while
    // it is made ("Scheduling FILE … 42 %").
    QString shownSummary() const;

Q_SIGNALS:
    // An edit the session refused (a num_csx out of range), for Messages.
    void editRefused(const QString& message);

private:
    void showSchedule();
    void fillTable();
    void onCellChanged(int row, int column);

    ClusterSession* m_session; // not owned
    QLabel* m_summary;
    QComboBox* m_policyBox;
    QCheckBox* m_sizeBox;
    ClusterTiles* m_tiles;
    QSlider* m_slider;
    QLabel* m_timeLabel;
    ClusterGantt* m_gantt;
    QTableWidget* m_table;
    bool m_filling = false; // the table is being filled: its edits are not the user's
};

} // namespace waferscope::ui
