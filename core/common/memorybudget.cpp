#include "core/common/memorybudget.h"

#include "core/common/units.h"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string_view>

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

std::optional<std::string> readSmallFile(const char* path)
{
    std::ifstream file(path);
    if (!file)
        return std::nullopt;
    std::string text(std::istreambuf_iterator<char>(file), {});
    return text.substr(0, 64);
}

} // namespace

MemoryBudget memoryBudgetFrom(const char* limitMb, std::uint64_t physicalBytes, const char* cgroupMax)
{
    if (limitMb)
        if (const std::optional<std::uint64_t> megabytes = parseUnsigned(limitMb);
            megabytes && *megabytes < 1000000000000ull)
            return { *megabytes * 1000000, std::string("WAFERSCOPE_MEMORY_LIMIT_MB=") + limitMb };
    std::uint64_t available = physicalBytes;
    std::string where = "this machine's";
    if (cgroupMax)
        if (const std::optional<std::uint64_t> limit = parseUnsigned(cgroupMax); limit && *limit < available) {
            available = *limit;
            where = "this cgroup's";
        }
    if (available == 0) // nothing known: assume a small workstation rather than no limit
        return { 4ull << 30, "no memory size known; assumed 4 GiB" };
    return { available / 2, "half of " + where + " " + formatBytes(double(available)) };
}

MemoryBudget memoryBudget()
{
    static const MemoryBudget budget = [] {
        const std::optional<std::string> cgroup = readSmallFile("/sys/fs/cgroup/memory.max");
        return memoryBudgetFrom(
            std::getenv("WAFERSCOPE_MEMORY_LIMIT_MB"), physicalMemoryBytes(), cgroup ? cgroup->c_str() : nullptr);
    }();
    return budget;
}

std::optional<Diagnostic> checkMemory(
    const std::string& what, double bytes, const std::string& advice, Diagnostic location, const MemoryBudget& budget)
{
    if (bytes <= double(budget.bytes))
        return std::nullopt;
    location.message = what + " would need " + formatBytes(bytes) + ", more than the "
        + formatBytes(double(budget.bytes)) + " a model or run may use (" + budget.origin + ")"
        + (advice.empty() ? "" : "; " + advice);
    return location;
}

} // namespace waferscope::core
