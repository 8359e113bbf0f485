#pragma once

#include "core/cluster/jobsfile.h"
#include "core/common/expected.h"
#include "core/engine/calibration.h"
#include "core/hardware/systemspec.h"

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>

namespace waferscope::core::cluster {

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

// The engine's work for a cluster, kept across the jobs of a file and across reschedules
// (--what_if, the GUI's edits). Each allocation (a model, a mode and num_csx systems of one kind,
// under one calibration) is compiled once, the plan engine::compileRun builds (a speculative
// profile's draft placed beside it); each users-per-replica count on it is one engine run of two
// steps. Not thread-safe: one schedule at a time uses it (the GUI holds it under a mutex).
class TimingCache {
public:
    // The timing of `job` with `users` per replica. Errors are bad input (a params file that does
    // not load, located in `jobsPath`) or "cancelled" (Internal, nothing is cached), never a job
    // that cannot be mapped (that is JobTiming::reason). `cancelled` is asked before any compile
    // or run and by the compiler and the engine while they work.
    Expected<JobTiming> timing(const JobSpec& job, const std::string& jobsPath, const SystemSpec& system, int users,
        const engine::Calibration& calibration, const std::function<bool()>& cancelled);

    // Work done so far: plans compiled, and engine runs on them.
    std::size_t compiles() const { return m_compiles; }
    std::size_t engineRuns() const { return m_runs; }

private:
    struct Loaded;
    struct Compiled;
    using AllocationKey
        = std::tuple<std::string, RunMode, int, std::string>; // params, mode, num_csx, system+calibration
    Expected<std::shared_ptr<const Loaded>> load(const JobSpec& job, const std::string& jobsPath);

    std::map<std::string, std::shared_ptr<const Loaded>> m_models; // by params path
    std::map<AllocationKey, std::shared_ptr<const Compiled>> m_plans;
    std::map<std::tuple<AllocationKey, int>, JobTiming> m_timings; // (allocation, users per replica)
    std::size_t m_compiles = 0;
    std::size_t m_runs = 0;
};

} // namespace waferscope::core::cluster
