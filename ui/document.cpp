#include "ui/document.h"

#include "ui/jobrunner.h"
#include "ui/optionnames.h"
#include "ui/placementoverlay.h"
#include "ui/reportexporter.h"
#include "ui/tokenrun.h"

#include "core/cluster/jobsfile.h"
#include "core/common/textfile.h"
#include "core/common/units.h"
#include "core/hardware/clusterspec.h"
#include "core/model/graphjson.h"
#include "core/model/modelloader.h"
#include "core/report/atomicfile.h"
#include "core/report/chrometrace.h"

#include <QFileInfo>
#include <QThread>

#include <algorithm>

namespace waferscope::ui {

namespace {

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

// A model file read and built off the GUI thread: the model, or the located error, or word that
// the file is a jobs file (the Cluster dock's, not a model).
struct LoadResult {
    std::shared_ptr<const LoadedModel> model;
    QString error;
    bool jobsFile = false;
};

LoadResult loadModel(const QString& path)
{
    // Only a regular file's first bytes are looked at (a FIFO or a device is refused by the read
    // below, located); no YAML tree is built for the look.
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

} // namespace

Document::Document(std::vector<core::SystemSpec> systems, QObject* parent)
    : QObject(parent)
    , m_systems(std::move(systems))
    , m_loader(new JobRunner(this))
    , m_compiler(new JobRunner(this))
    , m_runner(new JobRunner(this))
    , m_kernelRunner(new JobRunner(this))
    , m_tokenRunner(new JobRunner(this))
    , m_exporter(new JobRunner(this))
{
    Q_ASSERT(!m_systems.empty());
    for (JobRunner* lane : { m_runner, m_tokenRunner })
        connect(lane, &JobRunner::progress, this, [this](int, double fraction) { Q_EMIT progress(fraction); });
    for (JobRunner* lane : { m_loader, m_compiler, m_runner, m_kernelRunner, m_tokenRunner, m_exporter })
        connect(lane, &JobRunner::busyChanged, this, [this](bool busy) {
            if (!busy && !isBusy())
                Q_EMIT busyChanged({}, m_idleState);
        });
}

Document::~Document() = default;

QString Document::modelName() const
{
    return m_model ? QString::fromStdString(m_model->graph->config.name) : QString();
}

void Document::setSystemIndex(std::size_t index)
{
    if (index >= m_systems.size() || index == m_systemIndex)
        return;
    m_systemIndex = index;
    m_numSystems = std::min(m_numSystems, maxSystems());
    settingChanged(); // the plan was placed for another wafer
}

bool Document::selectSystem(const QString& name)
{
    for (std::size_t i = 0; i < m_systems.size(); ++i)
        if (QString::fromStdString(m_systems[i].name) == name) {
            setSystemIndex(i);
            return true;
        }
    return false;
}

int Document::maxSystems() const
{
    return system().swarmx.supported ? system().swarmx.maxSystems : 1;
}

QString Document::setNumSystems(int numSystems)
{
    core::Expected<core::ClusterSpec> cluster = core::ClusterSpec::make(system(), numSystems);
    if (!cluster)
        return QString::fromStdString(cluster.error().message);
    if (numSystems != m_numSystems) {
        m_numSystems = numSystems;
        settingChanged();
    }
    return {};
}

void Document::setMode(core::RunMode mode)
{
    if (mode != m_mode) {
        m_mode = mode;
        settingChanged();
    }
}

void Document::setExecution(core::ExecutionChoice execution)
{
    if (execution != m_execution) {
        m_execution = execution;
        settingChanged();
    }
}

QString Document::setCalibration(const QString& nameOrFile)
{
    core::Expected<core::engine::Calibration> calibration = core::engine::resolveCalibration(nameOrFile.toStdString());
    if (!calibration)
        return QString::fromStdString(calibration.error().format());
    m_calibration = std::move(calibration).value();
    Q_EMIT info(tr("Software profile %1 (calibration %2)")
                    .arg(QString::fromStdString(m_calibration.profile), QString::fromStdString(m_calibration.version)));
    settingChanged();
    return {};
}

void Document::settingChanged()
{
    // The old plan and run go first, so no view draws them once more for the new settings.
    startChain();
    Q_EMIT settingsChanged();
}

bool Document::isBusy() const
{
    return m_loader->isBusy() || m_compiler->isBusy() || m_runner->isBusy() || m_tokenRunner->isBusy()
        || m_exporter->isBusy();
}

void Document::setIdle(const QString& state)
{
    m_idleState = state;
    if (!isBusy())
        Q_EMIT busyChanged({}, state);
}

void Document::cancel()
{
    if (!isBusy())
        return;
    const bool compiling = m_compiler->isBusy();
    const bool token = m_tokenRunner->isBusy();
    m_tokenRunner->cancel(); // its frames so far stay in the playback
    if (token)
        Q_EMIT tokenFinished();
    m_loader->cancel();
    m_compiler->cancel();
    m_runner->cancel();
    m_exporter->requestStop(); // it still says how it ended: reportExported, nothing replaced
    Q_EMIT info(tr("Cancelled; what is on screen stays as it was."));
    if (compiling)
        Q_EMIT planChanged(tr("The compile was cancelled; change a setting or open a file to compile again."));
    if (!m_run)
        Q_EMIT runChanged(tr("The run was cancelled."));
    setIdle(tr("cancelled"));
    Q_EMIT settled();
}

void Document::open(const QString& path)
{
    const QString name = QFileInfo(path).fileName();
    Q_EMIT loadStarted(path);
    m_loader->start<LoadResult>([path](const JobContext&) { return loadModel(path); },
        [this, path, name](int, LoadResult result) {
            if (result.jobsFile) {
                setIdle(m_idleState);
                Q_EMIT jobsFileOpened(path);
                return;
            }
            if (!result.model) {
                Q_EMIT error(result.error);
                Q_EMIT loadFailed(path, result.error);
                setIdle(m_model ? tr("%1 could not be loaded; this model stays").arg(name)
                                : tr("%1 could not be loaded").arg(name));
                Q_EMIT settled();
                return;
            }
            m_model = std::move(result.model);
            const core::ModelGraph& graph = *m_model->graph;
            Q_EMIT info(tr("%1: loaded %2 (%3, %4 parameters, %5 ops)")
                            .arg(path, modelName(), QString::fromLatin1(core::toString(graph.config.family)),
                                QString::fromStdString(core::formatCount(double(graph.totalParams))))
                            .arg(graph.ops.size()));
            for (const std::string& line : core::formatWarnings(graph.config))
                Q_EMIT warning(QString::fromStdString(line));
            // The old plan and run go with the old model; startChain() says so to the views.
            cancelChain();
            m_plan.reset();
            m_run.reset();
            Q_EMIT modelChanged();
            startChain();
        });
    Q_EMIT busyChanged(tr("loading %1").arg(name), {}); // once the lane is busy: see setIdle()
}

void Document::cancelChain()
{
    m_kernelRunner->cancel();
    m_tokenRunner->cancel();
    m_tokenRun.reset();
    m_compiler->cancel();
    m_runner->cancel();
}

void Document::dropPlanAndRun(const QString& reason)
{
    cancelChain();
    m_plan.reset();
    m_run.reset();
    Q_EMIT planChanged(reason);
    Q_EMIT runChanged(reason);
}

void Document::startChain()
{
    if (!m_model)
        return;
    const std::uint64_t generation = ++m_generations.current;
    m_generations.model = generation;
    core::CompileOptions options;
    options.mode = m_mode;
    options.execution = m_execution;
    options.numSystems = m_numSystems;
    dropPlanAndRun(tr("Compiling %1 for %2 (%3) …")
                       .arg(modelName(), QString::fromStdString(system().displayName),
                           m_mode == core::RunMode::Inference ? tr("inference") : tr("training")));
    m_compileOptions = options;
    using Compiled = core::Expected<core::ExecutionPlan>;
    m_compiler->start<Compiled>(
        [graph = m_model->graph, system = system(), options, calibration = m_calibration](
            const JobContext&) { return core::engine::compileFor(*graph, system, options, calibration); },
        [this, generation](int, Compiled result) {
            if (generation != m_generations.current)
                return;
            if (result)
                planReady(std::make_shared<const core::ExecutionPlan>(std::move(result).value()), generation);
            else
                planRefused(QString::fromStdString(result.error().message));
        });
    Q_EMIT busyChanged(tr("compiling"), {});
}

void Document::planReady(std::shared_ptr<const core::ExecutionPlan> plan, std::uint64_t generation)
{
    m_plan = std::move(plan);
    m_generations.plan = generation;
    const int wafers = wafersShown(*m_plan);
    QString summary
        = tr("compiled %1 for %2: %3, %4 regions on %5, PEs used %6%")
              .arg(modelName(), QString::fromStdString(system().displayName), executionModeLabel(m_plan->mode))
              .arg(m_plan->regions.size())
              .arg(wafers == 1 ? tr("one wafer") : tr("%1 wafers").arg(wafers))
              .arg(100.0 * m_plan->peUtilization, 0, 'f', 1);
    if (m_plan->mode != core::ExecutionMode::WeightStreaming)
        summary += tr(", load imbalance %1").arg(m_plan->loadImbalance, 0, 'f', 3);
    Q_EMIT info(summary);
    Q_EMIT planChanged({});

    // Run the plan on the simulated cluster (and sweep the cluster size for training).
    core::engine::RunOptions options;
    options.mode = m_mode;
    options.maxSteps = kStepsShown;
    // The run's state, or (run null) the engine's error in `error`.
    struct Ran {
        std::shared_ptr<RunState> state = std::make_shared<RunState>();
        QString error;
    };
    m_runner->start<Ran>(
        [graph = m_model->graph, plan = m_plan, system = system(), options, numSystems = m_numSystems,
            calibration = m_calibration](const JobContext& context) -> Ran {
            core::Expected<core::engine::RunResult> result
                = core::engine::run(*plan, *graph, system, options, calibration);
            Ran outcome;
            RunState* state = outcome.state.get();
            state->options = options;
            if (!result) {
                outcome.error = QString::fromStdString(result.error().message);
                return outcome;
            }
            state->run = std::make_shared<const core::engine::RunResult>(std::move(result).value());
            auto frames = std::make_shared<const core::engine::FrameSource>(*plan, *graph, system, *state->run);
            state->utilization = frames->utilization(kUtilizationBins);
            // Frames of hundreds of wafers would not fit in memory: the run stands, without them.
            if (const std::optional<core::Diagnostic> noFrames = core::engine::checkFrameMemory(*frames, system))
                state->noFrames = QString::fromStdString(noFrames->message);
            else
                state->frames = std::move(frames);
            context.progress(0.5);
            if (options.mode == core::engine::RunMode::Inference || context.cancelled())
                return outcome;
            core::engine::ScalingOptions scaling;
            scaling.cancelled = [context] { return context.cancelled(); };
            scaling.progress = [context](int done, int total) { context.progress(0.5 + 0.5 * done / total); };
            scaling.numCsx = sweepCounts(system, numSystems, graph->config.batchSize);
            scaling.mode = options.mode;
            core::Expected<core::engine::ScalingSweep> sweep
                = core::engine::scale(*graph, system, scaling, calibration);
            if (sweep)
                state->sweep = std::make_shared<const core::engine::ScalingSweep>(std::move(sweep).value());
            else
                state->sweepError = QString::fromStdString(sweep.error().message);
            return outcome;
        },
        [this, generation](int, Ran outcome) {
            if (generation != m_generations.current)
                return;
            if (outcome.state->run)
                runReady(std::move(*outcome.state), generation);
            else
                runFailed(outcome.error);
        });
    Q_EMIT busyChanged(tr("running"), {});
    Q_EMIT runChanged(options.mode == core::engine::RunMode::Inference
            ? tr("Running %1 on the simulated cluster …").arg(modelName())
            : tr("Running %1 on the simulated cluster; sweeping 1 to %2 systems …").arg(modelName()).arg(maxSystems()));
}

void Document::planRefused(const QString& message)
{
    const QString text
        = tr("%1 cannot be mapped onto %2: %3").arg(modelName(), QString::fromStdString(system().displayName), message);
    Q_EMIT warning(text);
    Q_EMIT status(text);
    Q_EMIT planChanged(text);
    Q_EMIT runChanged(text);
    setIdle(tr("cannot be mapped onto %1").arg(QString::fromStdString(system().displayName)));
    Q_EMIT settled();
}

void Document::runReady(RunState state, std::uint64_t generation)
{
    const core::SystemSpec& shown = system();
    if (!state.noFrames.isEmpty())
        Q_EMIT warning(state.noFrames);
    m_run = std::make_shared<const RunState>(std::move(state));
    m_generations.run = generation;
    const core::engine::Metrics& metrics = m_run->run->metrics;
    const bool inference = m_mode == core::RunMode::Inference;
    Q_EMIT info(inference ? tr("ran %1: %2 tokens/s per user, first token after %3 ms, MFU %4%")
                                .arg(modelName())
                                .arg(metrics.tokensPerS, 0, 'f', 1)
                                .arg(metrics.timeToFirstTokenS * 1e3, 0, 'f', 2)
                                .arg(100.0 * metrics.mfu, 0, 'f', 2)
                          : tr("ran %1 on %2 x %3: step %4 ms, %5 samples/s, MFU %6%, bound by %7")
                                .arg(modelName())
                                .arg(metrics.numSystems)
                                .arg(QString::fromStdString(shown.displayName))
                                .arg(metrics.stepTimeS * 1e3, 0, 'f', 2)
                                .arg(metrics.samplesPerS, 0, 'f', 1)
                                .arg(100.0 * metrics.mfu, 0, 'f', 1)
                                .arg(QString::fromLatin1(core::toString(metrics.bottleneck))));
    Q_EMIT runChanged({});
    setIdle(inference
            ? tr("%1 tokens/s per user on %2 wafer(s)").arg(metrics.tokensPerS, 0, 'f', 0).arg(metrics.numSystems)
            : tr("%1 samples/s on %2 x %3, %4")
                  .arg(metrics.samplesPerS, 0, 'f', 0)
                  .arg(metrics.numSystems)
                  .arg(QString::fromStdString(shown.displayName), executionModeLabel(m_plan->mode)));
    Q_EMIT settled();
}

void Document::runFailed(const QString& message)
{
    Q_EMIT error(message);
    Q_EMIT runChanged(tr("The run failed: %1").arg(message));
    setIdle(tr("the run failed"));
    Q_EMIT settled();
}

QString Document::kernelUnavailableReason(int planIndex) const
{
    if (!m_plan || !m_model || planIndex < 0 || planIndex >= int(m_plan->regions.size()))
        return tr("Select a region to run its kernel on the cycle-level fabric.");
    const core::Expected<core::fabric::KernelConfig> kernel
        = core::fabricKernelFor(m_plan->regions[std::size_t(planIndex)], *m_model->graph, system());
    return kernel ? QString() : QString::fromStdString(kernel.error().message);
}

void Document::runKernel(int planIndex)
{
    if (!kernelUnavailableReason(planIndex).isEmpty())
        return;
    const core::Region& region = m_plan->regions[std::size_t(planIndex)];
    core::fabric::KernelConfig config = core::fabricKernelFor(region, *m_model->graph, system()).value();
    config.threads = std::max(1, QThread::idealThreadCount());
    const QString what = tr("%1 (%2 x %3 GEMV on %4 x %5 PEs, one token)")
                             .arg(QString::fromStdString(region.opName))
                             .arg(config.matrixRows)
                             .arg(config.matrixCols)
                             .arg(config.regionCols)
                             .arg(config.regionRows);
    const double boundCycles = core::fmacBoundCycles(region.kernel, config.simdWidth);
    using Ran = core::Expected<core::fabric::KernelResult>;
    m_kernelRunner->start<Ran>(
        [config](const JobContext& context) {
            return core::fabric::runKernel(
                config, [context](const core::fabric::Fabric&) { return !context.cancelled(); }, 256);
        },
        [this, what, boundCycles](int, Ran result) {
            if (!result) {
                Q_EMIT kernelFailed(QString::fromStdString(result.error().format()));
                Q_EMIT error(QString::fromStdString(result.error().format()));
                return;
            }
            const QString text = tr("%1: %2 cycles on the fabric; the plan's FMAC bound is %3 cycles, the rest is "
                                    "multicast and reduction latency; max |error| %4 against a double-precision "
                                    "reference; %5 s")
                                     .arg(what)
                                     .arg(result->cycles)
                                     .arg(boundCycles, 0, 'f', 0)
                                     .arg(result->maxAbsError, 0, 'g', 2)
                                     .arg(result->wallS, 0, 'f', 2);
            Q_EMIT info(text);
            Q_EMIT kernelFinished(*result, text);
        });
    Q_EMIT kernelStarted(tr("Running %1 at cycle level …").arg(what));
}

QString Document::tokenUnavailableReason() const
{
    return ui::tokenUnavailableReason(m_plan.get(), m_model ? m_model->graph.get() : nullptr);
}

bool Document::isTokenRunning() const
{
    return m_tokenRunner->isBusy();
}

void Document::runTokenOnFabric(int promptTokens)
{
    if (const QString why = tokenUnavailableReason(); !why.isEmpty()) {
        Q_EMIT error(tr("Run token on fabric: error: %1").arg(why));
        return;
    }
    TokenRunRequest request { m_model->graph, m_plan, system(), {} };
    request.options.tokens = 1;
    request.options.promptTokens = std::max(1, promptTokens);
    request.options.threads = std::max(1, QThread::idealThreadCount());
    std::shared_ptr<core::fabric::RecordedFrames> frames = makeTokenFrames(*m_plan, system());
    m_tokenRun.reset();
    using Ran = core::Expected<core::cyclelevel::CycleRunResult>;
    m_tokenRunner->start<Ran>(
        [request, frames](const JobContext& context) {
            return ui::runTokenOnFabric(
                request, frames, [context] { return context.cancelled(); },
                [context](double fraction) { context.progress(fraction); });
        },
        [this](int, Ran result) {
            if (!result) {
                Q_EMIT error(QString::fromStdString(result.error().format()));
                Q_EMIT tokenFinished();
                setIdle(tr("the token run failed"));
                return;
            }
            m_tokenRun = std::make_shared<const core::cyclelevel::CycleRunResult>(std::move(result).value());
            const core::cyclelevel::CycleRunResult& run = *m_tokenRun;
            Q_EMIT info(tr("Token on fabric: %1 on %2, %3 cycles per token (%4 tokens/s at the wafer's clock); "
                           "generated %5, the reference %6; %7 s per token")
                            .arg(QString::fromStdString(run.model), QString::fromStdString(run.system))
                            .arg(run.cyclesPerToken, 0, 'f', 0)
                            .arg(run.tokensPerS, 0, 'f', 0)
                            .arg(run.tokens.empty() ? -1 : run.tokens.back())
                            .arg(run.referenceTokens.empty() ? -1 : run.referenceTokens.back())
                            .arg(run.decodeS, 0, 'f', 2));
            Q_EMIT tokenFinished();
            setIdle(tr("ran a token on the fabric"));
        });
    Q_EMIT tokenStarted(frames);
    Q_EMIT busyChanged(tr("running a token of %1 on the fabric").arg(modelName()), {});
}

void Document::exportReport(const QString& directory, std::optional<core::engine::Sensitivity> sensitivity)
{
    if (!m_run || m_exporter->isBusy()) {
        const QString text = m_run ? tr("%1: error: a report is still being written").arg(directory)
                                   : tr("%1: error: there is no run to export yet").arg(directory);
        Q_EMIT error(text);
        Q_EMIT reportExported(directory, text);
        return;
    }
    const ReportJob job { directory, m_model, m_plan, m_run, m_compileOptions, m_tokenRun, system(), m_calibration,
        std::move(sensitivity) };
    const bool withToken = bool(m_tokenRun);
    m_exporter->start<QString>(
        [job](const JobContext& context) { return writeReportDirectory(job, context.cancelFlag()); },
        [this, directory, withToken](int, QString failure) {
            if (failure.isEmpty()) {
                Q_EMIT info(tr("%1: wrote the report (%2)")
                                .arg(directory, reportFileNames(withToken).join(QStringLiteral(", "))));
                setIdle({});
            } else if (failure == reportCancelledMessage(directory)) {
                Q_EMIT info(failure);
            } else {
                Q_EMIT error(failure);
                setIdle(tr("the report was not written"));
            }
            Q_EMIT reportExported(directory, failure);
        });
    Q_EMIT busyChanged(tr("writing the report"), {});
}

QString Document::exportTimeline(const QString& path)
{
    if (!m_run)
        return tr("%1: error: there is no run to export yet").arg(path);
    const std::string trace = core::report::chromeTrace(*m_run->run, m_plan.get());
    if (const std::optional<core::Diagnostic> failure = core::report::writeFileAtomically(path.toStdString(), trace))
        return QString::fromStdString(failure->format());
    Q_EMIT info(
        tr("%1: wrote the timeline (%2 events) as a Chrome trace").arg(path).arg(m_run->run->timeline.events.size()));
    return {};
}

void Document::keepRunAsBaseline()
{
    if (!m_run || !m_run->frames || !m_plan)
        return;
    m_baseline = { m_run->run, m_plan, m_run->frames,
        tr("%1 on %2 x %3, %4")
            .arg(modelName())
            .arg(m_run->run->metrics.numSystems)
            .arg(QString::fromStdString(system().displayName), executionModeLabel(m_plan->mode)) };
    Q_EMIT info(tr("kept %1 as the baseline: the timeline shows it above later runs, and the wafer's "
                   "\"activity vs baseline\" overlay the difference")
                    .arg(m_baseline.label));
    Q_EMIT baselineChanged();
}

void Document::clearBaseline()
{
    m_baseline = {};
    Q_EMIT baselineChanged();
}

} // namespace waferscope::ui
