#pragma once

namespace waferscope::core {

// MemoryX: the off-wafer weight and optimizer-state store used by weight streaming. It streams
// weights to the systems and runs the optimizer on the gradients that come back.
struct MemoryXSpec {
    bool supported = false; // false for systems that predate weight streaming (CS-1)
    double capacityBytes = 0.0; // largest configuration
    double dramBytes = 0.0; // fast tier of that configuration
    double maxParams = 0.0; // largest model it holds with optimizer state
    double bandwidthBytesPerS = 0.0; // to the SwarmX / systems
    double optimizerParamsPerS = 0.0; // optimizer update rate
};

} // namespace waferscope::core
