#pragma once

#include "core/kernels/kernelcost.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace waferscope::core {

// An MoE experts region: `experts` experts side by side, each its up (gate) and down
// projections on consecutive pieces of the region's columns (GemvKernel dispatch, one piece per
// projection). Cycles run from the router's last step, as its routing weights leave its exit on
// the region's first row, west of column 0; the token's (normalised) input lanes are already in.
// A chosen expert multiplies; the others pass their streams on. Each down's exit scales its
// output by its weight and adds it to the running sum that travels from exit to exit in expert
// order; the last adds the residual. Which experts a token chooses is data: given `chosen`, the
// cycles and busy engine cycles are that token's; without, their expectation over a uniformly
// chosen set of topK.
struct DecodeExpertsShape {
    int width = 1;
    int height = 1;
    int experts = 1;
    int topK = 1;
    bool gatedFfn = true; // up, gate and down pieces (else up with its activation, and down)
    std::vector<DecodeLane> hidden; // the input and output lanes
    std::vector<DecodeLane> ffn; // the inner lanes between an expert's projections
    int simdWidth = 8;
    std::vector<int> chosen; // the token's experts (empty: any topK of them)
    // false: shared experts, which every token runs: no routing weights, every expert multiplies,
    // and cycles run from the input lanes' first wavelets at column 0 (as for a GEMV).
    bool routed = true;
    bool treeReduced = false; // each piece's rows reduce along binary trees
};
KernelCost costDecodeExperts(const DecodeExpertsShape& shape);

} // namespace waferscope::core
