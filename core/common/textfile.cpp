#include "core/common/textfile.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace waferscope::core {

namespace {

// Closes the descriptor on every path out.
struct Descriptor {
    int fd = -1;
    ~Descriptor()
    {
        if (fd >= 0)
            ::close(fd);
    }
};

std::string errnoText(int error)
{
    switch (error) {
    case ENOENT:
        return "no such file";
    case EACCES:
    case EPERM:
        return "cannot be read: permission denied";
    case ENOTDIR:
        return "no such file (a component of the path is not a directory)";
    case ELOOP:
        return "cannot be opened: too many levels of symbolic links";
    case ENAMETOOLONG:
        return "cannot be opened: the path is too long";
    case EIO:
        return "read error: input/output error (EIO)";
    case EINVAL:
        return "read error: the file cannot be read as text (EINVAL)";
    default:
        return std::string("cannot be read: ") + std::strerror(error);
    }
}

const char* kindOf(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "a FIFO (named pipe)";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

// What to do with a file longer than the limit: refuse it, or keep its first bytes.
enum class Overflow { Refuse, Truncate };

// Reads the regular file at `path`, at most `limit` bytes: a longer file is an error or cut short.
Expected<std::string> readRegularFile(
    const std::string& path, std::size_t limit, const std::string& expectedKind, Overflow overflow)
{
    auto error = [&](const std::string& message) { return Diagnostic { path, 1, 1, message }; };
    const auto tooLarge = [&](const std::string& size) {
        return error(
            "file is " + size + " bytes; a " + expectedKind + " is at most " + std::to_string(limit) + " bytes");
    };
    if (path.empty())
        return error("no file named (empty path), expected a " + expectedKind);
    if (path.find('\0') != std::string::npos)
        return error("the path holds a NUL byte; expected the path of a " + expectedKind);
    Descriptor file;
    do
        file.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    while (file.fd < 0 && errno == EINTR);
    if (file.fd < 0)
        return error(errnoText(errno));
    struct stat status { };
    if (::fstat(file.fd, &status) != 0)
        return error(errnoText(errno));
    if (S_ISDIR(status.st_mode))
        return error("is a directory, expected a " + expectedKind);
    if (!S_ISREG(status.st_mode))
        return error(std::string("is ") + kindOf(status.st_mode) + ", expected a " + expectedKind);
    if (overflow == Overflow::Refuse && std::uint64_t(status.st_size) > limit)
        return tooLarge(std::to_string(status.st_size));
    // A regular file never blocks; reads go back to blocking so that NFS or FUSE never answer EAGAIN.
    ::fcntl(file.fd, F_SETFL, ::fcntl(file.fd, F_GETFL) & ~O_NONBLOCK);
    // One byte past the limit tells a file of exactly `limit` bytes from a longer one. The size
    // stat reports is only a first guess: /proc files report 0, and a file may grow while read.
    std::string text(std::min<std::uint64_t>(std::uint64_t(status.st_size), limit) + 1, '\0');
    std::size_t filled = 0;
    for (;;) {
        if (filled == text.size()) {
            if (filled > limit)
                break;
            text.resize(std::min(limit + 1, std::max<std::size_t>(4096, text.size() * 2)));
        }
        const ssize_t got = ::read(file.fd, text.data() + filled, text.size() - filled);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return error(errnoText(errno));
        if (got == 0)
            break;
        filled += std::size_t(got);
    }
    if (filled > limit && overflow == Overflow::Refuse)
        return tooLarge("over " + std::to_string(limit));
    text.resize(std::min(filled, limit));
    return text;
}

} // namespace

Expected<std::string> readTextFile(const std::string& path, std::size_t maxBytes, const std::string& expectedKind)
{
    return readRegularFile(path, maxBytes, expectedKind, Overflow::Refuse);
}

Expected<std::string> readTextPrefix(const std::string& path, std::size_t maxBytes, const std::string& expectedKind)
{
    return readRegularFile(path, maxBytes, expectedKind, Overflow::Truncate);
}

} // namespace waferscope::core
