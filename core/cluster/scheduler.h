#pragma once

#include "core/common/names.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::core::cluster {

// The appliance's scheduler on its own, over jobs whose durations are known: which systems each
// job gets and when. A job runs when enough systems (and, for training, enough MemoryX) are free;
// once started it runs to the end (no preemption).
//
// Waiting jobs are ordered by priority (higher first), then submit time, then file order. FIFO
// starts jobs in that order and stops at the first that does not fit. EASY backfill does the
// same, then reserves for the job at the head of the queue the earliest time enough resources
// will be free for it (its shadow time), and starts a later job now when it fits now and either
// ends by the shadow time or uses only what the head will not need then: the head of the queue
// is never delayed.
enum class Policy { Fifo, Backfill };
const char* toString(Policy policy); // "fifo", "backfill"

} // namespace waferscope::core::cluster

namespace waferscope::core {
template <>
std::span<const EnumName<cluster::Policy>> nameTable<cluster::Policy>();
} // namespace waferscope::core

namespace waferscope::core::cluster {

struct QueuedJob {
    double submitS = 0.0;
    int systems = 1; // systems it holds while it runs (num_csx x replicas)
    double memoryxBytes = 0.0; // MemoryX it holds while it runs (training: weights + optimizer state)
    double durationS = 0.0;
    int priority = 0;
};

struct Placement {
    double startS = 0.0;
    double endS = 0.0;
    std::vector<int> systems; // the system indices it holds, ascending
};

// One placement per job, in the order given. Every job must fit the cluster alone (the caller
// leaves out the jobs that never can); an empty optional marks one that does not.
std::vector<std::optional<Placement>> scheduleJobs(
    const std::vector<QueuedJob>& jobs, int systems, double memoryxBytes, Policy policy);

} // namespace waferscope::core::cluster
