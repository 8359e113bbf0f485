#include "core/cluster/cluster.h"

#include "core/common/units.h"
#include "core/hardware/builtinpresets.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

namespace waferscope::core::cluster {

namespace {

// The assumptions every schedule makes, for the output's notes (docs/CLI.md lists them too).
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
        "jobs that share a model, a mode and an allocation share one compiled plan, and one engine run for each "
        "users-per-replica count",
    };
    if (options.sizeInference)
        notes.push_back("--size_inference: inference jobs with tokens_per_s_per_user run with the fewest replicas "
                        "that give each user that rate, found by one binary search over users per replica for each "
                        "model, allocation and target");
    return notes;
}

int usersPerReplica(int users, int replicas)
{
    return int((std::int64_t(users) + replicas - 1) / replicas);
}

// The most replicas a sized job may have: a user each at most, and no more than the cluster holds.
int mostReplicas(const JobSpec& spec, int systems)
{
    return std::max(1, std::min(spec.users, systems / spec.numCsx));
}

// One --size_inference search, shared by the jobs of one model, allocation and target.
struct ReplicaSearch {
    const JobSpec* first = nullptr; // the first job of its kind: its model loads, its errors are located
    double tokensPerSPerUser = 0.0;
    int fewestUsers = 1; // per replica: fewer than this, no job of the kind has replicas enough to use
    int mostUsers = 1; // the most users a job of the kind has
    std::optional<int> mostUsersMet; // the largest count in that range whose per-user rate meets the target
};

struct ReplicaSearches {
    std::vector<ReplicaSearch> searches; // in the order of their first job
    std::vector<int> ofJob; // the search of each job in the file; -1 when it is not sized
};

// The searches --size_inference needs: inference jobs with a target, and room for their replicas
// as filed (a job wider than the cluster is refused before sizing).
ReplicaSearches replicaSearches(const JobsFile& file, bool sizeInference)
{
    ReplicaSearches out;
    out.ofJob.assign(file.jobs.size(), -1);
    if (!sizeInference)
        return out;
    std::map<std::tuple<std::string, int, double>, int> index;
    for (std::size_t j = 0; j < file.jobs.size(); ++j) {
        const JobSpec& spec = file.jobs[j];
        if (spec.mode != RunMode::Inference || !spec.tokensPerSPerUser
            || std::int64_t(spec.numCsx) * spec.replicas > file.cluster.systems)
            continue;
        const int fewest = usersPerReplica(spec.users, mostReplicas(spec, file.cluster.systems));
        const auto [at, added]
            = index.try_emplace({ spec.paramsPath, spec.numCsx, *spec.tokensPerSPerUser }, int(out.searches.size()));
        if (added)
            out.searches.push_back({ &spec, *spec.tokensPerSPerUser, fewest, spec.users, std::nullopt });
        ReplicaSearch& search = out.searches[std::size_t(at->second)];
        search.fewestUsers = std::min(search.fewestUsers, fewest);
        search.mostUsers = std::max(search.mostUsers, spec.users);
        out.ofJob[j] = at->second;
    }
    return out;
}

// The fewest replicas whose users each get the search's target: ceil(users / the most users a
// replica serves at that rate), when the cluster holds that many.
std::optional<int> replicasNeeded(const ReplicaSearch& search, const JobSpec& spec, int systems)
{
    if (!search.mostUsersMet)
        return std::nullopt;
    const int replicas = usersPerReplica(spec.users, std::min(*search.mostUsersMet, spec.users));
    if (replicas > mostReplicas(spec, systems))
        return std::nullopt;
    return replicas;
}

using TimingOf = std::function<Expected<JobTiming>(const JobSpec& spec, int users)>;
using Report = std::function<void(const char* phase, int done, int total)>;

// The cluster's hardware and the result's header: the preset, its size checked, the notes.
Expected<ClusterResult> resultHeader(const JobsFile& file, const ClusterOptions& options, const SystemSpec& system)
{
    const int largest = system.swarmx.supported ? system.swarmx.maxSystems : 1;
    if (file.cluster.systems > largest)
        return Diagnostic { file.path, file.cluster.systemsAt.line, file.cluster.systemsAt.column,
            "cluster.systems is " + std::to_string(file.cluster.systems) + "; a " + system.displayName
                + " cluster has 1 to " + std::to_string(largest) + " systems" };
    ClusterResult result;
    result.system = file.cluster.system;
    result.systems = file.cluster.systems;
    result.memoryxBytes = file.cluster.memoryxBytes.value_or(system.memoryx.capacityBytes);
    result.policy = options.policy;
    result.notes = assumptions(options);
    if (!file.cluster.memoryxBytes)
        result.notes.push_back("MemoryX holds " + formatBytes(result.memoryxBytes) + ", the " + system.displayName
            + " preset's capacity (cluster.memoryx_bytes overrides it)");
    return result;
}

// --size_inference: each search's largest users-per-replica count in [fewestUsers, mostUsers]
// whose per-user rate meets its target, by binary search.
std::optional<Diagnostic> sizeReplicas(
    std::vector<ReplicaSearch>& searches, const TimingOf& timingOf, const Report& report)
{
    for (std::size_t s = 0; s < searches.size(); ++s) {
        ReplicaSearch& search = searches[s];
        report("sizing", int(s), int(searches.size()));
        int low = search.fewestUsers;
        int high = search.mostUsers;
        while (low <= high) {
            const int mid = low + (high - low) / 2;
            Expected<JobTiming> timing = timingOf(*search.first, mid);
            if (!timing)
                return timing.error();
            if (timing->reason.empty() && timing->tokensPerS >= search.tokensPerSPerUser) {
                search.mostUsersMet = mid;
                low = mid + 1;
            } else {
                high = mid - 1;
            }
            report("sizing", int(s), int(searches.size()));
        }
    }
    return std::nullopt;
}

// One job's figures from its timing: steps, duration, and why it can never run, if it cannot.
// Returns the job's entry in the queue.
QueuedJob timeJob(
    JobResult& job, const JobSpec& spec, const JobTiming& timing, const ReplicaSearch* search, double memoryxBytes)
{
    job.execution = timing.execution;
    job.stepTimeS = timing.stepTimeS;
    job.tokensPerS = timing.tokensPerS;
    job.reason = timing.reason;
    double duration = 0.0;
    if (spec.mode == RunMode::Inference) {
        job.usersPerReplica = usersPerReplica(spec.users, job.replicas);
        job.aggregateTokensPerS = timing.tokensPerS * double(spec.users);
        duration = spec.durationS;
        job.steps = timing.stepTimeS > 0.0 ? std::int64_t(std::min(9e18, std::floor(duration / timing.stepTimeS))) : 0;
        if (search && !job.replicasNeeded && job.reason.empty())
            job.reason = "no replica count reaches " + formatFixed(search->tokensPerSPerUser, 1)
                + " tokens/s per user on this cluster";
    } else {
        job.memoryxBytes = timing.memoryxBytes;
        job.steps = spec.maxSteps ? *spec.maxSteps
                                  : std::int64_t(std::ceil(*spec.tokens / std::max(1.0, timing.tokensPerStep)));
        duration = timing.firstStepS + double(job.steps - 1) * timing.stepTimeS;
    }
    if (job.reason.empty() && job.memoryxBytes > memoryxBytes)
        job.reason = "its weights and optimizer state take " + formatBytes(job.memoryxBytes)
            + " of MemoryX; the cluster has " + formatBytes(memoryxBytes);
    job.durationS = duration;
    // A job that can never run is left out of the queue: it holds nothing. A sized job holds its
    // sized replicas.
    return { spec.submitS, job.reason.empty() ? job.numCsx * job.replicas : 0,
        job.reason.empty() ? job.memoryxBytes : 0.0, duration, spec.priority };
}

// Every job of the file timed, in file order, with its queue entry.
std::optional<Diagnostic> timeJobs(const JobsFile& file, const ReplicaSearches& sizing, const TimingOf& timingOf,
    const Report& report, ClusterResult& result, std::vector<QueuedJob>& queued)
{
    const int jobCount = int(file.jobs.size());
    for (const JobSpec& spec : file.jobs) {
        report("timing", int(result.jobs.size()), jobCount);
        JobResult job;
        job.name = spec.name;
        job.mode = spec.mode;
        job.numCsx = spec.numCsx;
        job.replicas = spec.replicas;
        job.users = spec.users;
        job.submitS = spec.submitS;
        job.priority = spec.priority;
        // More systems than the cluster has: no engine run can help.
        if (std::int64_t(job.numCsx) * job.replicas > file.cluster.systems) {
            job.reason = "needs " + std::to_string(std::int64_t(job.numCsx) * job.replicas) + " systems ("
                + std::to_string(job.replicas) + " x " + std::to_string(job.numCsx) + "); the cluster has "
                + std::to_string(file.cluster.systems);
            queued.push_back({ spec.submitS, 0, 0.0, 0.0, spec.priority });
            result.jobs.push_back(std::move(job));
            continue;
        }
        const int searchIndex = sizing.ofJob[result.jobs.size()];
        const ReplicaSearch* search = searchIndex < 0 ? nullptr : &sizing.searches[std::size_t(searchIndex)];
        if (search) {
            job.replicasNeeded = replicasNeeded(*search, spec, file.cluster.systems);
            if (job.replicasNeeded)
                job.replicas = *job.replicasNeeded;
        }
        const bool inference = spec.mode == RunMode::Inference;
        Expected<JobTiming> timing = timingOf(spec, inference ? usersPerReplica(spec.users, job.replicas) : 1);
        if (!timing)
            return timing.error();
        queued.push_back(timeJob(job, spec, *timing, search, result.memoryxBytes));
        result.jobs.push_back(std::move(job));
    }
    return std::nullopt;
}

// The schedule's placements into the jobs, and the cluster's makespan and utilization.
void placeJobs(ClusterResult& result, const std::vector<QueuedJob>& queued, const ClusterOptions& options)
{
    const std::vector<std::optional<Placement>> placed
        = scheduleJobs(queued, result.systems, result.memoryxBytes, options.policy);
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
}

} // namespace

Expected<ClusterResult> scheduleCluster(const JobsFile& file, const ClusterOptions& options, TimingCache& cache)
{
    Expected<SystemSpec> system = loadBuiltinPreset(file.cluster.system);
    if (!system)
        return system.error();
    Expected<ClusterResult> header = resultHeader(file, options, *system);
    if (!header)
        return header.error();
    ClusterResult result = std::move(header).value();
    const std::size_t compilesBefore = cache.compiles();
    const std::size_t runsBefore = cache.engineRuns();
    const Report report = [&](const char* phase, int done, int total) {
        result.compiles = cache.compiles() - compilesBefore;
        result.engineRuns = cache.engineRuns() - runsBefore;
        if (options.progress)
            options.progress({ phase, done, total, result.compiles, result.engineRuns });
    };
    const TimingOf timingOf = [&](const JobSpec& spec, int users) {
        return cache.timing(spec, file.path, *system, users, options.calibration, options.cancelled);
    };
    ReplicaSearches sizing = replicaSearches(file, options.sizeInference);
    if (std::optional<Diagnostic> failed = sizeReplicas(sizing.searches, timingOf, report))
        return *failed;
    std::vector<QueuedJob> queued;
    if (std::optional<Diagnostic> failed = timeJobs(file, sizing, timingOf, report, result, queued))
        return *failed;
    const int jobCount = int(file.jobs.size());
    report("scheduling", jobCount, jobCount);
    placeJobs(result, queued, options);
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
