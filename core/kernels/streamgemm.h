#pragma once

#include "core/kernels/kernelcost.h"

#include <cstdint>
#include <vector>

namespace waferscope::core {

// A weight-streaming GEMM on the cycle-level fabric (core/cyclelevel/kernels/streamgemmkernel.h),
// in closed form: R x C PEs, each holding its T tokens' activations (all of the inner dimension,
// 16-bit) and accumulating its row band's outputs for them. Each PE row's weights stream in from
// the west, a wavelet a non-zero weight and a row marker after each output, multicast along the
// row; each PE spends max(1, ceil(T / SIMD)) cycles on a weight and one on a marker. Forward,
// Y = W X, streams W's rows; the backward delta, dX = W^T dY, streams W again, by its columns.
// It assumes each row's stream fed from the PE before the first column, a wavelet a cycle from
// cycle 0 (as the kernel tests feed it): the row then runs at its PEs' pace, each PE a cycle and
// a hop behind the one before. Engine cycles and link wavelets are exact.
struct StreamGemmShape {
    int columns = 1; // C
    int tokensPerPe = 1; // T
    std::vector<std::int64_t> weights; // per PE row: the non-zero weights its stream carries
    std::vector<std::int64_t> outputs; // per PE row: its outputs (a row marker each)
    int simdWidth = 8;
    // The edge's pace (StaticColorFabric::EdgeRate): each row's stream enters off the wafer, the
    // first wavelet at cycle ioStart, then at most ioWavelets every ioCycles cycles; a row then
    // ends once its last wavelet has come and crossed the row (ioWavelets = ioCycles, ioStart 0:
    // the link's pace, as a feeder's).
    std::uint64_t ioStart = 0;
    std::uint32_t ioWavelets = 1;
    std::uint32_t ioCycles = 1;
};
KernelCost costStreamGemm(const StreamGemmShape& shape);

// Its weight gradient, dW = dY X^T (core/cyclelevel/kernels/streamgradientkernel.h), on the same
// layout: each PE's tokens' share of every kept weight of its row's band (max(1, ceil(T / SIMD))
// cycles a weight), then the shares added along the row from east to west, a wavelet a cycle
// through each PE's AddForward, the last PE's send a chain head (closedform.h); the first PE keeps
// the sums, then sends them off the wafer through its west link, at most exitWavelets every
// exitCycles cycles.
// Engine cycles and link wavelets (the chain's and the exit's from the first PE) are exact.
struct StreamGradientShape {
    int columns = 1; // C
    int tokensPerPe = 1; // T
    std::vector<std::int64_t> kept; // per PE row: the weights of its band the mask keeps
    int simdWidth = 8;
    std::uint32_t exitWavelets = 1;
    std::uint32_t exitCycles = 1;
    // A row's kept weights at most a chunk at a time: each chunk's shares, chain and exit in turn
    // (the first PE computes the next chunk's shares once its exit has gone).
    std::uint32_t chunk = 0xffffffffu;
};
KernelCost costStreamGradient(const StreamGradientShape& shape);

// The column all-gather after a weight-streaming op (core/cyclelevel/kernels/columngatherkernel.h):
// in each of C columns, the R rows' bands sweep down and up the column at once, each PE storing
// and passing on what comes (a cycle a wavelet, the pass a chain's forwarding hop) and then
// sending its own band; a row sends up once its down store is in and its own band has gone down.
// Engine cycles and link wavelets are exact.
struct ColumnGatherShape {
    int columns = 1; // C
    int tokensPerPe = 1; // T
    std::vector<std::int64_t> bands; // per PE row: its band's values a token
};
KernelCost costColumnGather(const ColumnGatherShape& shape);

// A step every PE of a weight-streaming layout computes on what it holds, moving nothing (the
// activation and its backward on the bands, the loss on the gathered logits): the busiest PE's
// engine cycles (computesteps' elementwiseCycles of its SIMD operations). Exact.
struct LocalStepShape {
    int columns = 1; // C
    std::vector<std::int64_t> operations; // per PE row: the element operations each of its PEs does
    int simdWidth = 8;
};
KernelCost costLocalStep(const LocalStepShape& shape);

// A training step's causal attention on the weight-streaming layout (rowattentionkernel.h): on
// each of `heads` PE rows, segments of `segment` columns (a sequence's), each PE sending its
// block to the next PE of its segment and passing on the blocks that come, one store of
// tileWavelets (a cycle a wavelet) and one block step a block. In a segment the PE with the most
// blocks to take, the far end, takes them one after another, each as it comes (its store) and
// then its step, after its own block, and then finishes: prepare + block + (segment - 1)
// (tile + block + a hop) + finish. Engine cycles and link wavelets are exact.
struct RowAttentionShape {
    int columns = 1; // C
    int rows = 1; // R
    int heads = 1;
    int segment = 1; // columns a sequence spans
    double tileWavelets = 0.0;
    double blockCycles = 0.0;
    double finishCycles = 0.0;
    double prepareCycles = 0.0; // the backward's D, before the block goes
};
KernelCost costRowAttention(const RowAttentionShape& shape);

} // namespace waferscope::core
