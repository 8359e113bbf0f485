#include "core/report/chrometrace.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <utility>

namespace waferscope::core::report {

namespace {

// Process ids: fixed ones for the shared resources, then one per CS-X system or wafer.
constexpr int kMemoryxPid = 1;
constexpr int kSwarmxPid = 2;
constexpr int kLinksPid = 3;
constexpr int kFirstSystemPid = 10;

} // namespace

std::string chromeTrace(const engine::RunResult& run, const ExecutionPlan* plan, int indent)
{
    using engine::LaneKind;
    const engine::Metrics& metrics = run.metrics;
    const bool inference = metrics.mode == "inference";
    std::map<int, std::string> processes;
    std::map<std::pair<int, int>, std::string> threads;
    nlohmann::ordered_json events = nlohmann::ordered_json::array();

    for (const engine::TimelineEvent& event : run.timeline.events) {
        int pid = kFirstSystemPid;
        int tid = 0;
        switch (event.lane) {
        case LaneKind::MemoryX:
            pid = kMemoryxPid;
            processes[pid] = "MemoryX";
            threads[{ pid, tid }] = "stream and optimizer";
            break;
        case LaneKind::SwarmX:
            pid = kSwarmxPid;
            processes[pid] = "SwarmX";
            threads[{ pid, tid }] = "broadcast and reduce";
            break;
        case LaneKind::WaferLink:
            pid = kLinksPid;
            tid = event.laneIndex;
            processes[pid] = "inter-wafer links";
            threads[{ pid, tid }]
                = "link " + std::to_string(event.laneIndex) + " -> " + std::to_string(event.laneIndex + 1);
            break;
        case LaneKind::CsxIo:
        case LaneKind::CsxCompute: {
            pid = kFirstSystemPid + event.laneIndex;
            tid = event.lane == LaneKind::CsxIo ? 0 : 1;
            processes[pid] = metrics.numSystems > 1 && !inference ? "CS-X " + std::to_string(event.laneIndex)
                    + " (each of " + std::to_string(metrics.numSystems) + " runs the same schedule)"
                                                                  : "CS-X " + std::to_string(event.laneIndex);
            threads[{ pid, tid }] = tid == 0 ? "I/O" : "wafer";
            break;
        }
        case LaneKind::Region: {
            const Region* region = plan && event.laneIndex >= 0 && std::size_t(event.laneIndex) < plan->regions.size()
                ? &plan->regions[std::size_t(event.laneIndex)]
                : nullptr;
            const int wafer = region ? region->system : 0;
            pid = kFirstSystemPid + wafer;
            tid = 2 + event.laneIndex;
            processes[pid] = (inference ? "wafer " : "CS-X ") + std::to_string(wafer);
            threads[{ pid, tid }] = region ? "region " + std::to_string(event.laneIndex) + " " + region->opName
                                           : "region " + std::to_string(event.laneIndex);
            break;
        }
        }
        const bool layered = event.layer >= 0 && std::size_t(event.layer) < metrics.layers.size();
        nlohmann::ordered_json args = { { "bytes", event.bytes }, { "flops", event.flops },
            { "iteration", event.iteration }, { "micro_batch", event.microBatch } };
        if (layered)
            args["layer"] = metrics.layers[std::size_t(event.layer)].name;
        events.push_back(
            { { "name", layered ? metrics.layers[std::size_t(event.layer)].name : engine::toString(event.phase) },
                { "cat", engine::toString(event.phase) }, { "ph", "X" }, { "ts", event.start * 1e6 },
                { "dur", (event.end - event.start) * 1e6 }, { "pid", pid }, { "tid", tid },
                { "args", std::move(args) } });
    }

    nlohmann::ordered_json trace;
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const auto& [pid, name] : processes) {
        all.push_back({ { "name", "process_name" }, { "ph", "M" }, { "pid", pid }, { "args", { { "name", name } } } });
        all.push_back(
            { { "name", "process_sort_index" }, { "ph", "M" }, { "pid", pid }, { "args", { { "sort_index", pid } } } });
    }
    for (const auto& [key, name] : threads)
        all.push_back({ { "name", "thread_name" }, { "ph", "M" }, { "pid", key.first }, { "tid", key.second },
            { "args", { { "name", name } } } });
    for (auto& event : events)
        all.push_back(std::move(event));
    trace["traceEvents"] = std::move(all);
    trace["displayTimeUnit"] = "ms";
    trace["otherData"] = { { "generator", "WaferScope" }, { "mode", metrics.mode }, { "execution", metrics.execution },
        { "system", metrics.system }, { "num_csx", metrics.numCsx } };
    return trace.dump(indent);
}

} // namespace waferscope::core::report
