#pragma once

#include "core/hardware/systemspec.h"

#include <string>
#include <vector>

namespace waferscope::core {

// One line of a system's fact sheet, formatted for people, with where the value comes from.
// The CLI table and the GUI's system panel both show these, so they always agree.
struct HardwareFact {
    std::string group; // "Wafer", "System", "MemoryX", "SwarmX"
    std::string label; // "fabric (PEs)"
    std::string value; // "757 x 996", or "-" where the generation lacks the unit
    bool assumed = false; // any underlying value is an assumption
    std::string provenance; // the source or the assumption's reason (several joined by "; ")
};

std::vector<HardwareFact> describeHardware(const SystemSpec& system);

} // namespace waferscope::core
