// The JSON of a schedule: `waferscope-cli cluster --json` and cluster.json. The keys are a
// contract.
#include "core/cluster/cluster.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace waferscope::core::cluster {

namespace {

using Json = nlohmann::ordered_json;

Json number(double value)
{
    return std::isfinite(value) ? Json(value) : Json(nullptr);
}

Json optional(const std::optional<double>& value)
{
    return value ? number(*value) : Json(nullptr);
}

Json jobJson(const JobResult& job)
{
    const bool inference = job.mode == RunMode::Inference;
    Json json = { { "name", job.name }, { "mode", toString(job.mode) }, { "num_csx", job.numCsx },
        { "replicas", job.replicas }, { "users", job.users }, { "submit_s", number(job.submitS) },
        { "start_s", optional(job.startS) }, { "end_s", optional(job.endS) }, { "wait_s", optional(job.waitS) },
        { "duration_s", optional(job.durationS) }, { "step_time_s", number(job.stepTimeS) }, { "steps", job.steps },
        { "tokens_per_s", number(job.tokensPerS) }, { "reason", job.reason.empty() ? Json(nullptr) : Json(job.reason) },
        { "priority", job.priority }, { "execution", job.execution.empty() ? Json(nullptr) : Json(job.execution) },
        { "memoryx_bytes", number(job.memoryxBytes) }, { "systems_held", job.systems } };
    if (inference) {
        json["aggregate_tokens_per_s"] = number(job.aggregateTokensPerS);
        json["users_per_replica"] = job.usersPerReplica ? Json(*job.usersPerReplica) : Json(nullptr);
        json["replicas_needed"] = job.replicasNeeded ? Json(*job.replicasNeeded) : Json(nullptr);
    }
    return json;
}

Json scheduleJson(const ClusterResult& result)
{
    Json jobs = Json::array();
    for (const JobResult& job : result.jobs)
        jobs.push_back(jobJson(job));
    return { { "system", result.system }, { "systems", result.systems },
        { "memoryx_bytes", number(result.memoryxBytes) }, { "policy", toString(result.policy) },
        { "notes", result.notes }, { "makespan_s", optional(result.makespanS) },
        { "utilization", optional(result.utilization) }, { "jobs", std::move(jobs) },
        { "work", { { "compiles", result.compiles }, { "engine_runs", result.engineRuns } } } };
}

} // namespace

std::string clusterToJson(const ClusterResult& result, const ClusterResult* whatIf,
    const std::vector<std::pair<std::string, int>>& changes, int indent)
{
    Json json = scheduleJson(result);
    if (whatIf) {
        Json changed = Json::object();
        for (const auto& [name, numCsx] : changes)
            changed[name] = numCsx;
        Json alternative = scheduleJson(*whatIf);
        alternative.erase("notes");
        Json what = { { "num_csx", std::move(changed) } };
        for (auto& [key, value] : alternative.items())
            what[key] = value;
        json["what_if"] = std::move(what);
    }
    return json.dump(indent) + "\n";
}

} // namespace waferscope::core::cluster
