#pragma once

#include "core/cluster/cluster.h"
#include "ui/jobrunner.h"

#include <QString>
#include <QWidget>

#include <memory>
#include <mutex>
#include <optional>

class QCheckBox;
class QComboBox;
class QLabel;
class QSlider;
class QTableWidget;

namespace waferscope::ui {

class ClusterGantt;
class ClusterTiles;

// The Cluster dock: a jobs file scheduled on its shared cluster. It owns its state (the jobs as
// edited, the schedule, the engine timings kept across reschedules) and its worker; the main
// window only routes jobs files to it and loads a clicked job into the other docks.
//
// Above: the file, the policy and the figures (makespan, utilization). Left: the systems as tiles
// coloured by job at the cursor's time, with a slider for the time. Right: the Gantt chart of the
// jobs with a queue lane, and the jobs table, whose num_csx cells are editable: an edit reschedules
// at once, newest only, on a worker. GUI thread.
class ClusterPanel : public QWidget {
    Q_OBJECT
public:
    explicit ClusterPanel(QWidget* parent = nullptr);

    // Reads and schedules a jobs file off the GUI thread; on failure the dock keeps what it had
    // and `failed` says why.
    void open(const QString& path);
    // Writes the jobs as edited (File > Save jobs as), params paths relative to the new place.
    // Returns the error text, or an empty string.
    QString saveJobsAs(const QString& path) const;
    bool hasJobs() const { return m_file.has_value(); }
    // A job's allocation changed: rescheduled at once (newest only). False for a count outside
    // 1 to the cluster's systems or no such job.
    bool setNumCsx(int job, int numCsx);
    void setPolicy(core::cluster::Policy policy);
    // Inference jobs with tokens_per_s_per_user get the fewest replicas that give each user that
    // rate (`cluster --size_inference`).
    void setSizeInference(bool on);
    bool isBusy() const { return m_runner->isBusy(); }

    std::shared_ptr<const core::cluster::ClusterResult> schedule() const { return m_result; }
    const std::optional<core::cluster::JobsFile>& jobs() const { return m_file; }
    void setTime(double seconds); // the cursor: tiles, Gantt and slider follow
    ClusterTiles* tiles() const { return m_tiles; }
    ClusterGantt* gantt() const { return m_gantt; }
    QTableWidget* table() const { return m_table; }
    QString summary() const;
    // The line above the tiles as shown: summary(), or a schedule's progress while it is made.
    QString shownSummary() const;

Q_SIGNALS:
    void scheduled(); // a schedule is on screen for the newest request
    void failed(const QString& message); // located, for Messages
    // The newest request's progress, as the summary shows it ("Scheduling FILE … 42 %"): sizing
    // inference replicas is the first half when asked for, timing the jobs the rest.
    void progressed(int percent);
    // A job clicked in the table: its model to load with its allocation.
    void jobActivated(const QString& paramsPath, const QString& system, int numCsx, core::RunMode mode);

private:
    struct Outcome {
        std::optional<core::cluster::JobsFile> file; // the jobs scheduled (read here, or as edited)
        std::shared_ptr<const core::cluster::ClusterResult> result;
        QString error;
    };
    void reschedule(std::optional<QString> path);
    void show(Outcome outcome);
    void fillTable();
    void onCellChanged(int row, int column);

    JobRunner* m_runner;
    std::optional<core::cluster::JobsFile> m_file; // the jobs as scheduled on screen
    std::optional<core::cluster::JobsFile> m_requested; // with edits not yet scheduled
    std::optional<QString> m_pending; // a file being opened
    std::shared_ptr<const core::cluster::ClusterResult> m_result;
    core::cluster::Policy m_policy = core::cluster::Policy::Backfill;
    bool m_sizeInference = false;
    // Engine timings, shared by the worker's runs (one at a time) across reschedules.
    struct Timings {
        std::mutex mutex;
        core::cluster::TimingCache cache;
    };
    std::shared_ptr<Timings> m_timings;
    QLabel* m_summary;
    QString m_busyText; // "Scheduling FILE …" while a schedule is made, before its progress
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
