#pragma once

#include "core/common/names.h"

#include <cstdint>

namespace waferscope::core {

// What a kernel costs on a region, in closed form: the engine's fast stand-in for the
// cycle-level fabric (core/fabric), cross-checked against it in tests/core/engine/test_costmodel.cpp and
// tests/core/cyclelevel/test_decodekernels.cpp.
struct KernelCost {
    double cycles = 0.0; // until the last output is final
    double computeCycles = 0.0; // the busiest PE's task cycles
    double fabricCycles = 0.0; // the busiest link's wavelets (one per cycle)
    double latencyCycles = 0.0; // hops, chains and drains not hidden behind the two above
    double fmacs = 0.0;
    double peBusyFraction = 0.0; // all PEs' task cycles / (PEs x cycles)
    double linkWavelets = 0.0; // over all mesh links
    Bound bound = Bound::Compute; // compute, fabric or latency: the largest term
};

// A lane of a region's vector, as the closed forms count it: its row and its elements.
struct DecodeLane {
    int row = 0; // of the region
    std::int64_t size = 0; // elements
};

} // namespace waferscope::core
