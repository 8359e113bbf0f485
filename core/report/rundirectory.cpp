#include "core/report/rundirectory.h"

#include "core/common/textfile.h"
#include "core/report/atomicfile.h"
#include "core/report/chrometrace.h"
#include "core/report/htmlreport.h"
#include "core/report/tfevents.h"

#include <chrono>
#include <filesystem>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

namespace waferscope::core::report {

namespace {

namespace fs = std::filesystem;

bool supersededBy(const std::string& name, const ReportFile& file)
{
    return name != file.name && file.supersedes && file.supersedes(name);
}

// Temporaries a killed writer left of the files, or of files they supersede.
void removeLeftovers(const fs::path& directory, const std::vector<ReportFile>& files)
{
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(directory, error)) {
        const std::string target = temporaryTarget(entry.path().filename().string());
        if (target.empty())
            continue;
        for (const ReportFile& file : files)
            if (target == file.name || supersededBy(target, file))
                fs::remove(entry.path(), error);
    }
}

// The files of `directory` that `files` replace under other names.
std::vector<std::string> supersededFiles(const fs::path& directory, const std::vector<ReportFile>& files)
{
    std::vector<std::string> superseded;
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(directory, error)) {
        const std::string name = entry.path().filename().string();
        for (const ReportFile& file : files)
            if (supersededBy(name, file) && temporaryTarget(name).empty()) {
                superseded.push_back(entry.path().string());
                break;
            }
    }
    return superseded;
}

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

// The renames are durable once the directory itself is flushed.
void syncDirectory(const fs::path& directory)
{
    const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
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

std::optional<Diagnostic> writeRunDirectory(
    const std::string& directory, const std::vector<ReportFile>& files, const std::atomic<bool>* cancelled)
{
    const auto stopped = [cancelled] { return cancelled && cancelled->load(std::memory_order_relaxed); };
    const fs::path path(directory.empty() ? "." : directory);
    std::error_code error;
    if (fs::exists(path, error) && !fs::is_directory(path, error))
        return Diagnostic { directory, 0, 0, "is not a directory" };
    // The directories this write creates, deepest first: removed again unless a file lands.
    std::vector<std::string> created;
    for (fs::path missing = fs::absolute(path, error);
         !missing.empty() && !fs::exists(missing, error) && missing != missing.parent_path();
         missing = missing.parent_path())
        created.push_back(missing.string());
    if (!created.empty()) {
        registerCreatedDirectories(created);
        fs::create_directories(path, error);
        if (error) {
            forgetCreatedDirectories(created);
            return Diagnostic { directory, 0, 0, "cannot create the directory: " + error.message() };
        }
    }
    const auto removeCreated = [&] {
        forgetCreatedDirectories(created);
        for (const std::string& dir : created)
            ::rmdir(dir.c_str());
    };
    removeLeftovers(path, files);
    std::vector<StagedFile> staged;
    for (const ReportFile& file : files) {
        const std::string target = (path / file.name).string();
        // Pieces are checked for a cancel as they arrive; so is each file before it starts.
        const ContentWriter writer = [&](const std::function<void(std::string_view)>& sink) {
            const auto checked = [&](std::string_view piece) {
                if (stopped())
                    throw StagingCancelled {};
                sink(piece);
            };
            if (file.writer)
                file.writer(checked);
            else
                checked(file.content);
        };
        Expected<StagedFile> next = stageFile(target, writer);
        if (!next) {
            for (const StagedFile& done : staged)
                discardFile(done);
            removeCreated();
            return next.error();
        }
        staged.push_back(std::move(next).value());
    }
    if (std::optional<Diagnostic> failed = commitFiles(staged, supersededFiles(path, files))) {
        removeCreated(); // only what stayed empty
        return failed;
    }
    forgetCreatedDirectories(created);
    syncDirectory(path);
    return std::nullopt;
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
