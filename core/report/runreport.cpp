// Assembling a run's report from the engine's result, and its CSV and text forms.
#include "core/report/runreport.h"

#include "core/common/sha256.h"
#include "core/common/units.h"

#include "waferscope/version.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <numeric>
#include <sstream>

namespace waferscope::core::report {

namespace {

using Interval = std::pair<double, double>;

// Sorted, disjoint intervals covering the same time as `intervals`.
std::vector<Interval> mergeIntervals(std::vector<Interval> intervals)
{
    std::sort(intervals.begin(), intervals.end());
    std::vector<Interval> merged;
    for (const Interval& interval : intervals) {
        if (interval.second <= interval.first)
            continue;
        if (!merged.empty() && interval.first <= merged.back().second)
            merged.back().second = std::max(merged.back().second, interval.second);
        else
            merged.push_back(interval);
    }
    return merged;
}

double coveredTime(const std::vector<Interval>& merged)
{
    double total = 0.0;
    for (const Interval& interval : merged)
        total += interval.second - interval.first;
    return total;
}

std::vector<double> occupancyProfile(const std::vector<Interval>& merged, double span)
{
    std::vector<double> bins(std::size_t(kOccupancyBins), 0.0);
    if (!(span > 0.0))
        return bins;
    const double width = span / kOccupancyBins;
    for (const Interval& interval : merged) {
        const int first = std::clamp(int(interval.first / width), 0, kOccupancyBins - 1);
        const int last = std::clamp(int(interval.second / width), 0, kOccupancyBins - 1);
        for (int bin = first; bin <= last; ++bin) {
            const double overlap = std::min(interval.second, (bin + 1) * width) - std::max(interval.first, bin * width);
            if (overlap > 0.0)
                bins[std::size_t(bin)] += overlap / width;
        }
    }
    for (double& share : bins)
        share = std::min(1.0, share);
    return bins;
}

// The wafer an event's work ran on: regions carry theirs in the plan, CS-X lanes in the index.
int systemOf(const engine::TimelineEvent& event, const ExecutionPlan& plan)
{
    if (event.lane == engine::LaneKind::Region)
        return event.laneIndex >= 0 && std::size_t(event.laneIndex) < plan.regions.size()
            ? plan.regions[std::size_t(event.laneIndex)].system
            : 0;
    return event.laneIndex;
}

std::vector<LaneReport> laneReports(const engine::RunResult& run, const ExecutionPlan& plan)
{
    struct Accumulated {
        std::vector<Interval> intervals;
        double bytes = 0.0;
        double flops = 0.0;
    };
    std::map<std::pair<int, int>, Accumulated> lanes; // (LaneKind, index): ordered for the report
    for (const engine::TimelineEvent& event : run.timeline.events) {
        Accumulated& lane = lanes[{ int(event.lane), event.laneIndex }];
        lane.intervals.push_back({ event.start, event.end });
        lane.bytes += event.bytes;
        lane.flops += event.flops;
    }
    std::vector<LaneReport> reports;
    const bool inference = run.metrics.mode == RunMode::Inference;
    for (auto& [key, lane] : lanes) {
        const auto kind = engine::LaneKind(key.first);
        const std::vector<Interval> merged = mergeIntervals(std::move(lane.intervals));
        reports.push_back({ kind, key.second, laneName(kind, key.second, plan, inference), coveredTime(merged),
            lane.bytes, lane.flops, occupancyProfile(merged, run.timeline.span) });
    }
    return reports;
}

std::vector<SystemReport> systemReports(const engine::RunResult& run, const ExecutionPlan& plan)
{
    const engine::Metrics& metrics = run.metrics;
    const int count = std::max(1, metrics.numSystems);
    const auto size = std::size_t(count);
    std::vector<std::vector<Interval>> compute(size), io(size);
    std::vector<SystemReport> systems(size);
    for (const engine::TimelineEvent& event : run.timeline.events) {
        const bool isCompute = event.lane == engine::LaneKind::CsxCompute || event.lane == engine::LaneKind::Region;
        if (!isCompute && event.lane != engine::LaneKind::CsxIo)
            continue;
        const int system = systemOf(event, plan);
        if (system < 0 || system >= count)
            continue;
        SystemReport& report = systems[std::size_t(system)];
        if (isCompute) {
            compute[std::size_t(system)].push_back({ event.start, event.end });
            report.flops += event.flops;
        } else {
            io[std::size_t(system)].push_back({ event.start, event.end });
            report.ioBytes += event.bytes;
        }
    }
    const double peakPerSystem = metrics.peakFlopsPerS / count;
    // Data-parallel training simulates system 0; the others run the same schedule.
    const bool dataParallel = metrics.mode != RunMode::Inference && count > 1;
    for (int s = 0; s < count; ++s) {
        SystemReport& report = systems[std::size_t(s)];
        report.index = s;
        if (dataParallel && s > 0) {
            report = systems[0];
            report.index = s;
            report.sameScheduleAs0 = true;
            continue;
        }
        report.computeBusyS = coveredTime(mergeIntervals(std::move(compute[std::size_t(s)])));
        report.ioBusyS = coveredTime(mergeIntervals(std::move(io[std::size_t(s)])));
        const double available = peakPerSystem * run.timeline.span;
        report.computeUtilization = available > 0.0 ? report.flops / available : 0.0;
    }
    return systems;
}

std::vector<RegionReport> regionReports(const engine::Metrics& metrics, const ExecutionPlan& plan)
{
    std::vector<RegionReport> regions;
    std::vector<std::map<Bound, double>> boundTime(plan.regions.size());
    for (const Region& region : plan.regions)
        regions.push_back({ region.opName, region.stage, region.system, region.replica, region.rect,
            region.sramBytesPerPe, 0.0, 0.0, 0.0, Bound::None });
    for (const engine::LayerMetrics& layer : metrics.layers) {
        if (layer.region < 0 || std::size_t(layer.region) >= regions.size())
            continue;
        RegionReport& region = regions[std::size_t(layer.region)];
        region.timeS += layer.timeS;
        region.flops += layer.flops;
        region.utilization += layer.utilization * layer.timeS;
        boundTime[std::size_t(layer.region)][layer.bound] += layer.timeS;
    }
    for (std::size_t r = 0; r < regions.size(); ++r) {
        RegionReport& region = regions[r];
        region.utilization = region.timeS > 0.0 ? region.utilization / region.timeS : 0.0;
        double most = -1.0;
        for (const auto& [bound, time] : boundTime[r])
            if (time > most) {
                most = time;
                region.bound = bound;
            }
    }
    return regions;
}

} // namespace

std::string laneName(engine::LaneKind lane, int index, const ExecutionPlan& plan, bool inference)
{
    const std::string system = (inference ? "wafer " : "CS-X ") + std::to_string(index);
    switch (lane) {
    case engine::LaneKind::MemoryX:
        return "MemoryX";
    case engine::LaneKind::SwarmX:
        return "SwarmX";
    case engine::LaneKind::CsxIo:
        return system + " I/O";
    case engine::LaneKind::CsxCompute:
        return system + " wafer";
    case engine::LaneKind::WaferLink:
        return "link " + std::to_string(index) + " -> " + std::to_string(index + 1);
    case engine::LaneKind::Region:
        if (index >= 0 && std::size_t(index) < plan.regions.size())
            return "region " + std::to_string(index) + " " + plan.regions[std::size_t(index)].opName;
        return "region " + std::to_string(index);
    }
    return "lane";
}

std::string utcTimestamp()
{
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm utc {};
    gmtime_r(&now, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

namespace {

// The manifest of buildReport: the options as the engine resolved them, stamped now.
Manifest makeManifest(const std::string& inputPath, const std::string& inputBytes, const ModelGraph& graph,
    const CompileOptions& compileOptions, const engine::RunOptions& runOptions, const engine::Metrics& metrics)
{
    Manifest m;
    m.version = kVersion;
    m.createdUtc = utcTimestamp();
    m.inputPath = inputPath;
    m.inputSha256 = sha256Hex(inputBytes);
    m.model = graph.config.name;
    m.system = metrics.system;
    m.numCsx = metrics.numCsx;
    m.mode = runOptions.mode;
    m.executionRequested = compileOptions.execution;
    m.maxSteps = runOptions.maxSteps;
    const bool inference = runOptions.mode == engine::RunMode::Inference;
    m.globalBatch = inference ? 0 : runOptions.globalBatch > 0 ? runOptions.globalBatch : graph.config.batchSize;
    m.users = runOptions.users;
    m.promptTokens = inference ? metrics.promptTokens : 0;
    m.calibrationVersion = engine::builtinCalibration().version;
    m.calibrationProfile = metrics.calibrationProfile;
    m.seed = 0;
    return m;
}

// The report of the run under `manifest`.
RunReport makeReport(const Manifest& manifest, const engine::RunResult& run, const ExecutionPlan& plan,
    const ModelGraph& graph, const SystemSpec& system, const sweeps::ScalingSweep* sweep,
    const engine::Calibration& calibration)
{
    RunReport report;
    report.manifest = manifest;
    report.plan = { plan.mode, plan.fabricWidth, plan.fabricHeight, plan.usable, plan.replicas, plan.stages,
        plan.peUtilization, plan.sramUtilization, plan.notes };
    report.metrics = run.metrics;
    report.regions = regionReports(run.metrics, plan);
    report.systems = systemReports(run, plan);
    report.lanes = laneReports(run, plan);
    report.spanS = run.timeline.span;
    report.steps = engine::stepFigures(engine::FrameSource(plan, graph, system, run, calibration), run.metrics);
    if (sweep)
        report.scaling = *sweep;
    return report;
}

} // namespace

RunReport buildReport(const ReportInputs& in)
{
    RunReport report = makeReport(
        makeManifest(in.inputPath, in.inputBytes, in.graph, in.compileOptions, in.runOptions, in.run.metrics), in.run,
        in.plan, in.graph, in.system, in.sweep, in.calibration);
    report.manifest.seed = in.seed;
    if (in.cycleLevel)
        report.cycleLevel = cycleLevelReport(*in.cycleLevel);
    if (in.sensitivity)
        report.sensitivity = *in.sensitivity;
    return report;
}

} // namespace waferscope::core::report
