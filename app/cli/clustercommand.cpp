// No header of its own: defines runClusterCommand, declared with every subcommand in app/cli/commands.h.
// `cluster`: a jobs file scheduled on a shared Wafer-Scale Cluster (core/cluster).
#include "app/cli/argparser.h"
#include "app/cli/commands.h"
#include "app/cli/exitcode.h"
#include "app/cli/jobinput.h"
#include "app/cli/progressline.h"

#include "core/cluster/cluster.h"
#include "core/cluster/clusterreport.h"
#include "core/common/displaytext.h"
#include "core/common/units.h"
#include "core/report/rundirectorywriter.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <ostream>

namespace waferscope::cli {

namespace {

using core::cluster::ClusterResult;
using core::cluster::JobResult;

// --what_if JOB=N[,JOB=N...]
std::vector<std::pair<std::string, int>> parseWhatIf(const std::string& text)
{
    std::vector<std::pair<std::string, int>> changes;
    std::size_t begin = 0;
    while (begin <= text.size()) {
        const std::size_t comma = std::min(text.find(',', begin), text.size());
        const std::string item = text.substr(begin, comma - begin);
        const std::size_t equals = item.find('=');
        int value = 0;
        const char* digits = equals == std::string::npos ? nullptr : item.c_str() + equals + 1;
        const auto [end, error] = digits ? std::from_chars(digits, item.c_str() + item.size(), value)
                                         : std::from_chars_result { nullptr, std::errc::invalid_argument };
        if (equals == 0 || !digits || error != std::errc() || end != item.c_str() + item.size() || value < 1
            || value > 100000)
            throw UsageError { "--what_if expects JOB=N[,JOB=N...] with N a system count, got '" + item + "'" };
        changes.emplace_back(item.substr(0, equals), value);
        begin = comma + 1;
    }
    return changes;
}

std::string clock(double seconds)
{
    return core::formatClock(seconds, true);
}

std::string cell(const std::optional<double>& seconds)
{
    return seconds ? clock(*seconds) : "-";
}

// A table cell: the text shown safely (displayText), then spaces to `width` columns, and always at
// least one, so that a cell wider than its column (a huge time) never runs into the next.
std::string padded(const std::string& text, std::size_t width)
{
    std::string cell = core::displayText(text);
    const std::size_t columns = core::displayWidth(cell);
    return cell + std::string(columns < width ? width - columns : 1, ' ');
}

std::string scheduleText(const ClusterResult& result)
{
    std::string text = std::to_string(result.systems) + " x " + result.system + ", MemoryX "
        + core::formatBytes(result.memoryxBytes) + ", policy " + core::cluster::toString(result.policy) + "\n\n";
    std::size_t nameWidth = 4;
    for (const JobResult& job : result.jobs)
        nameWidth = std::max(nameWidth, core::displayWidth(core::displayText(job.name)) + 2);
    text += padded("job", nameWidth) + padded("mode", 11) + padded("systems", 9) + padded("submit", 12)
        + padded("start", 12) + padded("end", 12) + padded("wait", 12) + padded("step", 12) + "steps\n";
    for (const JobResult& job : result.jobs) {
        text += padded(job.name, nameWidth) + padded(core::toString(job.mode), 11)
            + padded(std::to_string(job.numCsx) + "x" + std::to_string(job.replicas), 9)
            + padded(clock(job.submitS), 12) + padded(cell(job.startS), 12) + padded(cell(job.endS), 12)
            + padded(cell(job.waitS), 12) + padded(job.stepTimeS > 0.0 ? core::formatSeconds(job.stepTimeS) : "-", 12)
            + std::to_string(job.steps) + "\n";
        if (!job.reason.empty())
            text += "    never runs: " + job.reason + "\n";
        if (job.replicasNeeded)
            text += "    sized: " + std::to_string(*job.replicasNeeded) + " replicas, "
                + std::to_string(job.usersPerReplica.value_or(0)) + " users each\n";
    }
    text += "\nmakespan " + cell(result.makespanS) + ", utilization "
        + (result.utilization ? core::formatFixed(100.0 * *result.utilization, 1) + " %" : std::string("-")) + "\n";
    return text;
}

std::string whatIfText(const ClusterResult& before, const ClusterResult& after)
{
    const auto percent = [](const std::optional<double>& share) {
        return share ? core::formatFixed(100.0 * *share, 1) + " %" : std::string("-");
    };
    std::size_t width = 16;
    for (const JobResult& job : before.jobs)
        width = std::max(width, core::displayWidth(core::displayText(job.name)) + 9);
    std::string text = "\nwhat if" + std::string(width - 7, ' ') + padded("as filed", 14) + "changed\n";
    text += padded("  makespan", width) + padded(cell(before.makespanS), 14) + cell(after.makespanS) + "\n";
    text
        += padded("  utilization", width) + padded(percent(before.utilization), 14) + percent(after.utilization) + "\n";
    for (std::size_t j = 0; j < before.jobs.size() && j < after.jobs.size(); ++j) {
        const std::string systems = before.jobs[j].numCsx == after.jobs[j].numCsx ? std::string()
                                                                                  : " (num_csx "
                + std::to_string(before.jobs[j].numCsx) + " -> " + std::to_string(after.jobs[j].numCsx) + ")";
        text += padded("  " + before.jobs[j].name + " ends", width) + padded(cell(before.jobs[j].endS), 14)
            + cell(after.jobs[j].endS) + systems + "\n";
    }
    return text;
}

// The stage on the progress line, which adds done/total itself.
std::string progressText(const core::cluster::ClusterProgress& at)
{
    const std::string phase = at.phase;
    const std::string what = phase == "sizing" ? "sizing replicas (searches)"
        : phase == "timing"                    ? "timing jobs"
                                               : "scheduling";
    return what + ", " + std::to_string(at.compiles) + " compiles, " + std::to_string(at.engineRuns) + " engine runs";
}

bool anyRuns(const ClusterResult& result)
{
    for (const JobResult& job : result.jobs)
        if (job.startS)
            return true;
    return false;
}

} // namespace

int runClusterCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err)
{
    ArgParser parser("waferscope-cli cluster",
        "Schedules a jobs file on a shared Wafer-Scale Cluster: when each job starts and ends, what waits,\n"
        "the makespan and the utilization. Each job's step time is the model-level engine's for its\n"
        "allocation. Exits 0 when at least one job runs, 3 when none can.");
    parser.addOption("jobs", "FILE", "the jobs file (YAML with top-level 'cluster:' and 'jobs:' keys)");
    parser.addOption("policy", "POLICY", "fifo, or backfill (default: EASY backfill)");
    parser.addOption("what_if", "JOB=N,...", "also schedule with these jobs' num_csx changed, and compare");
    parser.addFlag("size_inference",
        "inference jobs with tokens_per_s_per_user run with the fewest replicas that give each user that rate");
    parser.addOption("model_dir", "DIR", "write cluster.json, report.html (Gantt chart) and trace.json into DIR");
    addCalibrationOption(parser);
    parser.addFlag("json", "print one JSON object on stdout");
    parser.addFlag("quiet", "no progress bar");
    if (!parser.parse(args)) {
        out << parser.helpText();
        return kExitOk;
    }
    const std::optional<std::string> path = parser.value("jobs");
    if (!path)
        throw UsageError { "--jobs FILE is required" };
    core::cluster::ClusterOptions options;
    const std::string policy = parser.value("policy").value_or(core::cluster::toString(options.policy));
    const std::optional<core::cluster::Policy> chosen = core::fromName<core::cluster::Policy>(policy);
    if (!chosen)
        throw UsageError { "--policy expects " + core::choiceList(core::allNames<core::cluster::Policy>()) + ", got '"
            + policy + "'" };
    options.policy = *chosen;
    options.sizeInference = parser.has("size_inference");
    std::vector<std::pair<std::string, int>> changes;
    if (const std::optional<std::string> whatIf = parser.value("what_if"))
        changes = parseWhatIf(*whatIf);
    const std::optional<std::string> modelDir = parser.value("model_dir");
    if (modelDir) {
        if (modelDir->empty())
            throw UsageError { "--model_dir expects a directory" };
        if (const std::optional<std::string> problem = modelDirProblem(*modelDir))
            return printDiagnostic(err, core::Diagnostic { *modelDir, 0, 0, *problem });
    }
    core::Expected<core::engine::Calibration> calibration = parseCalibration(parser);
    if (!calibration)
        return printDiagnostic(err, calibration.error());
    // The directory is this schedule's until its files are committed (see `run`).
    std::optional<core::report::RunDirectoryWriter> writer;
    if (const std::optional<core::Diagnostic> refused = openModelDir(modelDir, writer))
        return printDiagnostic(err, *refused);
    options.calibration = std::move(calibration).value();
    const core::Expected<core::cluster::JobsFile> file = core::cluster::readJobsFile(*path);
    if (!file)
        return printDiagnostic(err, file.error());
    for (const core::Diagnostic& warning : file->warnings)
        err << warning.format("warning") << "\n";
    // Sizing and timing run the engine; Ctrl-C ends the process at once (interrupt.h) and nothing
    // is written before the end.
    ProgressLine progress(err, !parser.has("quiet") && &err == &std::cerr && ProgressLine::stderrIsTerminal());
    options.progress = [&progress](const core::cluster::ClusterProgress& at) {
        progress.set(progressText(at), at.done, std::max(1, at.total));
    };
    core::cluster::TimingCache cache;
    const core::Expected<ClusterResult> result = core::cluster::scheduleCluster(*file, options, cache);
    if (!result)
        return printDiagnostic(err, result.error());
    std::optional<ClusterResult> alternative;
    if (!changes.empty()) {
        const core::Expected<core::cluster::JobsFile> changed = core::cluster::withNumCsx(*file, changes);
        if (!changed)
            return printDiagnostic(err, changed.error());
        core::Expected<ClusterResult> rescheduled = core::cluster::scheduleCluster(*changed, options, cache);
        if (!rescheduled)
            return printDiagnostic(err, rescheduled.error());
        alternative = std::move(rescheduled).value();
    }
    const std::string json = core::cluster::clusterToJson(*result, alternative ? &*alternative : nullptr, changes);
    if (writer) {
        const std::vector<core::report::ReportFile> files { { "cluster.json", json },
            { "report.html", core::cluster::clusterHtml(*result, *path) },
            { "trace.json", core::cluster::clusterTrace(*result) } };
        if (const std::optional<core::Diagnostic> failed = writer->write(files))
            return printDiagnostic(err, *failed);
    }
    if (parser.has("json"))
        out << json;
    else {
        out << scheduleText(*result);
        if (alternative)
            out << whatIfText(*result, *alternative);
    }
    return anyRuns(*result) ? kExitOk : kExitCannotMap;
}

} // namespace waferscope::cli
