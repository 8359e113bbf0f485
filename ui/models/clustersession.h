#pragma once

#include "core/cluster/cluster.h"

#include <QObject>
#include <QString>

#include <memory>
#include <mutex>
#include <optional>

namespace waferscope::ui {

class JobRunner;

// A jobs file scheduled on its shared cluster, without a widget: the jobs as edited, the
// schedule, and the engine timings kept across reschedules, with the worker that makes them.
// Every change (a file, a num_csx, the policy, sizing) reschedules at once on a JobRunner lane,
// newest only. Lives on the GUI thread; every signal is emitted there. The timing cache is shared
// with the lane's worker under its mutex (one schedule at a time uses it).
class ClusterSession : public QObject {
    Q_OBJECT
public:
    explicit ClusterSession(QObject* parent = nullptr);
    ~ClusterSession() override;

    // Reads and schedules a jobs file off the GUI thread; on failure the session keeps what it
    // had and `failed` says why.
    void open(const QString& path);
    // Writes the jobs as edited (File > Save jobs as), params paths relative to the new place.
    // Returns the error text, or an empty string.
    QString saveJobsAs(const QString& path) const;
    bool hasJobs() const { return m_file.has_value(); }
    // A job's allocation changed: rescheduled at once (newest only). False for a count outside
    // 1 to the cluster's systems or no such job.
    bool setNumCsx(int job, int numCsx);
    void setPolicy(core::cluster::Policy policy);
    core::cluster::Policy policy() const { return m_policy; }
    // Inference jobs with tokens_per_s_per_user get the fewest replicas that give each user that
    // rate (`cluster --size_inference`).
    void setSizeInference(bool on);
    bool sizeInference() const { return m_sizeInference; }
    bool isBusy() const;
    // Asks for a job's model on its allocation (jobActivated); false when there is no such job.
    bool activateJob(int job);

    std::shared_ptr<const core::cluster::ClusterResult> schedule() const { return m_result; }
    // The jobs as scheduled (edits not yet scheduled are not in them).
    const std::optional<core::cluster::JobsFile>& jobs() const { return m_file; }
    QString summary() const; // the schedule's figures, or empty
    QString busyText() const { return m_busyText; } // "Scheduling FILE …" while a schedule is made
    QString lastError() const { return m_lastError; } // why the newest request failed, or empty

Q_SIGNALS:
    void started(); // a schedule is being made: busyText() says of what
    // The newest request's progress: sizing inference replicas is the first half when asked
    // for, timing the jobs the rest.
    void progressed(int percent);
    void failed(const QString& message); // located, for Messages; scheduled() follows
    void scheduled(); // the newest request ended: schedule() is its (or, on failure, the last)
    // A job's model to load with its allocation.
    void jobActivated(const QString& paramsPath, const QString& system, int numCsx, core::RunMode mode);

private:
    struct Outcome {
        std::optional<core::cluster::JobsFile> file; // the jobs scheduled (read here, or as edited)
        std::shared_ptr<const core::cluster::ClusterResult> result;
        QString error;
    };
    // Engine timings, shared by the worker's runs (one at a time) across reschedules.
    struct Timings {
        std::mutex mutex;
        core::cluster::TimingCache cache;
    };
    void reschedule(std::optional<QString> path);
    void finish(Outcome outcome);

    JobRunner* m_runner;
    std::optional<core::cluster::JobsFile> m_file; // the jobs as scheduled
    std::optional<core::cluster::JobsFile> m_requested; // with edits not yet scheduled
    std::optional<QString> m_pending; // a file being opened
    std::shared_ptr<const core::cluster::ClusterResult> m_result;
    core::cluster::Policy m_policy = core::cluster::Policy::Backfill;
    bool m_sizeInference = false;
    std::shared_ptr<Timings> m_timings;
    QString m_busyText;
    QString m_lastError;
};

} // namespace waferscope::ui
