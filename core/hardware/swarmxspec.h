#pragma once

#include <algorithm>
#include <cstdint>

namespace waferscope::core {

// SwarmX: the fabric that broadcasts weights from MemoryX to every system and reduces the
// gradients on the way back. Cerebras describes it as a bidirectional tree of broadcast-reduce
// nodes, each one 1:4 (or two 1:2) broadcast-reduce, so the node count grows with the systems
// and the latency with their logarithm.
struct SwarmXSpec {
    bool supported = false; // false for single-system generations (CS-1)
    int maxSystems = 1; // largest cluster of this generation
    int fanOut = 0; // children per tree node
    double linkBytesPerS = 0.0; // per tree link, each direction
    double levelLatencyS = 0.0; // added per tree level

    // Tree levels between MemoryX and each of `numSystems` systems: ceil(log_fanOut(numSystems)),
    // at least one (a single system is still behind one node).
    int levels(std::int64_t numSystems) const
    {
        const std::int64_t fan = std::max(2, fanOut);
        int depth = 1;
        for (std::int64_t reach = fan; reach < numSystems; reach *= fan)
            ++depth;
        return depth;
    }
};

} // namespace waferscope::core
