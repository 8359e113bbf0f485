#include "ui/models/runchain.h"

#include "ui/models/jobrunner.h"
#include "ui/models/optionnames.h"

#include "core/cluster/jobsfile.h"
#include "core/common/textfile.h"
#include "core/common/units.h"
#include "core/model/modelloader.h"
#include "core/study/study.h"

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
    return { makeLoadedModel(path, std::move(file).value()), {} };
}

std::shared_ptr<const LoadedModel> makeLoadedModel(const QString& path, core::LoadedModelFile file)
{
    auto model = std::make_shared<LoadedModel>();
    model->path = path;
    model->file = std::make_shared<const core::LoadedModelFile>(std::move(file));
    model->graph = std::shared_ptr<const core::ModelGraph>(model->file, &model->file->graph);
    return model;
}

core::study::StudySpec studyOf(const RunRequest& request)
{
    core::study::StudySpec spec;
    spec.model = request.model->file;
    spec.system = request.system;
    spec.compile = request.compile;
    spec.run = request.options;
    spec.calibration = request.calibration;
    spec.plan = request.plan;
    return spec;
}

core::study::StudyControl studyControl(const JobContext& context, double from, double span)
{
    core::study::StudyControl control;
    control.cancelFlag = context.cancelFlag();
    control.progress
        = [context, from, span](const core::study::StudyProgress& at) { context.progress(from + span * at.fraction); };
    return control;
}

CompileOutcome compilePlan(const RunRequest& request, const JobContext& context)
{
    const core::LoadedModelFile& model = *request.model->file;
    core::engine::RunOptions run = request.options;
    run.cancelled = [context] { return context.cancelled(); };
    core::Expected<core::ExecutionPlan> plan = core::study::compileStudyPlan(
        model.graph, model.path, request.system, request.compile, request.calibration, run, "compile");
    if (plan)
        return { std::make_shared<const core::ExecutionPlan>(std::move(plan).value()), {} };
    CompileOutcome refused;
    refused.cannotMap = plan.error().kind == core::Diagnostic::Kind::CannotMap;
    std::string reason = plan.error().message;
    const std::string said = "cannot map " + model.path + " onto " + request.system.displayName + ": ";
    if (refused.cannotMap && reason.starts_with(said))
        reason.erase(0, said.size());
    refused.error = QString::fromStdString(reason);
    return refused;
}

RunOutcome runPlan(const RunRequest& request, const JobContext& context)
{
    core::study::StudySpec spec = studyOf(request);
    spec.frames = true;
    core::Expected<core::study::StudyOutcome> ran = core::study::runStudy(spec, studyControl(context, 0.0, 0.5));
    RunOutcome outcome;
    RunState* state = outcome.state.get();
    state->options = request.options;
    if (!ran) {
        outcome.error = QString::fromStdString(ran.error().message);
        return outcome;
    }
    state->run = ran->ran;
    state->utilization = ran->frames->utilization(request.utilizationBins);
    // Frames of hundreds of wafers would not fit in memory: the run stands, without them.
    if (const std::optional<core::Diagnostic> noFrames = core::engine::checkFrameMemory(*ran->frames, request.system))
        state->noFrames = QString::fromStdString(noFrames->message);
    else
        state->frames = ran->frames;
    if (request.options.mode == core::engine::RunMode::Inference || context.cancelled())
        return outcome;
    // The sweep: a study from the run just made, which it does not make again.
    spec.frames = false;
    spec.ran = ran->ran;
    spec.scalingCounts = sweepCounts(request.system, request.numSystems, request.model->graph->config.batchSize);
    core::Expected<core::study::StudyOutcome> swept = core::study::runStudy(spec, studyControl(context, 0.5, 0.5));
    if (swept)
        state->sweep = swept->scaling;
    else
        state->sweepError = QString::fromStdString(swept.error().message);
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

QString baselineLabel(const QString& model, const core::engine::Metrics& metrics, const core::SystemSpec& system,
    core::ExecutionMode mode)
{
    return tr("%1 on %2 x %3, %4")
        .arg(model)
        .arg(metrics.numSystems)
        .arg(QString::fromStdString(system.displayName), executionModeLabel(mode));
}

} // namespace waferscope::ui
