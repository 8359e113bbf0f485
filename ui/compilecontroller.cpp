#include "ui/compilecontroller.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>
#include <QThreadPool>

namespace waferscope::ui {

CompileController::CompileController(QObject* parent)
    : QObject(parent)
{
}

int CompileController::compile(
    std::shared_ptr<const core::ModelGraph> graph, const core::SystemSpec& system, const core::CompileOptions& options)
{
    const int jobId = ++m_latestJob;
    QPointer<CompileController> self(this);
    QThreadPool::globalInstance()->start([self, jobId, graph = std::move(graph), system, options] {
        core::Expected<core::ExecutionPlan> result = core::compile(*graph, system, options);
        std::shared_ptr<const core::ExecutionPlan> plan;
        QString message;
        if (result)
            plan = std::make_shared<const core::ExecutionPlan>(std::move(result).value());
        else
            message = QString::fromStdString(result.error().message);
        // QPointer is only read on the GUI thread, inside the queued call.
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, jobId, plan, message] {
                if (!self || jobId != self->m_latestJob)
                    return;
                if (plan)
                    Q_EMIT self->compiled(jobId, plan);
                else
                    Q_EMIT self->failed(jobId, message);
            },
            Qt::QueuedConnection);
    });
    return jobId;
}

} // namespace waferscope::ui
