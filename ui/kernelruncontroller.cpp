#include "ui/kernelruncontroller.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>
#include <QThread>
#include <QThreadPool>

namespace waferscope::ui {

KernelRunController::KernelRunController(QObject* parent)
    : QObject(parent)
{
}

KernelRunController::~KernelRunController()
{
    cancel();
}

void KernelRunController::cancel()
{
    if (m_cancel)
        m_cancel->store(true);
    ++m_latestJob;
    m_running = false;
}

int KernelRunController::run(const core::fabric::KernelConfig& request)
{
    cancel();
    const int jobId = m_latestJob;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    m_running = true;
    core::fabric::KernelConfig config = request;
    config.threads = std::max(1, QThread::idealThreadCount());
    QPointer<KernelRunController> self(this);
    QThreadPool::globalInstance()->start([self, jobId, config, cancelled = m_cancel] {
        core::Expected<core::fabric::KernelResult> result = core::fabric::runKernel(
            config, [cancelled](const core::fabric::Fabric&) { return !cancelled->load(); }, 256);
        QString message;
        core::fabric::KernelResult value;
        if (result)
            value = *result;
        else
            message = QString::fromStdString(result.error().format());
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, jobId, ok = result.hasValue(), value, message] {
                if (!self || jobId != self->m_latestJob)
                    return;
                self->m_running = false;
                if (ok)
                    Q_EMIT self->finished(jobId, value);
                else
                    Q_EMIT self->failed(jobId, message);
            },
            Qt::QueuedConnection);
    });
    return jobId;
}

} // namespace waferscope::ui
