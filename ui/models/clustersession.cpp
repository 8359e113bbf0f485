#include "ui/models/clustersession.h"

#include "core/common/units.h"
#include "core/report/atomicfile.h"
#include "ui/models/jobrunner.h"

#include <string_view>

namespace waferscope::ui {

namespace {

bool sameAllocations(const core::cluster::JobsFile& a, const core::cluster::JobsFile& b)
{
    if (a.jobs.size() != b.jobs.size())
        return false;
    for (std::size_t j = 0; j < a.jobs.size(); ++j)
        if (a.jobs[j].numCsx != b.jobs[j].numCsx)
            return false;
    return true;
}

QString clock(const std::optional<double>& seconds)
{
    return seconds ? QString::fromStdString(core::formatClock(*seconds)) : QStringLiteral("-");
}

} // namespace

ClusterSession::ClusterSession(QObject* parent)
    : QObject(parent)
    , m_runner(new JobRunner(this))
    , m_timings(std::make_shared<Timings>())
{
    connect(m_runner, &JobRunner::progress, this,
        [this](int, double fraction) { Q_EMIT progressed(int(100.0 * fraction)); });
}

ClusterSession::~ClusterSession() = default;

bool ClusterSession::isBusy() const
{
    return m_runner->isBusy();
}

void ClusterSession::open(const QString& path)
{
    // A new file: timings start afresh (its params files may have changed on disk).
    m_timings = std::make_shared<Timings>();
    m_pending = path;
    m_requested.reset();
    reschedule(path);
}

void ClusterSession::setPolicy(core::cluster::Policy policy)
{
    m_policy = policy;
    if (m_file)
        reschedule(std::nullopt);
}

void ClusterSession::setSizeInference(bool on)
{
    m_sizeInference = on;
    if (m_file || m_pending)
        reschedule(std::nullopt);
}

bool ClusterSession::setNumCsx(int job, int numCsx)
{
    if (!m_file || job < 0 || std::size_t(job) >= m_file->jobs.size() || numCsx < 1 || numCsx > m_file->cluster.systems)
        return false;
    if (!m_requested)
        m_requested = m_file;
    m_requested->jobs[std::size_t(job)].numCsx = numCsx;
    reschedule(std::nullopt);
    return true;
}

bool ClusterSession::activateJob(int job)
{
    if (!m_file || job < 0 || std::size_t(job) >= m_file->jobs.size())
        return false;
    const core::cluster::JobSpec& spec = m_file->jobs[std::size_t(job)];
    Q_EMIT jobActivated(QString::fromStdString(spec.paramsPath), QString::fromStdString(m_file->cluster.system),
        spec.numCsx, spec.mode);
    return true;
}

void ClusterSession::reschedule(std::optional<QString> path)
{
    // A change while a file is being opened applies to that file.
    if (!path && m_pending)
        path = m_pending;
    const std::optional<core::cluster::JobsFile> edited = path ? std::nullopt : m_requested ? m_requested : m_file;
    const std::string file = path ? path->toStdString() : std::string();
    core::cluster::ClusterOptions options;
    options.policy = m_policy;
    options.sizeInference = m_sizeInference;
    m_busyText = path ? tr("Scheduling %1 …").arg(*path) : tr("Rescheduling …");
    Q_EMIT started();
    m_runner->start<Outcome>(
        [edited, file, options, timings = m_timings](const JobContext& context) mutable {
            Outcome outcome;
            std::optional<core::cluster::JobsFile> jobs = edited;
            if (!jobs) {
                core::Expected<core::cluster::JobsFile> read = core::cluster::readJobsFile(file);
                if (!read) {
                    outcome.error = QString::fromStdString(read.error().format());
                    return outcome;
                }
                jobs = std::move(read).value();
            }
            outcome.file = jobs;
            options.cancelled = [context] { return context.cancelled(); };
            // Sizing the first half, timing the jobs the second (all of it without sizing); a
            // percent at a time.
            options.progress
                = [context, sized = false, percent = -1](const core::cluster::ClusterProgress& at) mutable {
                      const double share = at.total > 0 ? double(at.done) / double(at.total) : 1.0;
                      const std::string_view phase = at.phase;
                      sized = sized || phase == "sizing";
                      const double fraction = phase == "sizing" ? 0.5 * share
                          : phase == "timing"                   ? (sized ? 0.5 + 0.5 * share : share)
                                                                : 1.0;
                      if (int(100.0 * fraction) != percent) {
                          percent = int(100.0 * fraction);
                          context.progress(fraction);
                      }
                  };
            const std::lock_guard lock(timings->mutex);
            if (context.cancelled())
                return outcome; // superseded while it waited: dropped unseen
            core::Expected<core::cluster::ClusterResult> result
                = core::cluster::scheduleCluster(*jobs, options, timings->cache);
            if (!result)
                outcome.error = QString::fromStdString(result.error().format());
            else
                outcome.result = std::make_shared<const core::cluster::ClusterResult>(std::move(result).value());
            return outcome;
        },
        [this](int, Outcome outcome) { finish(std::move(outcome)); });
}

void ClusterSession::finish(Outcome outcome)
{
    m_pending.reset();
    m_lastError = outcome.error;
    if (!outcome.error.isEmpty()) {
        m_requested.reset(); // the edits that failed are dropped: what is scheduled stays
        Q_EMIT failed(outcome.error);
        Q_EMIT scheduled();
        return;
    }
    // The jobs as scheduled; edits made since are still to come.
    m_file = std::move(outcome.file);
    if (m_requested && sameAllocations(*m_requested, *m_file))
        m_requested.reset();
    m_result = std::move(outcome.result);
    Q_EMIT scheduled();
}

QString ClusterSession::summary() const
{
    if (!m_file || !m_result)
        return {};
    int runs = 0;
    for (const core::cluster::JobResult& job : m_result->jobs)
        runs += job.startS ? 1 : 0;
    return tr("%1: %2 x %3, MemoryX %4. %5 of %6 jobs run; makespan %7, utilization %8.")
        .arg(QString::fromStdString(m_file->path))
        .arg(m_result->systems)
        .arg(QString::fromStdString(m_result->system))
        .arg(QString::fromStdString(core::formatBytes(m_result->memoryxBytes)))
        .arg(runs)
        .arg(m_result->jobs.size())
        .arg(clock(m_result->makespanS))
        .arg(m_result->utilization ? QStringLiteral("%1 %").arg(100.0 * *m_result->utilization, 0, 'f', 1)
                                   : QStringLiteral("-"));
}

QString ClusterSession::saveJobsAs(const QString& path) const
{
    if (!m_file)
        return tr("%1: error: there are no jobs to save").arg(path);
    const std::string target = path.toStdString();
    if (const std::optional<core::Diagnostic> error
        = core::report::writeFileAtomically(target, core::cluster::jobsFileText(*m_file, target)))
        return QString::fromStdString(error->format());
    return {};
}

} // namespace waferscope::ui
