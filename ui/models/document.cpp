#include "ui/models/document.h"

#include "ui/models/fabricruns.h"
#include "ui/models/jobrunner.h"
#include "ui/models/optionnames.h"
#include "ui/models/reportexporter.h"

#include "core/hardware/builtinpresets.h"
#include "core/hardware/clusterspec.h"
#include "core/model/graphjson.h"

#include <QFileInfo>

#include <algorithm>
#include <utility>

namespace waferscope::ui {

Document::Document(std::vector<core::SystemSpec> systems, QObject* parent)
    : QObject(parent)
    , m_systems(std::move(systems))
    , m_loader(new JobRunner(this))
    , m_compiler(new JobRunner(this))
    , m_runner(new JobRunner(this))
    , m_exporter(new JobRunner(this))
    , m_fabric(new FabricRuns(this))
{
    Q_ASSERT(!m_systems.empty());
    m_settings.systemIndex = systemIndexOf(QString::fromUtf8(core::defaultPresetName())).value_or(0);
    const auto laneIdle = [this](bool busy) {
        if (!busy && !isBusy())
            Q_EMIT busyChanged({}, m_idleState);
    };
    connect(m_runner, &JobRunner::progress, this, [this](int, double fraction) { Q_EMIT progress(fraction); });
    for (JobRunner* lane : { m_loader, m_compiler, m_runner, m_exporter })
        connect(lane, &JobRunner::busyChanged, this, laneIdle);
    connect(m_fabric, &FabricRuns::progress, this, &Document::progress);
    connect(m_fabric, &FabricRuns::tokenBusyChanged, this, laneIdle);
    connect(m_fabric, &FabricRuns::info, this, &Document::info);
    connect(m_fabric, &FabricRuns::error, this, &Document::error);
    connect(m_fabric, &FabricRuns::tokenSettled, this, &Document::setIdle);
    connect(m_fabric, &FabricRuns::tokenStarted, this,
        [this] { Q_EMIT busyChanged(tr("running a token of %1 on the fabric").arg(modelName()), {}); });
}

Document::~Document() = default;

QString Document::modelName() const
{
    return m_model ? QString::fromStdString(m_model->graph->config.name) : QString();
}

QString Document::settingsError(const Settings& settings) const
{
    if (settings.systemIndex >= m_systems.size())
        return tr("there is no system %1").arg(settings.systemIndex);
    core::Expected<core::ClusterSpec> cluster
        = core::ClusterSpec::make(m_systems[settings.systemIndex], settings.numSystems);
    return cluster ? QString() : QString::fromStdString(cluster.error().message);
}

QString Document::applySettings(const Settings& settings)
{
    if (QString error = settingsError(settings); !error.isEmpty())
        return error;
    if (settings != m_settings) {
        m_settings = settings;
        settingChanged();
    }
    return {};
}

std::optional<std::size_t> Document::systemIndexOf(const QString& name) const
{
    for (std::size_t i = 0; i < m_systems.size(); ++i)
        if (QString::fromStdString(m_systems[i].name) == name)
            return i;
    return std::nullopt;
}

int Document::maxSystems() const
{
    return system().swarmx.supported ? system().swarmx.maxSystems : 1;
}

Settings Document::withSystem(std::size_t index) const
{
    Settings next = m_settings;
    next.systemIndex = index;
    if (const core::SystemSpec* spec = index < m_systems.size() ? &m_systems[index] : nullptr)
        next.numSystems = std::min(next.numSystems, spec->swarmx.supported ? spec->swarmx.maxSystems : 1);
    return next;
}

void Document::setSystemIndex(std::size_t index)
{
    if (index < m_systems.size())
        applySettings(withSystem(index));
}

bool Document::selectSystem(const QString& name)
{
    const std::optional<std::size_t> index = systemIndexOf(name);
    if (index)
        setSystemIndex(*index);
    return index.has_value();
}

QString Document::setNumSystems(int numSystems)
{
    Settings next = m_settings;
    next.numSystems = numSystems;
    return applySettings(next);
}

void Document::setMode(core::RunMode mode)
{
    Settings next = m_settings;
    next.mode = mode;
    applySettings(next);
}

void Document::setExecution(core::ExecutionChoice execution)
{
    Settings next = m_settings;
    next.execution = execution;
    applySettings(next);
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
    if (m_loader->isBusy() && m_model) {
        m_chainAfterLoad = true; // the load's chain, or the held model's when the load fails
        dropPlanAndRun(tr("Loading a model for the new settings …"));
    } else {
        startChain();
    }
    Q_EMIT settingsChanged();
}

bool Document::isBusy() const
{
    return m_loader->isBusy() || m_compiler->isBusy() || m_runner->isBusy() || m_fabric->isTokenRunning()
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
    // A compile in flight, or one that waited for the load.
    const bool compiling = m_compiler->isBusy() || std::exchange(m_chainAfterLoad, false);
    m_fabric->cancelToken(); // its frames so far stay in the playback
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
    m_loader->start<LoadResult>([path](const JobContext&) { return loadModelFile(path); },
        [this, path, name](int, LoadResult result) {
            const bool chainAfterLoad = std::exchange(m_chainAfterLoad, false);
            if (result.jobsFile) {
                setIdle(m_idleState);
                Q_EMIT jobsFileOpened(path);
                if (chainAfterLoad)
                    startChain();
                return;
            }
            if (!result.model) {
                Q_EMIT error(result.error);
                Q_EMIT loadFailed(path, result.error);
                setIdle(m_model ? tr("%1 could not be loaded; this model stays").arg(name)
                                : tr("%1 could not be loaded").arg(name));
                if (chainAfterLoad)
                    return startChain(); // the model held, for the settings changed meanwhile
                Q_EMIT settled();
                return;
            }
            m_model = std::move(result.model);
            Q_EMIT info(loadSummary(path, *m_model->graph));
            for (const std::string& line : core::formatWarnings(m_model->graph->config))
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
    m_fabric->setPlan(nullptr, nullptr, system());
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
    options.mode = m_settings.mode;
    options.execution = m_settings.execution;
    options.numSystems = m_settings.numSystems;
    dropPlanAndRun(tr("Compiling %1 for %2 (%3) …")
                       .arg(modelName(), QString::fromStdString(system().displayName),
                           mode() == core::RunMode::Inference ? tr("inference") : tr("training")));
    m_compileOptions = options;
    m_compiler->start<CompileOutcome>(
        [request = runRequest(nullptr)](const JobContext& context) { return compilePlan(request, context); },
        [this, generation](int, CompileOutcome compiled) {
            if (generation != m_generations.current)
                return;
            if (compiled.plan)
                planReady(std::move(compiled.plan), generation);
            else
                planRefused(compiled.error);
        });
    Q_EMIT busyChanged(tr("compiling"), {});
}

void Document::planReady(std::shared_ptr<const core::ExecutionPlan> plan, std::uint64_t generation)
{
    m_plan = std::move(plan);
    m_generations.plan = generation;
    m_fabric->setPlan(m_plan, m_model->file, system());
    const QString summary = planSummary(*m_plan, modelName(), system());
    Q_EMIT info(summary);
    Q_EMIT planChanged({});

    // Run the plan on the simulated cluster (and sweep the cluster size for training).
    const RunRequest request = runRequest(m_plan);
    const core::engine::RunOptions& options = request.options;
    m_runner->start<RunOutcome>([request](const JobContext& context) { return runPlan(request, context); },
        [this, generation](int, RunOutcome outcome) {
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

RunRequest Document::runRequest(std::shared_ptr<const core::ExecutionPlan> plan) const
{
    core::engine::RunOptions options;
    options.mode = mode();
    options.maxSteps = kStepsShown;
    return { m_model, std::move(plan), system(), m_compileOptions, options, numSystems(), m_calibration,
        kUtilizationBins };
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
    Q_EMIT info(runSummary(metrics, modelName(), shown));
    Q_EMIT runChanged({});
    setIdle(runIdleState(metrics, shown, m_plan->mode));
    Q_EMIT settled();
}

void Document::runFailed(const QString& message)
{
    Q_EMIT error(message);
    Q_EMIT runChanged(tr("The run failed: %1").arg(message));
    setIdle(tr("the run failed"));
    Q_EMIT settled();
}

void Document::exportReport(const QString& directory, std::optional<core::sweeps::Sensitivity> sensitivity)
{
    if (!m_run || m_exporter->isBusy()) {
        const QString text = m_run ? tr("%1: error: a report is still being written").arg(directory)
                                   : tr("%1: error: there is no run to export yet").arg(directory);
        Q_EMIT error(text);
        Q_EMIT reportExported(directory, text);
        return;
    }
    const ReportJob job { directory, m_model, m_plan, m_run, m_compileOptions, m_fabric->tokenRun(),
        m_fabric->tokenSeed(), system(), m_calibration, std::move(sensitivity) };
    const bool withToken = bool(job.tokenRun);
    m_exporter->start<QString>(
        [job](const JobContext& context) {
            return writeReportDirectory(
                job, context.cancelFlag(), [context](double fraction) { context.progress(fraction); });
        },
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
    if (QString failure = writeTimelineTrace(path, *m_run->run, m_plan.get()); !failure.isEmpty())
        return failure;
    Q_EMIT info(
        tr("%1: wrote the timeline (%2 events) as a Chrome trace").arg(path).arg(m_run->run->timeline.events.size()));
    return {};
}

void Document::keepRunAsBaseline()
{
    if (!m_run || !m_run->frames || !m_plan)
        return;
    m_baseline = { m_run->run, m_plan, m_run->frames,
        baselineLabel(modelName(), m_run->run->metrics, system(), m_plan->mode) };
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
