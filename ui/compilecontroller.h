#pragma once

#include "core/compiler/compiler.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"

#include <QObject>
#include <QString>

#include <memory>

namespace waferscope::ui {

// Compiles a model for a system off the GUI thread (core::compile on the global thread pool);
// the plan comes back as a queued call. Only the newest request's result is delivered, so
// switching system or mode while a compile runs never shows a stale placement.
class CompileController : public QObject {
    Q_OBJECT
public:
    explicit CompileController(QObject* parent = nullptr);

    // Starts compiling; returns the job id that compiled()/failed() will carry.
    int compile(std::shared_ptr<const core::ModelGraph> graph, const core::SystemSpec& system,
        const core::CompileOptions& options);
    // Drops any result still on its way (the model or system it was for is gone).
    void cancel() { ++m_latestJob; }

Q_SIGNALS:
    void compiled(int jobId, std::shared_ptr<const waferscope::core::ExecutionPlan> plan);
    // `message` says why the model cannot be mapped (exit 3 in the CLI).
    void failed(int jobId, const QString& message);

private:
    int m_latestJob = 0;
};

} // namespace waferscope::ui
