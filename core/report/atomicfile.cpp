#include "core/report/atomicfile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>

#include <fcntl.h>
#include <unistd.h>

namespace waferscope::core::report {

namespace {

Diagnostic systemError(const std::string& path, const std::string& what)
{
    return Diagnostic { path, 0, 0, what + ": " + std::strerror(errno) };
}

std::string temporaryPrefix(const std::string& target)
{
    return "." + target + ".tmp";
}

// The temporaries of this process that are staged and not yet committed or discarded.
struct Staging {
    std::mutex mutex;
    std::vector<std::string> temporaries;
    std::vector<std::string> directories; // created for uncommitted files, deepest first per writer
    std::vector<std::string> lockFiles; // held by this process (rundirectorylock.h)
    bool abandoned = false;

    void forget(const std::string& temporary)
    {
        if (const auto it = std::find(temporaries.begin(), temporaries.end(), temporary); it != temporaries.end())
            temporaries.erase(it);
    }
};
Staging g_staging;

} // namespace

Expected<StagedFile> stageFile(const std::string& path, const ContentWriter& writer)
{
    const std::filesystem::path target(path);
    std::random_device entropy;
    const std::filesystem::path temporary
        = target.parent_path() / (temporaryPrefix(target.filename().string()) + std::to_string(entropy() % 1000000));
    int fd = -1;
    {
        // Created and registered in one step, so abandonStagedFiles() sees every temporary.
        const std::lock_guard lock(g_staging.mutex);
        if (g_staging.abandoned)
            return Diagnostic { path, 0, 0, "not written: the program is stopping" };
        fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0)
            return systemError(path, "cannot write here");
        g_staging.temporaries.push_back(temporary.string());
    }
    int failure = 0; // errno of the first failed write; later pieces are dropped
    bool cancelled = false;
    try {
        writer([&](std::string_view piece) {
            if (failure == 0)
                failure = writeAll(fd, piece);
        });
    } catch (const StagingCancelled&) {
        cancelled = true;
    } catch (...) { // the writer failed (out of memory, a bug): no temporary stays behind
        ::close(fd);
        discardFile({ temporary.string(), path });
        throw;
    }
    if (!cancelled && failure == 0 && ::fsync(fd) != 0)
        failure = errno;
    if (::close(fd) != 0 && failure == 0)
        failure = errno;
    const StagedFile staged { temporary.string(), path };
    if (cancelled) {
        discardFile(staged);
        return Diagnostic { path, 0, 0, "cancelled" };
    }
    if (failure != 0) {
        discardFile(staged);
        errno = failure;
        return systemError(path, "writing failed");
    }
    return staged;
}

Expected<StagedFile> stageFile(const std::string& path, const std::string& content)
{
    return stageFile(path, ContentWriter([&](const std::function<void(std::string_view)>& sink) { sink(content); }));
}

std::optional<Diagnostic> commitStagedGroup(
    const std::vector<StagedFile>& files, const std::function<std::optional<Diagnostic>()>& commit)
{
    const std::lock_guard lock(g_staging.mutex);
    std::optional<Diagnostic> result;
    if (g_staging.abandoned) {
        for (const StagedFile& file : files)
            ::unlink(file.temporary.c_str());
        result = Diagnostic { files.empty() ? std::string() : files.front().target, 0, 0,
            "not written: the program is stopping" };
    } else
        result = commit();
    for (const StagedFile& file : files)
        g_staging.forget(file.temporary);
    return result;
}

std::optional<Diagnostic> commitFile(const StagedFile& staged)
{
    return commitStagedGroup({ staged }, [&]() -> std::optional<Diagnostic> {
        if (std::rename(staged.temporary.c_str(), staged.target.c_str()) == 0)
            return std::nullopt;
        const Diagnostic error = systemError(staged.target, "cannot replace the file");
        ::unlink(staged.temporary.c_str());
        return error;
    });
}

void discardFile(const StagedFile& staged)
{
    const std::lock_guard lock(g_staging.mutex);
    ::unlink(staged.temporary.c_str());
    g_staging.forget(staged.temporary);
}

void abandonStagedFiles()
{
    const std::lock_guard lock(g_staging.mutex);
    g_staging.abandoned = true;
    for (const std::string& temporary : g_staging.temporaries)
        ::unlink(temporary.c_str());
    g_staging.temporaries.clear();
    for (const std::string& lockFile : g_staging.lockFiles)
        ::unlink(lockFile.c_str());
    g_staging.lockFiles.clear();
    for (const std::string& directory : g_staging.directories)
        ::rmdir(directory.c_str()); // fails, harmlessly, on a directory that is not empty
    g_staging.directories.clear();
}

void registerCreatedDirectories(const std::vector<std::string>& deepestFirst)
{
    const std::lock_guard lock(g_staging.mutex);
    g_staging.directories.insert(g_staging.directories.end(), deepestFirst.begin(), deepestFirst.end());
}

void forgetCreatedDirectories(const std::vector<std::string>& deepestFirst)
{
    const std::lock_guard lock(g_staging.mutex);
    for (const std::string& directory : deepestFirst)
        if (const auto it = std::find(g_staging.directories.begin(), g_staging.directories.end(), directory);
            it != g_staging.directories.end())
            g_staging.directories.erase(it);
}

bool registerLockFile(const std::string& path)
{
    const std::lock_guard lock(g_staging.mutex);
    if (g_staging.abandoned)
        return false;
    g_staging.lockFiles.push_back(path);
    return true;
}

void removeLockFile(const std::string& path)
{
    const std::lock_guard lock(g_staging.mutex);
    if (const auto it = std::find(g_staging.lockFiles.begin(), g_staging.lockFiles.end(), path);
        it != g_staging.lockFiles.end()) {
        ::unlink(path.c_str());
        g_staging.lockFiles.erase(it);
    }
}

std::size_t stagedFileCount()
{
    const std::lock_guard lock(g_staging.mutex);
    return g_staging.temporaries.size();
}

bool isTemporaryOf(const std::string& name, const std::string& target)
{
    const std::string prefix = temporaryPrefix(target);
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0)
        return false;
    return name.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
}

std::string temporaryTarget(const std::string& name)
{
    const std::size_t tmp = name.rfind(".tmp");
    if (name.size() < 2 || name[0] != '.' || tmp == std::string::npos || tmp < 2)
        return {};
    const std::string target = name.substr(1, tmp - 1);
    return isTemporaryOf(name, target) ? target : std::string();
}

std::optional<Diagnostic> writeFileAtomically(const std::string& path, const std::string& content)
{
    Expected<StagedFile> staged = stageFile(path, content);
    if (!staged)
        return staged.error();
    return commitFile(*staged);
}

int writeAll(int fd, std::string_view bytes)
{
    for (std::size_t written = 0; written < bytes.size();) {
        const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : ENOSPC;
        written += std::size_t(n);
    }
    return 0;
}

} // namespace waferscope::core::report
