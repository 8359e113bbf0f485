#include "core/report/atomicfile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
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

} // namespace

Expected<StagedFile> stageFile(const std::string& path, const ContentWriter& writer)
{
    const std::filesystem::path target(path);
    std::random_device entropy;
    const std::filesystem::path temporary
        = target.parent_path() / (temporaryPrefix(target.filename().string()) + std::to_string(entropy() % 1000000));
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return systemError(path, "cannot write here");
    int failure = 0; // errno of the first failed write; later pieces are dropped
    writer([&](std::string_view piece) {
        for (std::size_t written = 0; failure == 0 && written < piece.size();) {
            const ssize_t n = ::write(fd, piece.data() + written, piece.size() - written);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                failure = n < 0 ? errno : ENOSPC;
            else
                written += std::size_t(n);
        }
    });
    if (failure == 0 && ::fsync(fd) != 0)
        failure = errno;
    if (::close(fd) != 0 && failure == 0)
        failure = errno;
    if (failure != 0) {
        ::unlink(temporary.c_str());
        errno = failure;
        return systemError(path, "writing failed");
    }
    return StagedFile { temporary.string(), path };
}

Expected<StagedFile> stageFile(const std::string& path, const std::string& content)
{
    return stageFile(path, ContentWriter([&](const std::function<void(std::string_view)>& sink) { sink(content); }));
}

std::optional<Diagnostic> commitFile(const StagedFile& staged)
{
    if (std::rename(staged.temporary.c_str(), staged.target.c_str()) != 0) {
        const Diagnostic error = systemError(staged.target, "cannot replace the file");
        ::unlink(staged.temporary.c_str());
        return error;
    }
    return std::nullopt;
}

void discardFile(const StagedFile& staged)
{
    ::unlink(staged.temporary.c_str());
}

bool isTemporaryOf(const std::string& name, const std::string& target)
{
    const std::string prefix = temporaryPrefix(target);
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0)
        return false;
    return name.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
}

std::optional<Diagnostic> writeFileAtomically(const std::string& path, const std::string& content)
{
    Expected<StagedFile> staged = stageFile(path, content);
    if (!staged)
        return staged.error();
    return commitFile(*staged);
}

} // namespace waferscope::core::report
