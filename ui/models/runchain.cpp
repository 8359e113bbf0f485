#include "ui/models/runchain.h"

#include "ui/models/jobrunner.h"
#include "ui/models/optionnames.h"

#include "core/cluster/jobsfile.h"
#include "core/common/textfile.h"
#include "core/common/units.h"
#include "core/model/modelloader.h"

#include <QCoreApplication>

#include <algorithm>

namespace waferscope::ui {

namespace {

QString tr(const char* text)
{
    return QCoreApplication::translate("Document", text);
}

// The cluster sizes a sweep covers: powers of two up to the generation's largest cluster (or
// the global batch, when that is smaller: each system needs a sample), that limit, and `current`.
std::vector<int> sweepCounts(const core::SystemSpec& system, int current, std::int64_t globalBatch)
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

} // namespace

LoadResult loadModelFile(const QString& path)
{
    // A FIFO or a device is refused by the read below, located.
    if (const core::Expected<std::string> head = core::readTextPrefix(path.toStdString(), 64 * 1024, "params file");
        head && core::cluster::isJobsFileText(*head))
        return { nullptr, {}, true };
    core::Expected<core::LoadedModelFile> file = core::loadModelFile(path.toStdString());
    if (!file)
        return { nullptr, QString::fromStdString(file.error().format()) };
    auto model = std::make_shared<LoadedModel>();
    model->path = path;
    model->bytes = std::move(file->bytes);
    model->graph = std::make_shared<const core::ModelGraph>(std::move(file->graph));
    return { std::move(model), {} };
}

RunOutcome runPlan(const RunRequest& request, const JobContext& context)
{
    const core::ModelGraph& graph = *request.graph;
    const core::SystemSpec& system = request.system;
    core::Expected<core::engine::RunResult> result
        = core::engine::run(*request.plan, graph, system, request.options, request.calibration);
    RunOutcome outcome;
    RunState* state = outcome.state.get();
    state->options = request.options;
    if (!result) {
        outcome.error = QString::fromStdString(result.error().message);
        return outcome;
    }
    state->run = std::make_shared<const core::engine::RunResult>(std::move(result).value());
    auto frames = std::make_shared<const core::engine::FrameSource>(*request.plan, graph, system, *state->run);
    state->utilization = frames->utilization(request.utilizationBins);
    // Frames of hundreds of wafers would not fit in memory: the run stands, without them.
    if (const std::optional<core::Diagnostic> noFrames = core::engine::checkFrameMemory(*frames, system))
        state->noFrames = QString::fromStdString(noFrames->message);
    else
        state->frames = std::move(frames);
    context.progress(0.5);
    if (request.options.mode == core::engine::RunMode::Inference || context.cancelled())
        return outcome;
    core::engine::ScalingOptions scaling;
    scaling.cancelled = [context] { return context.cancelled(); };
    scaling.progress = [context](int done, int total) { context.progress(0.5 + 0.5 * done / total); };
    scaling.numCsx = sweepCounts(system, request.numSystems, graph.config.batchSize);
    scaling.mode = request.options.mode;
    core::Expected<core::engine::ScalingSweep> sweep = core::engine::scale(graph, system, scaling, request.calibration);
    if (sweep)
        state->sweep = std::make_shared<const core::engine::ScalingSweep>(std::move(sweep).value());
    else
        state->sweepError = QString::fromStdString(sweep.error().message);
    return outcome;
}

QString loadSummary(const QString& path, const core::ModelGraph& graph)
{
    return tr("%1: loaded %2 (%3, %4 parameters, %5 ops)")
        .arg(path, QString::fromStdString(graph.config.name), QString::fromLatin1(core::toString(graph.config.family)),
            QString::fromStdString(core::formatCount(double(graph.totalParams))))
        .arg(graph.ops.size());
}

int wafersShown(const core::ExecutionPlan& plan)
{
    int wafers = 1;
    for (const core::Region& region : plan.regions)
        wafers = std::max(wafers, region.system + 1);
    return wafers;
}

QString planSummary(const core::ExecutionPlan& plan, const QString& model, const core::SystemSpec& system)
{
    const int wafers = wafersShown(plan);
    QString summary = tr("compiled %1 for %2: %3, %4 regions on %5, PEs used %6%")
                          .arg(model, QString::fromStdString(system.displayName), executionModeLabel(plan.mode))
                          .arg(plan.regions.size())
                          .arg(wafers == 1 ? tr("one wafer") : tr("%1 wafers").arg(wafers))
                          .arg(100.0 * plan.peUtilization, 0, 'f', 1);
    if (plan.mode != core::ExecutionMode::WeightStreaming)
        summary += tr(", load imbalance %1").arg(plan.loadImbalance, 0, 'f', 3);
    return summary;
}

QString runSummary(const core::engine::Metrics& metrics, const QString& model, const core::SystemSpec& system)
{
    if (metrics.mode == core::engine::RunMode::Inference)
        return tr("ran %1: %2 tokens/s per user, first token after %3 ms, MFU %4%")
            .arg(model)
            .arg(metrics.tokensPerS, 0, 'f', 1)
            .arg(metrics.timeToFirstTokenS * 1e3, 0, 'f', 2)
            .arg(100.0 * metrics.mfu, 0, 'f', 2);
    return tr("ran %1 on %2 x %3: step %4 ms, %5 samples/s, MFU %6%, bound by %7")
        .arg(model)
        .arg(metrics.numSystems)
        .arg(QString::fromStdString(system.displayName))
        .arg(metrics.stepTimeS * 1e3, 0, 'f', 2)
        .arg(metrics.samplesPerS, 0, 'f', 1)
        .arg(100.0 * metrics.mfu, 0, 'f', 1)
        .arg(QString::fromLatin1(core::toString(metrics.bottleneck)));
}

QString runIdleState(
    const core::engine::Metrics& metrics, const core::SystemSpec& system, core::ExecutionMode execution)
{
    if (metrics.mode == core::engine::RunMode::Inference)
        return tr("%1 tokens/s per user on %2 wafer(s)").arg(metrics.tokensPerS, 0, 'f', 0).arg(metrics.numSystems);
    return tr("%1 samples/s on %2 x %3, %4")
        .arg(metrics.samplesPerS, 0, 'f', 0)
        .arg(metrics.numSystems)
        .arg(QString::fromStdString(system.displayName), executionModeLabel(execution));
}

} // namespace waferscope::ui
