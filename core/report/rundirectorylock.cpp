#include "core/report/rundirectorylock.h"

#include "core/report/atomicfile.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace waferscope::core::report {

namespace {

Diagnostic lockError(const std::string& directory, int error)
{
    return Diagnostic { directory, 0, 0, std::string("cannot lock the directory: ") + std::strerror(error) };
}

// The pid a holder wrote into its lock file, or empty while it has not yet.
std::string holderPid(int fd)
{
    char text[32] = {};
    const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
    std::string pid(text, n > 0 ? std::size_t(n) : 0);
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == '\r'))
        pid.pop_back();
    return pid.find_first_not_of("0123456789") == std::string::npos ? pid : std::string();
}

// Whether the open file is still the one at `path`: a holder removes its lock file before it
// unlocks, so a lock taken on a file that was removed meanwhile locks nothing anyone else sees.
bool stillNamed(int fd, const std::string& path)
{
    struct stat opened {
    }, named {};
    return ::fstat(fd, &opened) == 0 && ::stat(path.c_str(), &named) == 0 && opened.st_dev == named.st_dev
        && opened.st_ino == named.st_ino;
}

} // namespace

Expected<RunDirectoryLock> RunDirectoryLock::acquire(const std::string& directory)
{
    std::error_code error;
    const std::filesystem::path base = std::filesystem::absolute(directory.empty() ? "." : directory, error);
    const std::string path = (base / std::string(kFileName)).string();
    // Each pass loses only to a holder that released between our open and our lock; a handful
    // of passes is plenty, the bound is against a pathological loop.
    for (int attempt = 0; attempt < 64; ++attempt) {
        const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            return lockError(directory, errno);
        if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
            const int failure = errno;
            if (failure == EINTR) {
                ::close(fd);
                continue;
            }
            const std::string pid = failure == EWOULDBLOCK ? holderPid(fd) : std::string();
            ::close(fd);
            if (failure != EWOULDBLOCK)
                return lockError(directory, failure);
            return Diagnostic { directory, 0, 0,
                "another WaferScope run is writing this directory" + (pid.empty() ? "" : " (pid " + pid + ")")
                    + "; wait for it or choose another directory" };
        }
        if (!stillNamed(fd, path)) {
            ::close(fd);
            continue;
        }
        if (!registerLockFile(path)) {
            ::unlink(path.c_str());
            ::close(fd);
            return Diagnostic { directory, 0, 0, "not written: the program is stopping" };
        }
        const std::string pid = std::to_string(::getpid()) + "\n";
        if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != ssize_t(pid.size())) {
            const int failure = errno;
            RunDirectoryLock unwritten(fd, path); // released (and the file removed) on return
            return lockError(directory, failure);
        }
        return RunDirectoryLock(fd, path);
    }
    return lockError(directory, EAGAIN);
}

RunDirectoryLock::RunDirectoryLock(int fd, std::string path)
    : m_fd(fd)
    , m_path(std::move(path))
{
}

RunDirectoryLock::RunDirectoryLock(RunDirectoryLock&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1))
    , m_path(std::move(other.m_path))
{
}

RunDirectoryLock& RunDirectoryLock::operator=(RunDirectoryLock&& other) noexcept
{
    if (this != &other) {
        release();
        m_fd = std::exchange(other.m_fd, -1);
        m_path = std::move(other.m_path);
    }
    return *this;
}

RunDirectoryLock::~RunDirectoryLock()
{
    release();
}

void RunDirectoryLock::release()
{
    if (m_fd < 0)
        return;
    removeLockFile(m_path); // while still locked: no other writer can have taken this file
    ::close(m_fd);
    m_fd = -1;
}

} // namespace waferscope::core::report
