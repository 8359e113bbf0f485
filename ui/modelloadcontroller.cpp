#include "ui/modelloadcontroller.h"

#include "core/model/modelloader.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>
#include <QThreadPool>

namespace waferscope::ui {

ModelLoadController::ModelLoadController(QObject* parent)
    : QObject(parent)
{
}

int ModelLoadController::load(const QString& path)
{
    const int jobId = ++m_latestJob;
    QPointer<ModelLoadController> self(this);
    QThreadPool::globalInstance()->start([self, jobId, path, pathText = path.toStdString()] {
        core::Expected<core::ModelGraph> result = core::loadModel(pathText);
        std::shared_ptr<const core::ModelGraph> graph;
        QString message;
        if (result)
            graph = std::make_shared<const core::ModelGraph>(std::move(result).value());
        else
            message = QString::fromStdString(result.error().format());
        // QPointer is only read on the GUI thread, inside the queued call.
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, jobId, path, graph, message] {
                if (!self || jobId != self->m_latestJob)
                    return; // controller gone or a newer file was requested
                if (graph)
                    Q_EMIT self->loaded(jobId, path, graph);
                else
                    Q_EMIT self->failed(jobId, path, message);
            },
            Qt::QueuedConnection);
    });
    return jobId;
}

} // namespace waferscope::ui
