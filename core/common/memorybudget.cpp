#include "core/common/memorybudget.h"

#include "core/common/units.h"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string_view>

#include <sys/resource.h>
#include <unistd.h>

namespace waferscope::core {

namespace {

std::optional<std::uint64_t> parseUnsigned(std::string_view text)
{
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.remove_suffix(1);
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || value == 0)
        return std::nullopt;
    return value;
}

std::uint64_t physicalMemoryBytes()
{
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long pageSize = ::sysconf(_SC_PAGESIZE);
    return pages > 0 && pageSize > 0 ? std::uint64_t(pages) * std::uint64_t(pageSize) : 0;
}

std::optional<std::string> readSmallFile(const std::string& path)
{
    std::ifstream file(path);
    if (!file)
        return std::nullopt;
    std::string text(64, '\0');
    file.read(text.data(), std::streamsize(text.size()));
    text.resize(std::size_t(file.gcount()));
    return text;
}

// The smallest memory limit of the cgroups this process is in and of their ancestors, as text.
// /proc/self/cgroup names the groups: "0::/job.scope" under cgroup v2 (memory.max), and
// "4:memory:/job" under v1 (memory/.../memory.limit_in_bytes, whose "unlimited" is a huge number).
std::optional<std::string> tightestCgroupLimit()
{
    std::optional<std::uint64_t> tightest;
    const auto consider = [&](const std::string& file) {
        if (const std::optional<std::string> text = readSmallFile(file))
            if (const std::optional<std::uint64_t> limit = parseUnsigned(*text);
                limit && (!tightest || *limit < *tightest))
                tightest = limit;
    };
    const auto considerGroup = [&](const std::string& root, std::string group, const char* fileName) {
        for (; group.size() > 1 && group.size() < 4096; group = group.substr(0, group.rfind('/')))
            consider(root + group + "/" + fileName);
        consider(root + "/" + fileName);
    };
    std::ifstream membership("/proc/self/cgroup");
    std::string line;
    while (std::getline(membership, line)) {
        if (line.rfind("0::", 0) == 0)
            considerGroup("/sys/fs/cgroup", line.substr(3), "memory.max");
        else if (const std::size_t at = line.find(":memory:"); at != std::string::npos)
            considerGroup("/sys/fs/cgroup/memory", line.substr(at + 8), "memory.limit_in_bytes");
    }
    if (!tightest)
        return std::nullopt;
    return std::to_string(*tightest);
}

std::uint64_t addressSpaceLimitBytes()
{
    struct rlimit limit { };
    if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
        return 0;
    return std::uint64_t(limit.rlim_cur);
}

} // namespace

MemoryBudget memoryBudgetFrom(
    const char* limitMb, std::uint64_t physicalBytes, const char* cgroupMax, std::uint64_t addressSpaceBytes)
{
    std::uint64_t available = physicalBytes;
    std::string where = "this machine's";
    if (cgroupMax)
        if (const std::optional<std::uint64_t> limit = parseUnsigned(cgroupMax); limit && *limit < available) {
            available = *limit;
            where = "this cgroup's";
        }
    if (addressSpaceBytes > 0 && (available == 0 || addressSpaceBytes < available)) {
        available = addressSpaceBytes;
        where = "this process's address-space limit (ulimit -v),";
    }
    MemoryBudget budget = available == 0 // nothing known: assume a small workstation rather than no limit
        ? MemoryBudget { 4ull << 30, "no memory size known; assumed 4 GiB" }
        : MemoryBudget { available / 2, "half of " + where + " " + formatBytes(double(available)) };
    if (limitMb)
        if (const std::optional<std::uint64_t> megabytes = parseUnsigned(limitMb);
            megabytes && *megabytes < 1000000000000ull && *megabytes * 1000000 < budget.bytes)
            budget = { *megabytes * 1000000, std::string("WAFERSCOPE_MEMORY_LIMIT_MB=") + limitMb };
    return budget;
}

MemoryBudget memoryBudget()
{
    static const MemoryBudget budget = [] {
        const std::optional<std::string> cgroup = tightestCgroupLimit();
        return memoryBudgetFrom(std::getenv("WAFERSCOPE_MEMORY_LIMIT_MB"), physicalMemoryBytes(),
            cgroup ? cgroup->c_str() : nullptr, addressSpaceLimitBytes());
    }();
    return budget;
}

std::optional<Diagnostic> checkMemory(
    const std::string& what, double bytes, const std::string& advice, Diagnostic location, const MemoryBudget& budget)
{
    if (bytes <= double(budget.bytes))
        return std::nullopt;
    location.kind = Diagnostic::Kind::CannotMap;
    location.message = what + " would need " + formatBytes(bytes) + ", more than the "
        + formatBytes(double(budget.bytes)) + " a model or run may use (" + budget.origin + ")"
        + (advice.empty() ? "" : "; " + advice);
    return location;
}

} // namespace waferscope::core
