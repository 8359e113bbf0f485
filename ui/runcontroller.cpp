#include "ui/runcontroller.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>
#include <QThreadPool>

#include <algorithm>

namespace waferscope::ui {

RunController::RunController(QObject* parent)
    : QObject(parent)
{
    qRegisterMetaType<waferscope::ui::RunOutcome>("waferscope::ui::RunOutcome");
}

std::vector<int> RunController::sweepCounts(const core::SystemSpec& system, int current, std::int64_t globalBatch)
{
    int limit = system.swarmx.supported ? std::max(1, system.swarmx.maxSystems) : 1;
    if (globalBatch > 0)
        limit = int(std::min<std::int64_t>(limit, globalBatch));
    std::vector<int> counts;
    for (int count = 1; count < limit; count *= 2)
        counts.push_back(count);
    counts.push_back(limit);
    if (current >= 1 && current <= limit)
        counts.push_back(current);
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    return counts;
}

void RunController::cancel()
{
    ++m_latestJob;
    if (m_cancel)
        m_cancel->store(true);
}

int RunController::run(std::shared_ptr<const core::ModelGraph> graph, std::shared_ptr<const core::ExecutionPlan> plan,
    const core::SystemSpec& system, const core::engine::RunOptions& options, int numCsx)
{
    cancel(); // a newer run replaces the one in flight
    const int jobId = m_latestJob;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    QPointer<RunController> self(this);
    QThreadPool::globalInstance()->start(
        [self, jobId, graph = std::move(graph), plan = std::move(plan), system, options, numCsx, cancelled = m_cancel] {
            RunOutcome outcome;
            QString message;
            core::Expected<core::engine::RunResult> result = core::engine::run(*plan, *graph, system, options);
            if (result) {
                outcome.run = std::make_shared<const core::engine::RunResult>(std::move(result).value());
                outcome.frames = std::make_shared<const core::engine::FrameSource>(*plan, *graph, system, *outcome.run);
                outcome.utilization = outcome.frames->utilization(kUtilizationBins);
                if (options.mode != core::engine::RunKind::Inference && !cancelled->load()) {
                    core::engine::ScalingOptions scaling;
                    scaling.cancelled = [cancelled] { return cancelled->load(); };
                    scaling.numCsx = sweepCounts(system, numCsx, graph->config.batchSize);
                    scaling.mode = options.mode;
                    core::Expected<core::engine::ScalingSweep> sweep = core::engine::scale(*graph, system, scaling);
                    if (sweep)
                        outcome.sweep = std::make_shared<const core::engine::ScalingSweep>(std::move(sweep).value());
                    else
                        outcome.sweepError = QString::fromStdString(sweep.error().message);
                }
            } else {
                message = QString::fromStdString(result.error().message);
            }
            QMetaObject::invokeMethod(
                QCoreApplication::instance(),
                [self, jobId, outcome, message] {
                    if (!self || jobId != self->m_latestJob)
                        return;
                    if (outcome.run)
                        Q_EMIT self->finished(jobId, outcome);
                    else
                        Q_EMIT self->failed(jobId, message);
                },
                Qt::QueuedConnection);
        });
    return jobId;
}

} // namespace waferscope::ui
