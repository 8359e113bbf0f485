#pragma once

#include <algorithm>

namespace waferscope::core {

// MemoryX: the off-wafer weight and optimizer-state store used by weight streaming. It streams
// weights to the systems and runs the optimizer on the gradients that come back. It is a
// hybrid of two tiers: DRAM (the first dramBytes of the model's state) and flash (the rest of
// the capacity). Weights stream from the tier they live in.
struct MemoryXSpec {
    bool supported = false; // false for systems that predate weight streaming (CS-1)
    double capacityBytes = 0.0; // largest configuration, both tiers
    double dramBytes = 0.0; // the DRAM tier of that configuration; the flash tier is the rest
    double maxParams = 0.0; // largest model it holds with optimizer state
    double bandwidthBytesPerS = 0.0; // MemoryX's I/O to the SwarmX / systems
    double optimizerParamsPerS = 0.0; // optimizer update rate
    // Optional in a preset (0 when absent):
    double bytesPerParam = 0.0; // what it stores per trained parameter; 0 = the model's own weights + optimizer state
    double dramBandwidthBytesPerS = 0.0; // the DRAM tier's read rate; 0 = not below bandwidthBytesPerS
    double flashBandwidthBytesPerS = 0.0; // the flash tier's read rate; 0 = the DRAM tier's

    double flashBytes() const { return std::max(0.0, capacityBytes - dramBytes); }
    // The rate weights leave MemoryX at when read from each tier: the tier's, capped by the I/O.
    double dramReadBytesPerS() const
    {
        return dramBandwidthBytesPerS > 0.0 ? std::min(bandwidthBytesPerS, dramBandwidthBytesPerS) : bandwidthBytesPerS;
    }
    double flashReadBytesPerS() const
    {
        return flashBandwidthBytesPerS > 0.0 ? std::min(bandwidthBytesPerS, flashBandwidthBytesPerS)
                                             : dramReadBytesPerS();
    }
};

} // namespace waferscope::core
