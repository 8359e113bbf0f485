#include "core/cluster/timingcache.h"

#include "core/compiler/compiler.h"
#include "core/engine/engine.h"
#include "core/model/modelloader.h"
#include "core/study/study.h"

#include <optional>

namespace waferscope::core::cluster {

struct TimingCache::Loaded {
    std::shared_ptr<const LoadedModelFile> model;
};

// One allocation's plan, or why it cannot be mapped.
struct TimingCache::Compiled {
    CompileOptions compile;
    std::optional<engine::CompiledRun> run;
    std::string refusal; // the compiler's reason when `run` is empty
};

namespace {

Diagnostic cancelledError()
{
    return Diagnostic { "<cluster>", 0, 0, "cancelled", Diagnostic::Kind::Internal };
}

std::string cannotMap(int numCsx, const SystemSpec& system, const std::string& why)
{
    return "cannot be mapped on " + std::to_string(numCsx) + " x " + system.displayName + ": " + why;
}

} // namespace

Expected<std::shared_ptr<const TimingCache::Loaded>> TimingCache::load(const JobSpec& job, const std::string& jobsPath)
{
    if (const auto found = m_models.find(job.paramsPath); found != m_models.end())
        return found->second;
    Expected<std::string> bytes = readParamsBytes(job.paramsPath);
    if (!bytes) // not read at all (missing, a directory, too large, not text): say where the jobs file names it
        return Diagnostic { jobsPath, job.paramsAt.line, job.paramsAt.column,
            "job '" + job.name + "': params '" + job.params + "' (" + job.paramsPath + "): " + bytes.error().message };
    if (isJobsFileText(*bytes))
        return Diagnostic { jobsPath, job.paramsAt.line, job.paramsAt.column,
            "job '" + job.name + "': params '" + job.params
                + "' is a WaferScope jobs file (it has a top-level 'jobs:' key), not a Model Zoo params file" };
    Expected<ModelConfig> config = readParamsText(*bytes, job.paramsPath);
    if (!config)
        return config.error();
    auto loaded = std::make_shared<const Loaded>(Loaded { std::make_shared<const LoadedModelFile>(
        LoadedModelFile { job.paramsPath, std::move(bytes).value(), buildModelGraph(*config) }) });
    m_models[job.paramsPath] = loaded;
    return std::shared_ptr<const Loaded>(loaded);
}

Expected<JobTiming> TimingCache::timing(const JobSpec& job, const std::string& jobsPath, const SystemSpec& system,
    int users, const engine::Calibration& calibration, const std::function<bool()>& cancelled)
{
    const AllocationKey allocation { job.paramsPath, job.mode, job.numCsx,
        system.name + " " + calibration.version + " " + calibration.profile };
    const auto key = std::make_tuple(allocation, users);
    if (const auto found = m_timings.find(key); found != m_timings.end())
        return found->second;
    if (cancelled && cancelled())
        return cancelledError();
    Expected<std::shared_ptr<const Loaded>> loaded = load(job, jobsPath);
    if (!loaded)
        return loaded.error();
    const ModelGraph& graph = (*loaded)->model->graph;
    JobTiming timing;
    std::shared_ptr<const Compiled>& compiled = m_plans[allocation];
    if (!compiled) {
        CompileOptions compileOptions;
        compileOptions.mode = compileModeFor(job.mode);
        compileOptions.numSystems = job.numCsx;
        // The layout and a draft's placement are chosen on one user's token: users do not change
        // the plan, only the runs on it.
        engine::RunOptions runOptions;
        runOptions.mode = job.mode;
        runOptions.maxSteps = 2; // the first step (with the fill) and a steady one
        runOptions.cancelled = cancelled;
        Expected<engine::CompiledRun> built
            = engine::compileRun(graph, system, compileOptions, runOptions, calibration);
        if (!built && built.error().kind == Diagnostic::Kind::Internal) {
            m_plans.erase(allocation);
            return built.error();
        }
        ++m_compiles;
        auto made = std::make_shared<Compiled>();
        made->compile = compileOptions;
        if (built) {
            made->run = std::move(built).value();
            made->run->options.cancelled = nullptr; // this schedule's: each run is given its own
        } else
            made->refusal = cannotMap(job.numCsx, system, built.error().message);
        compiled = std::move(made);
    }
    if (!compiled->run) {
        timing.reason = compiled->refusal;
        m_timings[key] = timing;
        return timing;
    }
    // One study from the cached plan: the run alone.
    study::StudySpec spec;
    spec.model = (*loaded)->model;
    spec.system = system;
    spec.compile = compiled->compile;
    spec.run = compiled->run->options;
    spec.run.users = users;
    spec.calibration = calibration;
    spec.plan = std::shared_ptr<const ExecutionPlan>(compiled, &compiled->run->plan);
    study::StudyControl control;
    control.cancelled = cancelled;
    ++m_runs;
    const Expected<study::StudyOutcome> run = study::runStudy(spec, control);
    if (!run) {
        if (run.error().kind == Diagnostic::Kind::Internal)
            return run.error();
        timing.reason = cannotMap(job.numCsx, system, run.error().message);
        m_timings[key] = timing;
        return timing;
    }
    const engine::Metrics& m = run->ran->metrics;
    timing.execution = toString(m.execution);
    timing.systemsUsed = m.numSystems;
    timing.firstStepS = m.stepTimesS.empty() ? m.stepTimeS : m.stepTimesS.front();
    timing.stepTimeS = m.stepTimeS;
    timing.tokensPerStep = m.tokensPerStep;
    timing.tokensPerS = m.tokensPerS;
    timing.aggregateTokensPerS = m.aggregateTokensPerS;
    if (job.mode == RunMode::Inference) {
        if (m.numSystems > job.numCsx)
            timing.reason = "needs " + std::to_string(m.numSystems) + " wafers for its weights"
                + (m.speculative && m.speculative->draftWafers > 0 && !m.speculative->sharesWafer ? " and its draft"
                                                                                                  : "")
                + "; num_csx is " + std::to_string(job.numCsx);
    } else {
        timing.memoryxBytes = memoryxStateBytes(graph, system.memoryx);
    }
    m_timings[key] = timing;
    return timing;
}

} // namespace waferscope::core::cluster
