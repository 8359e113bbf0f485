#pragma once

#include "core/fabric/kernels.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

namespace waferscope::ui {

// Runs one region's kernel on the cycle-level fabric (core::fabric::runKernel) off the GUI
// thread. A newer request or cancel() stops the running one within a few hundred cycles; only
// the newest request's result is delivered.
class KernelRunController : public QObject {
    Q_OBJECT
public:
    explicit KernelRunController(QObject* parent = nullptr);
    ~KernelRunController() override;

    int run(const core::fabric::KernelConfig& config);
    void cancel();
    bool running() const { return m_running; }

Q_SIGNALS:
    void finished(int jobId, core::fabric::KernelResult result);
    void failed(int jobId, const QString& message);

private:
    int m_latestJob = 0;
    bool m_running = false;
    std::shared_ptr<std::atomic<bool>> m_cancel; // of the newest job
};

} // namespace waferscope::ui
