#include "core/report/atomicfile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include <fcntl.h>
#include <unistd.h>

namespace waferscope::core::report {

std::optional<Diagnostic> writeFileAtomically(const std::string& path, const std::string& content)
{
    const auto fail = [&](const std::string& what) {
        return Diagnostic { path, 0, 0, what + ": " + std::strerror(errno) };
    };
    const std::filesystem::path target(path);
    std::random_device entropy;
    const std::filesystem::path temporary
        = target.parent_path() / ("." + target.filename().string() + ".tmp" + std::to_string(entropy() % 1000000));
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return fail("cannot write here");
    std::size_t written = 0;
    while (written < content.size()) {
        const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            const Diagnostic error = fail("writing failed");
            ::close(fd);
            ::unlink(temporary.c_str());
            return error;
        }
        written += std::size_t(n);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        const Diagnostic error = fail("writing failed");
        ::unlink(temporary.c_str());
        return error;
    }
    if (std::rename(temporary.c_str(), target.c_str()) != 0) {
        const Diagnostic error = fail("cannot replace the file");
        ::unlink(temporary.c_str());
        return error;
    }
    return std::nullopt;
}

} // namespace waferscope::core::report
