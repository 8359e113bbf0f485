#pragma once

#include "core/common/expected.h"
#include "core/hardware/systemspec.h"

namespace waferscope::core {

// A cluster: `numSystems` identical systems fed by one MemoryX through SwarmX.
struct ClusterSpec {
    SystemSpec system;
    int numSystems = 1;

    // Checks numSystems against what the generation supports; the error names the limit.
    static Expected<ClusterSpec> make(SystemSpec system, int numSystems);
};

} // namespace waferscope::core
