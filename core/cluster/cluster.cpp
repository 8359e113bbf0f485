#include "core/cluster/cluster.h"

#include "core/common/units.h"
#include "core/compiler/compiler.h"
#include "core/engine/engine.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace waferscope::core::cluster {

struct TimingCache::Loaded {
    ModelGraph graph;
};

namespace {

std::string systemsText(int count, const SystemSpec& system)
{
    return std::to_string(count) + " x " + system.displayName;
}

Diagnostic cancelledError()
{
    return Diagnostic { "<cluster>", 0, 0, "cancelled", Diagnostic::Kind::Internal };
}

// The assumptions every schedule makes, for the output's notes (the README lists them too).
std::vector<std::string> assumptions(const ClusterOptions& options)
{
    std::vector<std::string> notes {
        std::string("policy ") + toString(options.policy)
            + (options.policy == Policy::Backfill
                    ? ": EASY backfill; a later job starts early only when that does not delay the head of the queue"
                    : ": jobs start in queue order; none passes the head of the queue"),
        "waiting jobs go by priority (higher first), then submit time, then file order; a started job runs to its "
        "end (no preemption)",
        "each job's step time is the model-level engine's for its exact allocation; a training job lasts the sum of "
        "its step times, the first step's fill included",
        "training jobs hold their weights and optimizer state in MemoryX while they run; inference jobs hold their "
        "weights on their wafers",
        "SwarmX bandwidth is not shared out between concurrent jobs: each job streams as if alone",
        "allocations are the lowest-numbered free systems, not aligned to the SwarmX tree",
        "jobs that share a model, a mode and an allocation share one engine run",
    };
    if (options.sizeInference)
        notes.push_back("--size_inference: inference jobs with tokens_per_s_per_user run with the fewest replicas "
                        "that give each user that rate");
    return notes;
}

} // namespace

Expected<JobTiming> TimingCache::timing(
    const JobSpec& job, const std::string& jobsPath, const SystemSpec& system, int users, const ClusterOptions& options)
{
    const auto key = std::make_tuple(job.paramsPath, job.mode, job.numCsx, users,
        system.name + " " + options.calibration.version + " " + options.calibration.profile);
    if (const auto found = m_timings.find(key); found != m_timings.end())
        return found->second;
    if (options.cancelled && options.cancelled())
        return cancelledError();
    std::shared_ptr<Loaded>& loaded = m_models[job.paramsPath];
    if (!loaded) {
        Expected<std::string> bytes = readParamsBytes(job.paramsPath);
        if (!bytes) {
            // Not read at all (missing, a directory, too large, not text): say where the jobs
            // file names it.
            m_models.erase(job.paramsPath);
            return Diagnostic { jobsPath, job.paramsAt.line, job.paramsAt.column,
                "job '" + job.name + "': params '" + job.params + "' (" + job.paramsPath
                    + "): " + bytes.error().message };
        }
        if (isJobsFileText(*bytes)) {
            m_models.erase(job.paramsPath);
            return Diagnostic { jobsPath, job.paramsAt.line, job.paramsAt.column,
                "job '" + job.name + "': params '" + job.params
                    + "' is a WaferScope jobs file (it has a top-level 'jobs:' key), not a Model Zoo params file" };
        }
        Expected<ModelConfig> config = readParamsText(*bytes, job.paramsPath);
        if (!config) {
            m_models.erase(job.paramsPath);
            return config.error();
        }
        loaded = std::make_shared<Loaded>(Loaded { buildModelGraph(*config) });
    }
    const ModelGraph& graph = loaded->graph;
    JobTiming timing;
    CompileOptions compileOptions;
    compileOptions.mode = compileModeFor(job.mode);
    compileOptions.numSystems = job.numCsx;
    engine::RunOptions runOptions;
    runOptions.mode = job.mode;
    runOptions.maxSteps = 2; // the first step (with the fill) and a steady one
    runOptions.users = users;
    runOptions.cancelled = options.cancelled;
    const auto refused = [&](const Diagnostic& error) -> Expected<JobTiming> {
        if (error.kind == Diagnostic::Kind::Internal)
            return error;
        timing.reason = "cannot be mapped on " + systemsText(job.numCsx, system) + ": " + error.message;
        m_timings[key] = timing;
        return timing;
    };
    ++m_runs;
    const Expected<ExecutionPlan> plan = engine::compileFor(graph, system, compileOptions, options.calibration,
        { .mode = RunKind::Inference, .users = users, .cancelled = options.cancelled });
    if (!plan)
        return refused(plan.error());
    const Expected<engine::RunResult> run = engine::run(*plan, graph, system, runOptions, options.calibration);
    if (!run)
        return refused(run.error());
    const engine::Metrics& m = run->metrics;
    timing.execution = toString(m.execution);
    timing.systemsUsed = m.numSystems;
    timing.firstStepS = m.stepTimesS.empty() ? m.stepTimeS : m.stepTimesS.front();
    timing.stepTimeS = m.stepTimeS;
    timing.tokensPerStep = m.tokensPerStep;
    timing.tokensPerS = m.tokensPerS;
    timing.aggregateTokensPerS = m.aggregateTokensPerS;
    if (job.mode == RunKind::Inference) {
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

Expected<ClusterResult> scheduleCluster(const JobsFile& file, const ClusterOptions& options, TimingCache& cache)
{
    Expected<SystemSpec> system = loadBuiltinPreset(file.cluster.system);
    if (!system)
        return system.error();
    const int largest = system->swarmx.supported ? system->swarmx.maxSystems : 1;
    if (file.cluster.systems > largest)
        return Diagnostic { file.path, file.cluster.systemsAt.line, file.cluster.systemsAt.column,
            "cluster.systems is " + std::to_string(file.cluster.systems) + "; a " + system->displayName
                + " cluster has 1 to " + std::to_string(largest) + " systems" };
    ClusterResult result;
    result.system = file.cluster.system;
    result.systems = file.cluster.systems;
    result.memoryxBytes = file.cluster.memoryxBytes.value_or(system->memoryx.capacityBytes);
    result.policy = options.policy;
    result.notes = assumptions(options);
    if (!file.cluster.memoryxBytes)
        result.notes.push_back("MemoryX holds " + formatBytes(result.memoryxBytes) + ", the " + system->displayName
            + " preset's capacity (cluster.memoryx_bytes overrides it)");

    std::vector<QueuedJob> queued;
    for (const JobSpec& spec : file.jobs) {
        JobResult job;
        job.name = spec.name;
        job.mode = spec.mode;
        job.numCsx = spec.numCsx;
        job.replicas = spec.replicas;
        job.users = spec.users;
        job.submitS = spec.submitS;
        job.priority = spec.priority;
        const bool inference = spec.mode == RunKind::Inference;
        const auto usersPer = [&](int replicas) { return int((std::int64_t(spec.users) + replicas - 1) / replicas); };
        // More systems than the cluster has: no engine run can help.
        const std::int64_t held = std::int64_t(job.numCsx) * job.replicas;
        if (held > file.cluster.systems) {
            job.reason = "needs " + std::to_string(held) + " systems (" + std::to_string(job.replicas) + " x "
                + std::to_string(job.numCsx) + "); the cluster has " + std::to_string(file.cluster.systems);
            queued.push_back({ spec.submitS, 0, 0.0, 0.0, spec.priority });
            result.jobs.push_back(std::move(job));
            continue;
        }
        if (inference && options.sizeInference && spec.tokensPerSPerUser) {
            // The fewest replicas whose users each get the target: per-user rates fall as a
            // replica serves more users, so the search is over a monotone predicate.
            const int most = std::max(1, std::min(spec.users, file.cluster.systems / spec.numCsx));
            int low = 1;
            int high = most;
            std::optional<int> found;
            while (low <= high) {
                const int mid = low + (high - low) / 2;
                Expected<JobTiming> t = cache.timing(spec, file.path, *system, usersPer(mid), options);
                if (!t)
                    return t.error();
                if (t->reason.empty() && t->tokensPerS >= *spec.tokensPerSPerUser) {
                    found = mid;
                    high = mid - 1;
                } else {
                    low = mid + 1;
                }
            }
            job.replicasNeeded = found;
            if (found) {
                job.replicas = *found;
                job.usersPerReplica = usersPer(*found);
            }
        }
        Expected<JobTiming> timing
            = cache.timing(spec, file.path, *system, inference ? usersPer(job.replicas) : 1, options);
        if (!timing)
            return timing.error();
        job.execution = timing->execution;
        job.stepTimeS = timing->stepTimeS;
        job.tokensPerS = timing->tokensPerS;
        job.reason = timing->reason;
        double duration = 0.0;
        if (inference) {
            job.usersPerReplica = usersPer(job.replicas);
            job.aggregateTokensPerS = timing->tokensPerS * double(spec.users);
            duration = spec.durationS;
            job.steps
                = timing->stepTimeS > 0.0 ? std::int64_t(std::min(9e18, std::floor(duration / timing->stepTimeS))) : 0;
            if (options.sizeInference && spec.tokensPerSPerUser && !job.replicasNeeded && job.reason.empty())
                job.reason = "no replica count reaches " + formatFixed(*spec.tokensPerSPerUser, 1)
                    + " tokens/s per user on this cluster";
        } else {
            job.memoryxBytes = timing->memoryxBytes;
            job.steps = spec.maxSteps ? *spec.maxSteps
                                      : std::int64_t(std::ceil(*spec.tokens / std::max(1.0, timing->tokensPerStep)));
            duration = timing->firstStepS + double(job.steps - 1) * timing->stepTimeS;
        }
        if (job.reason.empty() && job.memoryxBytes > result.memoryxBytes)
            job.reason = "its weights and optimizer state take " + formatBytes(job.memoryxBytes)
                + " of MemoryX; the cluster has " + formatBytes(result.memoryxBytes);
        // A job that can never run is left out of the queue: it holds nothing.
        queued.push_back({ spec.submitS, job.reason.empty() ? int(held) : 0,
            job.reason.empty() ? job.memoryxBytes : 0.0, duration, spec.priority });
        job.durationS = duration;
        result.jobs.push_back(std::move(job));
    }
    const std::vector<std::optional<Placement>> placed
        = scheduleJobs(queued, file.cluster.systems, result.memoryxBytes, options.policy);
    double firstSubmit = std::numeric_limits<double>::infinity();
    double lastEnd = -std::numeric_limits<double>::infinity();
    double busy = 0.0;
    for (std::size_t j = 0; j < result.jobs.size(); ++j) {
        JobResult& job = result.jobs[j];
        if (!job.reason.empty() || !placed[j]) {
            job.durationS.reset();
            if (job.reason.empty())
                job.reason = "was not scheduled";
            continue;
        }
        job.startS = placed[j]->startS;
        job.endS = placed[j]->endS;
        job.waitS = *job.startS - job.submitS;
        job.durationS = *job.endS - *job.startS;
        job.systems = placed[j]->systems;
        firstSubmit = std::min(firstSubmit, job.submitS);
        lastEnd = std::max(lastEnd, *job.endS);
        busy += double(job.numCsx) * double(job.replicas) * *job.durationS;
    }
    if (lastEnd >= firstSubmit) {
        result.firstSubmitS = firstSubmit;
        result.makespanS = lastEnd - firstSubmit;
        result.utilization = *result.makespanS > 0.0 ? busy / (double(result.systems) * *result.makespanS) : 0.0;
    }
    return result;
}

Expected<JobsFile> withNumCsx(const JobsFile& file, const std::vector<std::pair<std::string, int>>& changes)
{
    JobsFile changed = file;
    for (const std::pair<std::string, int>& change : changes) {
        const auto job = std::find_if(
            changed.jobs.begin(), changed.jobs.end(), [&](const JobSpec& spec) { return spec.name == change.first; });
        if (job == changed.jobs.end())
            return Diagnostic { "--what_if", 0, 0, "no job named '" + change.first + "' in " + file.path };
        job->numCsx = change.second;
    }
    return changed;
}

} // namespace waferscope::core::cluster
