#pragma once

namespace waferscope::core {

// SwarmX: the fabric that broadcasts weights from MemoryX to every system and reduces the
// gradients on the way back. Its topology is not published; WaferScope models it as a tree.
struct SwarmXSpec {
    bool supported = false; // false for single-system generations (CS-1)
    int maxSystems = 1; // largest cluster of this generation
    int fanOut = 0; // children per tree node
    double linkBytesPerS = 0.0; // per tree link, each direction
    double levelLatencyS = 0.0; // added per tree level
};

} // namespace waferscope::core
