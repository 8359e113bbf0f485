#pragma once

#include "core/common/diagnostic.h"

#include <cstdint>
#include <optional>
#include <string>

namespace waferscope::core {

// How much memory one model graph, or one run's timeline, may hold. Work whose footprint
// (estimated from its shape, before anything is allocated) exceeds it is refused with an error
// that names the cause, instead of swapping the machine to a halt or dying in the allocator.
//
// The budget is half of the memory this process can have, the lowest of: physical memory, the
// memory.max of the cgroups it runs in (a container or a batch scheduler's job) and its
// address-space rlimit (`ulimit -v`), whose other half is left for code, stacks and the
// allocator's slack. WAFERSCOPE_MEMORY_LIMIT_MB lowers it further (shared login nodes, tests);
// it never raises it above what the process can have.
struct MemoryBudget {
    std::uint64_t bytes = 0;
    std::string origin; // "half of this machine's 24.0 GB", "WAFERSCOPE_MEMORY_LIMIT_MB=512"
};
MemoryBudget memoryBudget();

// Reads the budget from the inputs memoryBudget() uses: the environment variable's text (null
// when unset), physical memory, the tightest cgroup memory.max text (null when absent) and the
// address-space rlimit in bytes (0 when unlimited). Pure, for tests; a malformed variable is
// ignored, as are limits of "max" or 0.
MemoryBudget memoryBudgetFrom(
    const char* limitMb, std::uint64_t physicalBytes, const char* cgroupMax, std::uint64_t addressSpaceBytes = 0);

// Null when `bytes` fit the budget; otherwise a CannotMap Diagnostic (exit 3) located at `file`
// (an option or a YAML position) that reads "<what> would need <bytes>, more than the <budget> (<origin>)
// a model or run may use; <advice>".
std::optional<Diagnostic> checkMemory(const std::string& what, double bytes, const std::string& advice,
    Diagnostic location, const MemoryBudget& budget = memoryBudget());

// The memory one heap block of `bytes` takes with glibc's malloc: the request and its 8-byte
// header rounded up to 16, at least 32. Estimates count each block they expect this way.
constexpr double heapBlockBytes(double bytes)
{
    const double withHeader = bytes + 8.0;
    const double rounded = double(static_cast<unsigned long long>((withHeader + 15.0) / 16.0)) * 16.0;
    return rounded < 32.0 ? 32.0 : rounded;
}

} // namespace waferscope::core
