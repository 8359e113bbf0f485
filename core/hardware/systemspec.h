#pragma once

#include "core/hardware/memoryxspec.h"
#include "core/hardware/swarmxspec.h"
#include "core/hardware/waferspec.h"

#include <map>
#include <string>

namespace waferscope::core {

// Where a preset value comes from: a published source, or an assumption and its reason.
// An assumed value may carry the range it could plausibly take and why (optional keys "range"
// and "range_reason"): `waferscope-cli sensitivity` varies it across that range.
struct Provenance {
    enum class Kind { Source, Assumed };
    Kind kind = Kind::Source;
    std::string text;
    bool hasRange = false;
    double rangeLow = 0.0;
    double rangeHigh = 0.0;
    std::string rangeReason;
};

// One CS-X system generation with the MemoryX and SwarmX of its era: a loaded preset.
struct SystemSpec {
    std::string name; // preset key: "cs2"
    std::string displayName; // "CS-2"
    std::string description; // one sentence for people, from the preset
    WaferSpec wafer;
    double ioBytesPerS = 0.0; // external I/O of one system
    double interSystemLatencyS = 0.0; // one activation hop between systems
    MemoryXSpec memoryx;
    SwarmXSpec swarmx;
    std::map<std::string, Provenance> provenance; // "wafer.clock_hz" -> where it comes from

    // One system's rate to and from MemoryX for data of its own (activation checkpoints, unlike
    // the weights every system shares, kept in its DRAM tier): its port, or its share of that
    // tier's rate.
    double ownDataBytesPerS(int numSystems) const
    {
        const double rate = memoryx.dramReadBytesPerS();
        const double share = rate / double(numSystems > 1 ? numSystems : 1);
        return rate > 0.0 && share < ioBytesPerS ? share : ioBytesPerS;
    }
};

} // namespace waferscope::core
