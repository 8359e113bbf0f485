#pragma once

#include "core/model/modelgraph.h"

#include <QObject>
#include <QString>

#include <memory>

namespace waferscope::ui {

// Loads model files off the GUI thread. Lives on the GUI thread; each load() runs on the
// global thread pool and its result comes back as a queued call. Only the newest request's
// result is delivered: a slow file finishing after a newer one was asked for is dropped.
class ModelLoadController : public QObject {
    Q_OBJECT
public:
    explicit ModelLoadController(QObject* parent = nullptr);

    // Starts reading `path`; returns the job id that loaded()/failed() will carry.
    int load(const QString& path);
    void cancel() { ++m_latestJob; } // the running load's result is dropped

Q_SIGNALS:
    void loaded(int jobId, const QString& path, std::shared_ptr<const waferscope::core::ModelGraph> graph);
    // `message` is the located diagnostic: FILE:LINE:COL: error: ...
    void failed(int jobId, const QString& path, const QString& message);

private:
    int m_latestJob = 0; // id of the newest request; older results are dropped
};

} // namespace waferscope::ui
