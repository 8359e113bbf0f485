// A schedule's report files: report.html (a Gantt chart of the systems over time and the jobs
// table) and trace.json (a Chrome trace with one track per system).
#include "core/cluster/clusterreport.h"

#include "core/common/units.h"
#include "core/report/htmlreport.h"
#include "core/report/reportformat.h"
#include "core/report/svgparts.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace waferscope::core::cluster {

namespace {

using namespace report::svg;
using report::ReportDocument;
using report::ReportSection;
using report::ReportTable;

// Twelve colours that stay apart on white; jobs take them in file order.
constexpr const char* kJobColours[] = { "#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#c53030", "#319795", "#d69e2e",
    "#d53f8c", "#4a5568", "#2c7a7b", "#9c4221", "#553c9a" };

std::string jobColour(std::size_t index)
{
    return kJobColours[index % std::size(kJobColours)];
}

std::string maybeSeconds(const std::optional<double>& value)
{
    return value ? formatSeconds(*value) : "-";
}

// Runs of consecutive indices: [first, count].
std::vector<std::pair<int, int>> runsOf(const std::vector<int>& systems)
{
    std::vector<std::pair<int, int>> runs;
    for (int s : systems) {
        if (!runs.empty() && runs.back().first + runs.back().second == s)
            ++runs.back().second;
        else
            runs.push_back({ s, 1 });
    }
    return runs;
}

// Systems down, time across: each job a bar over the systems it holds, from its start to its end;
// below, the queue: each job's wait from its submission to its start.
std::string ganttSvg(const ClusterResult& result)
{
    if (!result.makespanS || !(*result.makespanS > 0.0))
        return messageSvg("No job runs, so there is nothing to draw.");
    constexpr double kLeft = 70, kPlot = 640, kTop = 30, kWidth = 740;
    const double pitch = std::clamp(420.0 / double(std::max(1, result.systems)), 1.0, 14.0);
    const double systemsHeight = pitch * double(result.systems);
    const double first = result.firstSubmitS.value_or(0.0);
    const double span = *result.makespanS;
    const auto x = [&](double t) { return kLeft + kPlot * (t - first) / span; };
    std::vector<const JobResult*> waited;
    for (const JobResult& job : result.jobs)
        if (job.waitS && *job.waitS > 0.0)
            waited.push_back(&job);
    const double queuePitch = waited.empty() ? 0.0 : std::clamp(120.0 / double(waited.size()), 2.0, 10.0);
    const double queueTop = kTop + systemsHeight + 24;
    const double axisY = queueTop + queuePitch * double(waited.size()) + 8;
    double legendWidth = 0.0;
    for (const JobResult& job : result.jobs)
        if (job.startS)
            legendWidth += 26 + 6.5 * double(shortened(job.name, 24).size());
    const double legendRows = std::min(6.0, std::ceil(legendWidth / (kWidth - kLeft)));
    std::string svg = svgOpen(kWidth, axisY + 44 + 16 * legendRows);
    svg += text(kLeft, 18, "systems over time (" + std::to_string(result.systems) + " x " + result.system + ")");
    // Time axis with gridlines, in hours, minutes or seconds as the span reads best.
    const double unit = span >= 7200.0 ? 3600.0 : span >= 120.0 ? 60.0 : 1.0;
    const char* unitName = unit == 3600.0 ? "hours" : unit == 60.0 ? "minutes" : "seconds";
    const double step = niceStep(span / unit, 6);
    for (double t = 0.0; t <= span / unit * (1.0 + 1e-9); t += step) {
        svg += line(x(first + t * unit), kTop, x(first + t * unit), axisY, stroke(kGridColour));
        svg += text(x(first + t * unit), axisY + 14, tickLabel(t, step), "text-anchor=\"middle\"");
    }
    svg += text(
        kLeft + kPlot / 2, axisY + 30, std::string(unitName) + " from the first submission", "text-anchor=\"middle\"");
    // System labels on a few rows.
    const int labelEvery = std::max(1, int(std::ceil(11.0 / pitch)));
    for (int s = 0; s < result.systems; s += labelEvery)
        svg += text(kLeft - 6, kTop + pitch * (s + 0.5) + 4, std::to_string(s), "text-anchor=\"end\" font-size=\"9\"");
    svg += rect(kLeft, kTop, kPlot, systemsHeight, "fill=\"none\" " + stroke(kAxisColour, 0.5));
    for (std::size_t j = 0; j < result.jobs.size(); ++j) {
        const JobResult& job = result.jobs[j];
        if (!job.startS)
            continue;
        for (const auto& [firstSystem, count] : runsOf(job.systems))
            svg += rect(x(*job.startS), kTop + pitch * firstSystem, x(*job.endS) - x(*job.startS), pitch * count,
                "fill=\"" + jobColour(j) + "\" " + stroke("#ffffff", 0.3),
                job.name + ": " + formatSeconds(*job.startS) + " to " + formatSeconds(*job.endS) + " on "
                    + std::to_string(job.systems.size()) + " systems");
    }
    if (!waited.empty()) {
        svg += text(kLeft - 6, queueTop - 4, "queue", "text-anchor=\"end\"");
        for (std::size_t q = 0; q < waited.size(); ++q) {
            const JobResult& job = *waited[q];
            const std::size_t index = std::size_t(&job - result.jobs.data());
            svg += rect(x(job.submitS), queueTop + queuePitch * double(q), x(*job.startS) - x(job.submitS),
                std::max(1.0, queuePitch - 1.0), "fill=\"" + jobColour(index) + "\" fill-opacity=\"0.35\"",
                job.name + " waits " + formatSeconds(*job.waitS));
        }
    }
    // A legend of the jobs that ran, in rows, when they are few enough to name.
    double legendX = kLeft;
    double legendY = axisY + 48;
    int named = 0;
    for (std::size_t j = 0; j < result.jobs.size() && named < 24; ++j) {
        if (!result.jobs[j].startS)
            continue;
        const std::string label = shortened(result.jobs[j].name, 24);
        const double width = 26 + 6.5 * double(label.size());
        if (legendX + width > kWidth) {
            legendX = kLeft;
            legendY += 16;
        }
        svg += legend({ { label, jobColour(j) } }, legendX, legendY);
        legendX += width;
        ++named;
    }
    return svg + "</svg>";
}

ReportTable jobsTable(const ClusterResult& result)
{
    std::vector<std::vector<std::string>> rows;
    for (const JobResult& job : result.jobs)
        rows.push_back(
            { job.name, toString(job.mode), std::to_string(job.numCsx) + " x " + std::to_string(job.replicas),
                formatSeconds(job.submitS), maybeSeconds(job.startS), maybeSeconds(job.endS), maybeSeconds(job.waitS),
                job.stepTimeS > 0.0 ? formatSeconds(job.stepTimeS) : "-", std::to_string(job.steps),
                job.reason.empty() ? "runs" : job.reason });
    return ReportTable { { "Job", "Mode", "Systems (num_csx x replicas)", "Submitted", "Starts", "Ends", "Waits",
                             "Step", "Steps", "" },
        "llnnnnnnnl", rows, "The jobs file lists no jobs." };
}

} // namespace

report::ReportDocument clusterDocument(const ClusterResult& result, const std::string& jobsPath)
{
    ReportDocument document;
    document.title = "WaferScope cluster schedule: " + std::to_string(result.systems) + " x " + result.system;
    document.subtitle = "From " + jobsPath;
    int runs = 0;
    for (const JobResult& job : result.jobs)
        runs += job.startS ? 1 : 0;
    ReportSection figures;
    figures.id = "key_figures";
    figures.title = "Key figures";
    figures.table.align = "ll";
    figures.table.rows = { { "Policy", toString(result.policy) },
        { "Systems", std::to_string(result.systems) + " x " + result.system },
        { "MemoryX", formatBytes(result.memoryxBytes) },
        { "Jobs that run", std::to_string(runs) + " of " + std::to_string(result.jobs.size()) },
        { "Makespan", maybeSeconds(result.makespanS) },
        { "Utilization", result.utilization ? report::cells::percent(*result.utilization) : "-" } };
    document.sections.push_back(std::move(figures));
    ReportSection notes;
    notes.kind = ReportSection::Kind::List;
    notes.id = "notes";
    notes.title = "Assumptions";
    notes.items = result.notes;
    document.sections.push_back(std::move(notes));
    ReportSection gantt;
    gantt.kind = ReportSection::Kind::Chart;
    gantt.id = "gantt";
    gantt.title = "Systems over time";
    gantt.chart = { "gantt", gantt.title,
        "Each job is a bar over the systems it holds, from its start to its end; the queue below shows how long each "
        "waited from its submission.",
        ganttSvg(result) };
    document.sections.push_back(std::move(gantt));
    document.sections.push_back(report::tableSection("jobs", "Jobs", jobsTable(result)));
    document.closing = "Written by WaferScope.";
    document.pageFooter = document.title;
    return document;
}

std::string clusterHtml(const ClusterResult& result, const std::string& jobsPath)
{
    return report::reportHtml(clusterDocument(result, jobsPath));
}

std::string clusterTrace(const ClusterResult& result)
{
    using Json = nlohmann::ordered_json;
    Json events = Json::array();
    events.push_back({ { "name", "process_name" }, { "ph", "M" }, { "pid", 0 },
        { "args", { { "name", std::to_string(result.systems) + " x " + result.system } } } });
    for (int s = 0; s < result.systems; ++s)
        events.push_back({ { "name", "thread_name" }, { "ph", "M" }, { "pid", 0 }, { "tid", s },
            { "args", { { "name", "system " + std::to_string(s) } } } });
    // A span per job and system it holds, up to a bound that keeps the file loadable (a million
    // spans is about 250 MB of JSON); past it the trace says where it stops.
    constexpr std::size_t kMostSpans = 1'000'000;
    std::size_t spans = 0;
    for (const JobResult& job : result.jobs) {
        if (!job.startS)
            continue;
        if (spans + job.systems.size() > kMostSpans) {
            events.push_back({ { "name",
                                   "truncated: the trace holds the first " + std::to_string(spans)
                                       + " spans; cluster.json has every job" },
                { "ph", "i" }, { "s", "g" }, { "pid", 0 }, { "tid", 0 }, { "ts", *job.startS * 1e6 } });
            break;
        }
        spans += job.systems.size();
        for (int s : job.systems)
            events.push_back({ { "name", job.name }, { "cat", toString(job.mode) }, { "ph", "X" }, { "pid", 0 },
                { "tid", s }, { "ts", *job.startS * 1e6 }, { "dur", *job.durationS * 1e6 },
                { "args",
                    { { "num_csx", job.numCsx }, { "replicas", job.replicas }, { "submit_s", job.submitS },
                        { "wait_s", *job.waitS }, { "step_time_s", job.stepTimeS }, { "steps", job.steps } } } });
    }
    return Json { { "traceEvents", std::move(events) }, { "displayTimeUnit", "ms" } }.dump() + "\n";
}

} // namespace waferscope::core::cluster
