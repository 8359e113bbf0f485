#include "core/report/chrometrace.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace waferscope::core::report {

namespace {

// Process ids: fixed ones for the shared resources, then one per CS-X system or wafer.
constexpr int kMemoryxPid = 1;
constexpr int kSwarmxPid = 2;
constexpr int kLinksPid = 3;
constexpr int kFirstSystemPid = 10;
constexpr std::size_t kChunkBytes = 1 << 20; // handed to the sink at a time

// Where each lane goes in the trace, and the names of the processes and threads used.
class LaneMap {
public:
    LaneMap(const engine::Metrics& metrics, const ExecutionPlan* plan)
        : m_metrics(metrics)
        , m_plan(plan)
        , m_inference(metrics.mode == RunMode::Inference)
    {
    }

    std::pair<int, int> place(const engine::TimelineEvent& event)
    {
        using engine::LaneKind;
        switch (event.lane) {
        case LaneKind::MemoryX:
            return name(kMemoryxPid, 0, "MemoryX", "stream and optimizer");
        case LaneKind::SwarmX:
            return name(kSwarmxPid, 0, "SwarmX", "broadcast and reduce");
        case LaneKind::WaferLink:
            return name(kLinksPid, event.laneIndex, "inter-wafer links",
                "link " + std::to_string(event.laneIndex) + " -> " + std::to_string(event.laneIndex + 1));
        case LaneKind::CsxIo:
        case LaneKind::CsxCompute: {
            const std::string system = "CS-X " + std::to_string(event.laneIndex);
            const bool dataParallel = m_metrics.numSystems > 1 && !m_inference;
            return name(kFirstSystemPid + event.laneIndex, event.lane == LaneKind::CsxIo ? 0 : 1,
                dataParallel ? system + " (each of " + std::to_string(m_metrics.numSystems) + " runs the same schedule)"
                             : system,
                event.lane == LaneKind::CsxIo ? "I/O" : "wafer");
        }
        case LaneKind::Region: {
            const Region* region
                = m_plan && event.laneIndex >= 0 && std::size_t(event.laneIndex) < m_plan->regions.size()
                ? &m_plan->regions[std::size_t(event.laneIndex)]
                : nullptr;
            const int wafer = region ? region->system : 0;
            const std::string lane = "region " + std::to_string(event.laneIndex);
            return name(kFirstSystemPid + wafer, 2 + event.laneIndex,
                (m_inference ? "wafer " : "CS-X ") + std::to_string(wafer),
                region ? lane + " " + region->opName : lane);
        }
        }
        return { kFirstSystemPid, 0 };
    }

    // Metadata events naming every process (with its sort order) and thread seen so far.
    nlohmann::ordered_json metadata() const
    {
        nlohmann::ordered_json list = nlohmann::ordered_json::array();
        for (const auto& [pid, process] : m_processes) {
            list.push_back(
                { { "name", "process_name" }, { "ph", "M" }, { "pid", pid }, { "args", { { "name", process } } } });
            list.push_back({ { "name", "process_sort_index" }, { "ph", "M" }, { "pid", pid },
                { "args", { { "sort_index", pid } } } });
        }
        for (const auto& [key, thread] : m_threads)
            list.push_back({ { "name", "thread_name" }, { "ph", "M" }, { "pid", key.first }, { "tid", key.second },
                { "args", { { "name", thread } } } });
        return list;
    }

private:
    std::pair<int, int> name(int pid, int tid, const std::string& process, const std::string& thread)
    {
        m_processes.try_emplace(pid, process);
        m_threads.try_emplace({ pid, tid }, thread);
        return { pid, tid };
    }

    const engine::Metrics& m_metrics;
    const ExecutionPlan* m_plan;
    bool m_inference;
    std::map<int, std::string> m_processes;
    std::map<std::pair<int, int>, std::string> m_threads;
};

void appendNumber(std::string& out, double value)
{
    if (!std::isfinite(value)) {
        out += "null";
        return;
    }
    char digits[32];
    const auto result = std::to_chars(digits, digits + sizeof digits, value); // shortest exact form
    out.append(digits, result.ptr);
}

} // namespace

void writeChromeTrace(const engine::RunResult& run, const ExecutionPlan* plan,
    const std::function<void(std::string_view)>& sink, int indent)
{
    const engine::Metrics& metrics = run.metrics;
    // The events are written as text, not built as a JSON tree: a long run has millions of
    // them, and a tree would need gigabytes. A first pass names the lanes for the metadata.
    LaneMap lanes(metrics, plan);
    for (const engine::TimelineEvent& event : run.timeline.events)
        lanes.place(event);
    std::vector<std::string> layerNames; // quoted once, used by every event of the layer
    for (const engine::LayerMetrics& layer : metrics.layers)
        layerNames.push_back(nlohmann::json(layer.name).dump());
    const std::string separator = indent >= 0 ? ",\n" : ",";

    std::string out = "{\"traceEvents\":[";
    bool first = true;
    const auto next = [&] {
        if (!first)
            out += separator;
        first = false;
    };
    for (const nlohmann::ordered_json& entry : lanes.metadata()) {
        next();
        out += entry.dump();
    }
    for (const engine::TimelineEvent& event : run.timeline.events) {
        const auto [pid, tid] = lanes.place(event);
        const bool layered = event.layer >= 0 && std::size_t(event.layer) < metrics.layers.size();
        const std::string phase = engine::toString(event.phase);
        next();
        out += "{\"name\":";
        out += layered ? layerNames[std::size_t(event.layer)] : "\"" + phase + "\"";
        out += ",\"cat\":\"" + phase + "\",\"ph\":\"X\",\"ts\":";
        appendNumber(out, event.start * 1e6);
        out += ",\"dur\":";
        appendNumber(out, (event.end - event.start) * 1e6);
        out += ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"bytes\":";
        appendNumber(out, event.bytes);
        out += ",\"flops\":";
        appendNumber(out, event.flops);
        out += ",\"iteration\":" + std::to_string(event.iteration)
            + ",\"micro_batch\":" + std::to_string(event.microBatch);
        if (layered) {
            out += ",\"layer\":";
            out += layerNames[std::size_t(event.layer)];
        }
        out += "}}";
        if (out.size() >= kChunkBytes) {
            sink(out);
            out.clear();
        }
    }
    const nlohmann::ordered_json otherData = { { "generator", "WaferScope" }, { "mode", toString(metrics.mode) },
        { "execution", toString(metrics.execution) }, { "system", metrics.system }, { "num_csx", metrics.numCsx } };
    out += "],\"displayTimeUnit\":\"ms\",\"otherData\":" + otherData.dump() + "}\n";
    sink(out);
}

std::string chromeTrace(const engine::RunResult& run, const ExecutionPlan* plan, int indent)
{
    std::string trace;
    writeChromeTrace(
        run, plan, [&](std::string_view chunk) { trace += chunk; }, indent);
    return trace;
}

} // namespace waferscope::core::report
