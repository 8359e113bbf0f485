#include "ui/models/jobrunner.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>
#include <QThreadPool>

namespace waferscope::ui {

JobRunner::JobRunner(QObject* parent)
    : QObject(parent)
{
}

JobRunner::~JobRunner()
{
    m_context.m_cancelled->store(true);
}

void JobRunner::cancel()
{
    ++m_latestJob;
    m_context.m_cancelled->store(true);
    setBusy(false);
}

void JobRunner::requestStop()
{
    if (!isBusy())
        return;
    m_context.m_cancelled->store(true);
    m_stopping = true;
    Q_EMIT busyChanged(false);
}

void JobRunner::setBusy(bool busy)
{
    const bool before = isBusy();
    m_busy = busy;
    m_stopping = false;
    if (isBusy() != before)
        Q_EMIT busyChanged(isBusy());
}

int JobRunner::launch(Task task)
{
    cancel(); // a newer job replaces the one in flight
    const int jobId = m_latestJob;
    m_context = JobContext();
    QPointer<JobRunner> self(this);
    // A job still wanted: the runner exists and this is its newest job. Read on the GUI thread only.
    const auto wanted = [self, jobId] { return self && jobId == self->m_latestJob; };
    m_context.m_progress = [self, wanted, jobId](double fraction) {
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, wanted, jobId, fraction] {
                if (wanted())
                    Q_EMIT self->progress(jobId, fraction);
            },
            Qt::QueuedConnection);
    };
    setBusy(true);
    QThreadPool::globalInstance()->start([wanted, self, jobId, task = std::move(task), context = m_context] {
        std::function<void()> deliver = task(jobId, context);
        // The QPointer is read on the GUI thread only, inside the queued call.
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, wanted, deliver = std::move(deliver)] {
                if (!wanted())
                    return;
                self->setBusy(false);
                deliver();
            },
            Qt::QueuedConnection);
    });
    return jobId;
}

} // namespace waferscope::ui
