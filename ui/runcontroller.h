#pragma once

#include "core/compiler/plan.h"
#include "core/engine/engine.h"
#include "core/engine/framesource.h"
#include "core/engine/scaling.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

namespace waferscope::ui {

// What one engine job produced: the run of the compiled plan and, for training, the scaling
// sweep over the generation's cluster sizes.
struct RunOutcome {
    std::shared_ptr<const core::engine::RunResult> run;
    std::shared_ptr<const core::engine::FrameSource> frames; // the run's frames, for the stepper
    core::engine::UtilizationSeries utilization; // over the run, kUtilizationBins bins
    std::shared_ptr<const core::engine::ScalingSweep> sweep; // null for inference
    QString sweepError; // why there is no sweep, when there is none for a training run
};

// Runs the engine off the GUI thread (global thread pool) and delivers the newest job's
// outcome on the GUI thread; older results are dropped.
class RunController : public QObject {
    Q_OBJECT
public:
    explicit RunController(QObject* parent = nullptr);

    int run(std::shared_ptr<const core::ModelGraph> graph, std::shared_ptr<const core::ExecutionPlan> plan,
        const core::SystemSpec& system, const core::engine::RunOptions& options, int numCsx);
    // Drops the running job's result at once and stops its work at the next run of its sweep.
    void cancel();
    static constexpr int kUtilizationBins = 400;

    // The cluster sizes a sweep covers for a generation: powers of two up to its largest cluster
    // (or the global batch, when that is smaller: each system needs a sample), that limit itself,
    // and `current`.
    static std::vector<int> sweepCounts(const core::SystemSpec& system, int current, std::int64_t globalBatch);

Q_SIGNALS:
    void finished(int jobId, waferscope::ui::RunOutcome outcome);
    void failed(int jobId, const QString& message);

private:
    int m_latestJob = 0;
    std::shared_ptr<std::atomic<bool>> m_cancel; // of the newest job
};

} // namespace waferscope::ui
