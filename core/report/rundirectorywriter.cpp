#include "core/report/rundirectorywriter.h"

#include "core/report/atomicfile.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include <unistd.h>

namespace waferscope::core::report {

namespace {

namespace fs = std::filesystem;

bool supersededBy(const std::string& name, const ReportFile& file)
{
    return name != file.name && file.supersedes && file.supersedes(name);
}

// Temporaries a killed writer left of the files, or of files they supersede. Only while the lock
// is held: a live writer's temporaries look the same.
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

// The names of the files of `directory` that `files` replace under other names.
std::vector<std::string> supersededFiles(const fs::path& directory, const std::vector<ReportFile>& files)
{
    std::vector<std::string> superseded;
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(directory, error)) {
        const std::string name = entry.path().filename().string();
        for (const ReportFile& file : files)
            if (supersededBy(name, file) && temporaryTarget(name).empty()) {
                superseded.push_back(name);
                break;
            }
    }
    return superseded;
}

void removeDirectories(const std::vector<std::string>& deepestFirst)
{
    forgetCreatedDirectories(deepestFirst);
    for (const std::string& dir : deepestFirst)
        ::rmdir(dir.c_str()); // fails, harmlessly, on one that is not empty
}

} // namespace

Expected<RunDirectoryWriter> RunDirectoryWriter::open(const std::string& directory)
{
    const std::string name = directory.empty() ? "." : directory;
    const fs::path path(name);
    std::error_code error;
    if (fs::exists(path, error) && !fs::is_directory(path, error))
        return Diagnostic { directory, 0, 0, "is not a directory" };
    // The directories this writer creates, deepest first: removed again unless a file lands.
    std::vector<std::string> created;
    for (fs::path missing = fs::absolute(path, error);
         !missing.empty() && !fs::exists(missing, error) && missing != missing.parent_path();
         missing = missing.parent_path())
        created.push_back(missing.string());
    if (!created.empty()) {
        registerCreatedDirectories(created);
        fs::create_directories(path, error);
        if (error) {
            removeDirectories(created);
            return Diagnostic { directory, 0, 0, "cannot create the directory: " + error.message() };
        }
    }
    Expected<RunDirectoryLock> lock = RunDirectoryLock::acquire(name);
    if (!lock) {
        removeDirectories(created);
        return lock.error();
    }
    RunDirectoryWriter writer(name, std::move(lock).value(), std::move(created));
    if (std::optional<Diagnostic> damaged = recoverFileSet(name))
        return *damaged; // the writer's destructor unlocks and removes what it created
    return writer;
}

std::optional<Diagnostic> RunDirectoryWriter::write(
    const std::vector<ReportFile>& files, const std::atomic<bool>* cancelled, const CommitHook& hook)
{
    const auto stopped = [cancelled] { return cancelled && cancelled->load(std::memory_order_relaxed); };
    const fs::path path(m_directory);
    removeLeftovers(path, files);
    std::vector<StagedFile> staged;
    for (const ReportFile& file : files) {
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
        Expected<StagedFile> next = stageFile((path / file.name).string(), writer);
        if (!next) {
            for (const StagedFile& done : staged)
                discardFile(done);
            return next.error();
        }
        staged.push_back(std::move(next).value());
    }
    if (std::optional<Diagnostic> failed = commitFileSet(m_directory, staged, supersededFiles(path, files), hook))
        return failed;
    forgetCreatedDirectories(m_created);
    m_created.clear();
    return std::nullopt;
}

RunDirectoryWriter::RunDirectoryWriter(std::string directory, RunDirectoryLock lock, std::vector<std::string> created)
    : m_directory(std::move(directory))
    , m_lock(std::move(lock))
    , m_created(std::move(created))
{
}

RunDirectoryWriter::RunDirectoryWriter(RunDirectoryWriter&& other) noexcept
    : m_directory(std::move(other.m_directory))
    , m_lock(std::move(other.m_lock))
    , m_created(std::exchange(other.m_created, {}))
{
}

RunDirectoryWriter& RunDirectoryWriter::operator=(RunDirectoryWriter&& other) noexcept
{
    if (this != &other) {
        close();
        m_directory = std::move(other.m_directory);
        m_lock = std::move(other.m_lock);
        m_created = std::exchange(other.m_created, {});
    }
    return *this;
}

RunDirectoryWriter::~RunDirectoryWriter()
{
    close();
}

void RunDirectoryWriter::close()
{
    m_lock.release(); // first: its file would keep a created directory from being empty
    removeDirectories(std::exchange(m_created, {}));
}

} // namespace waferscope::core::report
