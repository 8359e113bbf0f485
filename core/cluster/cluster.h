#pragma once

#include "core/cluster/jobsfile.h"
#include "core/cluster/scheduler.h"
#include "core/common/expected.h"
#include "core/engine/calibration.h"
#include "core/hardware/systemspec.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace waferscope::core::cluster {

// A jobs file scheduled on its cluster (`waferscope-cli cluster`, the GUI's Cluster dock). Each
// job's step time comes from the model-level engine for its exact allocation: the plan
// engine::compileFor builds for num_csx systems (inference: the wafers the model needs, which
// num_csx must hold), run for two steps.

// What the engine gives for one model on one allocation.
struct JobTiming {
    std::string reason; // why it can never run (cannot be mapped); empty when it can
    std::string execution; // "weight_streaming", "pipelined", "inference"
    int systemsUsed = 0; // of the plan (inference: wafers, a draft model's included)
    double firstStepS = 0.0; // training: the first step, the stream's or pipeline's fill included
    double stepTimeS = 0.0; // the steady step (inference: one decode step)
    double tokensPerStep = 0.0;
    double tokensPerS = 0.0; // training: tokens/s; inference: per user
    double aggregateTokensPerS = 0.0; // inference: all users of the replica
    double memoryxBytes = 0.0; // training: weights and optimizer state held in MemoryX
};

// One job as scheduled.
struct JobResult {
    std::string name;
    RunKind mode = RunKind::Train;
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
};

struct ClusterOptions {
    Policy policy = Policy::Backfill;
    // Inference jobs with tokens_per_s_per_user run with the fewest replicas that give each user
    // that rate; a job that no count the cluster holds can serve so gets a reason and never runs.
    bool sizeInference = false;
    engine::Calibration calibration = engine::builtinCalibration();
    std::function<bool()> cancelled; // asked between engine runs; true ends with "cancelled"
};

// Engine runs, kept for jobs that share a model, a mode and an allocation (and, for inference,
// users per replica), and across reschedules (--what_if, the GUI's edits).
class TimingCache {
public:
    // The timing of `job` with `users` per replica; errors are bad input (a params file that does
    // not load, located), never a job that cannot be mapped (that is JobTiming::reason).
    Expected<JobTiming> timing(const JobSpec& job, const std::string& jobsPath, const SystemSpec& system, int users,
        const ClusterOptions& options);
    std::size_t engineRuns() const { return m_runs; }

private:
    struct Loaded;
    std::map<std::string, std::shared_ptr<Loaded>> m_models;
    // (params, mode, num_csx, users per replica, system and calibration) -> timing
    std::map<std::tuple<std::string, RunKind, int, int, std::string>, JobTiming> m_timings;
    std::size_t m_runs = 0;
};

// Schedules the file's jobs. Errors: the cluster's system (or its size) is not a valid cluster,
// a params file does not load, or the run was cancelled.
Expected<ClusterResult> scheduleCluster(const JobsFile& file, const ClusterOptions& options, TimingCache& cache);

// `--what_if JOB=N[,JOB=N...]`: the file with those jobs' num_csx changed. Errors name the job
// that is not in the file.
Expected<JobsFile> withNumCsx(const JobsFile& file, const std::vector<std::pair<std::string, int>>& changes);

// The JSON of `waferscope-cli cluster --json` (and cluster.json): systems, policy, notes,
// makespan_s, utilization, jobs[]; `whatIf`, when given, under "what_if".
std::string clusterToJson(const ClusterResult& result, const ClusterResult* whatIf = nullptr,
    const std::vector<std::pair<std::string, int>>& changes = {}, int indent = 2);

} // namespace waferscope::core::cluster
