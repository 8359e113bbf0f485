#pragma once

#include "core/hardware/systemspec.h"

#include <optional>
#include <string>

namespace waferscope::core {

// A value that is in range on its own but contradicts another one.
struct PresetProblem {
    std::string pointer; // JSON pointer of the value to blame, for the location
    std::string message;
};

// Cross-field checks of a preset whose fields each passed their own range check: the usable
// rectangle inside the fabric, no more fabric PEs than cores, MemoryX tiers that add up.
std::optional<PresetProblem> findInconsistency(const SystemSpec& spec);

} // namespace waferscope::core
