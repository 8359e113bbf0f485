#pragma once

// Private to core/compiler: the units the placer works with.
#include "core/compiler/compiler.h"

#include <cstdint>
#include <vector>

namespace waferscope::core::compiler {

// One placeable unit: a compute op and the elementwise ops fused into it, with what it costs
// in the mode being compiled.
struct Unit {
    int op = -1;
    std::vector<int> fused;
    int stage = 0;
    double work = 0.0; // FLOPs per sample (training) or per token (inference): sizes the region
    std::int64_t weightBytes = 0;
    std::int64_t stateBytes = 0; // gradients + optimizer state (training, pipelined)
    std::int64_t activationBytes = 0; // held by the region (already times the samples in flight)
    std::int64_t kvCacheBytes = 0;
    std::int64_t maxUsefulPes = 0; // more PEs than this do not make it faster
    std::int64_t bytes() const { return weightBytes + stateBytes + activationBytes + kvCacheBytes; }
};

// Groups ops into units (norms, activations, position embeddings and the loss run inside a
// neighbouring op's region) and numbers the pipeline stages: one per transformer block, plus
// the ops before and after the blocks.
std::vector<Unit> buildUnits(const ModelGraph& graph, const SystemSpec& system, int& stages);

// Fills in the costs of `units` for pipelined training (samples in flight per stage) or for
// inference (one user at the configured sequence length).
void costUnitsPipelined(std::vector<Unit>& units, const ModelGraph& graph, int stages);
void costUnitsInference(std::vector<Unit>& units, const ModelGraph& graph);

// PEs a unit needs for its bytes alone.
std::int64_t memoryPes(const Unit& unit, std::int64_t capacityPerPe);

// Lays units [first, last) out in serpentine strips inside `band`: one strip of full band width
// per stage, ops left to right, then right to left, so consecutive ops and stages touch. Every
// strip and every op first gets what its bytes need; the remaining rows and columns go one at a
// time to whichever stage and op has the most work per PE. Appends the regions (rectangles,
// bytes, kernels) and returns an empty string, or says why the units do not fit. With
// `fillHeight`, a single stage's strip takes the band's whole height (a tier of stacked blocks).
std::string layoutStrips(const std::vector<Unit>& units, std::size_t first, std::size_t last, const Rect& band,
    std::int64_t capacityPerPe, const ModelGraph& graph, const SystemSpec& system, bool training, int wafer,
    int replica, std::vector<Region>& regions, bool fillHeight = false);

// Kernel plan and compute cycles (per sample when training, per token otherwise) of an op on
// an h x w rectangle.
void planKernel(Region& region, const Unit& unit, const ModelGraph& graph, const SystemSpec& system, bool training);

std::int64_t ceilDiv(std::int64_t a, std::int64_t b);

// Ops whose work is a weight matrix times activations (GEMV on a region, streamed GEMM).
bool isMatrixOp(Op::Kind kind);

} // namespace waferscope::core::compiler
