#pragma once

#include "core/cluster/jobsfile.h"
#include "core/cluster/scheduler.h"
#include "core/cluster/timingcache.h"
#include "core/common/expected.h"
#include "core/engine/calibration.h"
#include "core/hardware/systemspec.h"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::core::cluster {

// A jobs file scheduled on its cluster (`waferscope-cli cluster`, the GUI's Cluster dock). Each
// job's step time comes from the model-level engine for its exact allocation: the plan
// engine::compileRun builds for num_csx systems (inference: the wafers the model needs, which
// num_csx must hold), run for two steps (TimingCache: one compile per allocation, one run per
// users-per-replica count on it).

// One job as scheduled.
struct JobResult {
    std::string name;
    RunMode mode = RunMode::Train;
    int numCsx = 1;
    int replicas = 1;
    int users = 1;
    double submitS = 0.0;
    int priority = 0;
    // Null when the job never runs.
    std::optional<double> startS;
    std::optional<double> endS;
    std::optional<double> waitS;
    std::optional<double> durationS;
    double stepTimeS = 0.0; // the steady step
    std::int64_t steps = 0; // training: steps run; inference: decode steps in the service
    double tokensPerS = 0.0; // training: tokens/s; inference: per user
    double aggregateTokensPerS = 0.0; // inference: all users over every replica
    double memoryxBytes = 0.0;
    std::string execution;
    std::vector<int> systems; // held while it runs
    std::string reason; // why it never runs; empty when it runs
    // --size_inference, for an inference job with tokens_per_s_per_user: the fewest replicas
    // that give each user the target (null when none can), and each replica's users then.
    std::optional<int> replicasNeeded;
    std::optional<int> usersPerReplica;
};

struct ClusterResult {
    std::string system; // preset key
    int systems = 0;
    double memoryxBytes = 0.0; // the capacity scheduled against
    Policy policy = Policy::Backfill;
    std::vector<std::string> notes; // assumptions and choices
    std::optional<double> firstSubmitS; // of the jobs that run: where the makespan starts
    std::optional<double> makespanS; // the last end minus the first submit, of the jobs that run
    std::optional<double> utilization; // sum of systems x (end - start) / (systems x makespan)
    std::vector<JobResult> jobs; // in file order
    // The engine work this schedule took (less when its TimingCache held timings already).
    std::size_t compiles = 0;
    std::size_t engineRuns = 0;
};

// Where a schedule is, for a progress line: "sizing" (done of total replica searches, one per
// model, allocation and target), "timing" (jobs), then "scheduling".
struct ClusterProgress {
    const char* phase = "";
    int done = 0;
    int total = 0;
    std::size_t compiles = 0; // so far in this schedule
    std::size_t engineRuns = 0;
};

struct ClusterOptions {
    Policy policy = Policy::Backfill;
    // Inference jobs with tokens_per_s_per_user run with the fewest replicas that give each user
    // that rate; a job that no count the cluster holds can serve so gets a reason and never runs.
    bool sizeInference = false;
    engine::Calibration calibration = engine::builtinCalibration();
    std::function<bool()> cancelled; // asked between engine runs; true ends with "cancelled"
    // Called on the scheduling thread after each engine timing asked for (a cached one included)
    // and at each phase; may be null.
    std::function<void(const ClusterProgress&)> progress;
};

// Schedules the file's jobs. Errors: the cluster's system (or its size) is not a valid cluster,
// a params file does not load, or the run was cancelled.
//
// --size_inference asks, for each model, allocation and tokens_per_s_per_user target, the largest
// users-per-replica count whose per-user rate meets the target: a binary search over 1 to the
// most users a job of that kind has (per-user rates fall as a replica serves more users), so
// at most floor(log2(most users)) + 1 engine runs whatever the number of jobs. Each job then needs
// ceil(users / that count) replicas, and one more run at its own users per replica when no search
// step ran it.
Expected<ClusterResult> scheduleCluster(const JobsFile& file, const ClusterOptions& options, TimingCache& cache);

// `--what_if JOB=N[,JOB=N...]`: the file with those jobs' num_csx changed. Errors name the job
// that is not in the file.
Expected<JobsFile> withNumCsx(const JobsFile& file, const std::vector<std::pair<std::string, int>>& changes);

// The JSON of `waferscope-cli cluster --json` (and cluster.json): systems, policy, notes,
// makespan_s, utilization, jobs[], work {compiles, engine_runs}; `whatIf`, when given, under
// "what_if".
std::string clusterToJson(const ClusterResult& result, const ClusterResult* whatIf = nullptr,
    const std::vector<std::pair<std::string, int>>& changes = {}, int indent = 2);

} // namespace waferscope::core::cluster
