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
// The budget is half of the memory this process can have: physical memory, or the cgroup's
// memory.max when a container or batch scheduler sets a smaller one. WAFERSCOPE_MEMORY_LIMIT_MB
// sets it explicitly (shared login nodes, tests).
struct MemoryBudget {
    std::uint64_t bytes = 0;
    std::string origin; // "half of this machine's 24.0 GB", "WAFERSCOPE_MEMORY_LIMIT_MB=512"
};
MemoryBudget memoryBudget();

// Reads the budget from the inputs memoryBudget() uses: the environment variable's text (null
// when unset), physical memory and the cgroup's memory.max text (null when absent). Pure, for
// tests; a malformed variable is ignored, as are limits of "max" or 0.
MemoryBudget memoryBudgetFrom(const char* limitMb, std::uint64_t physicalBytes, const char* cgroupMax);

// Null when `bytes` fit the budget; otherwise a Diagnostic located at `file` (an option or a
// YAML position) that reads "<what> would need <bytes>, more than the <budget> (<origin>)
// a model or run may use; <advice>".
std::optional<Diagnostic> checkMemory(const std::string& what, double bytes, const std::string& advice,
    Diagnostic location, const MemoryBudget& budget = memoryBudget());

} // namespace waferscope::core
