#include "core/report/rundirectory.h"

#include "core/common/textfile.h"
#include "core/report/chrometrace.h"
#include "core/report/htmlreport.h"
#include "core/report/tfevents.h"

#include <chrono>
#include <filesystem>
#include <system_error>

#include <unistd.h>

namespace waferscope::core::report {

namespace {

namespace fs = std::filesystem;

// The run directory's event file, named for now and this host.
ReportFile eventFile(const RunReport& report)
{
    const auto now = std::chrono::system_clock::now();
    const std::int64_t seconds = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0)
        host[0] = '\0';
    ReportFile file(eventFileName(seconds, host), eventFileBytes(report, double(seconds)));
    file.supersedes = [](const std::string& name) { return isWaferScopeEventFile(name); };
    return file;
}

} // namespace

std::vector<ReportFile> runDirectoryFiles(
    const RunReport& report, const engine::RunResult& run, const ExecutionPlan& plan)
{
    std::vector<ReportFile> files { { "report.json", reportToJson(report) }, { "report.csv", reportCsv(report) },
        { "report.html", reportHtml(report) },
        { "trace.json", ContentWriter([&run, &plan](const auto& sink) { writeChromeTrace(run, &plan, sink); }) },
        { "summary.txt", reportSummary(report) }, eventFile(report) };
    if (report.cycleLevel)
        files.emplace_back("cycle_vs_model.csv", cycleVsModelCsv(*report.cycleLevel));
    return files;
}

std::optional<Diagnostic> writeRunReport(RunDirectoryWriter& writer, const RunReport& report,
    const engine::RunResult& run, const ExecutionPlan& plan, std::vector<ReportFile> extraFiles,
    const std::atomic<bool>* cancelled)
{
    std::vector<ReportFile> files = runDirectoryFiles(report, run, plan);
    for (ReportFile& file : extraFiles)
        files.push_back(std::move(file));
    return writer.write(files, cancelled);
}

std::optional<Diagnostic> writeRunDirectory(
    const std::string& directory, const std::vector<ReportFile>& files, const std::atomic<bool>* cancelled)
{
    Expected<RunDirectoryWriter> writer = RunDirectoryWriter::open(directory);
    if (!writer)
        return writer.error();
    RunDirectoryWriter open = std::move(writer).value();
    return open.write(files, cancelled);
}

Expected<RunReport> readReportFile(const std::string& path)
{
    std::error_code error;
    const std::string file = fs::is_directory(path, error) ? (fs::path(path) / "report.json").string() : path;
    Expected<std::string> text = readTextFile(file, std::size_t(256) << 20, "WaferScope report.json or run directory");
    if (!text)
        return text.error();
    return reportFromJson(*text, file);
}

} // namespace waferscope::core::report
