#include "core/hardware/clusterspec.h"

namespace waferscope::core {

Expected<ClusterSpec> ClusterSpec::make(SystemSpec system, int numSystems)
{
    const int maxSystems = system.swarmx.supported ? system.swarmx.maxSystems : 1;
    if (numSystems < 1 || numSystems > maxSystems) {
        std::string message = "num_csx is " + std::to_string(numSystems) + ", expected 1 to "
            + std::to_string(maxSystems) + " for " + system.displayName;
        if (!system.swarmx.supported)
            message += " (no SwarmX: single-system generation)";
        return Diagnostic { "<command line>", 0, 0, message };
    }
    return ClusterSpec { std::move(system), numSystems };
}

} // namespace waferscope::core
