#pragma once

#include "core/common/names.h"
#include "core/engine/calibration.h"
#include "core/fabric/kernels.h"
#include "core/kernels/gemvspec.h"
#include "core/kernels/kernelspec.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::core::engine {

// What a kernel costs on a region, in closed form: the engine's fast stand-in for the
// cycle-level fabric (core/fabric), cross-checked against it in tests/core/test_costmodel.cpp.
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

// The fabric kernels as core/fabric builds them (GEMV, streamed GEMM, row/column broadcast and
// reduce), for the same KernelConfig.
KernelCost costKernel(const fabric::KernelConfig& config, const Calibration& calibration, int hopLatencyCycles = 1);

// A weight-streaming op on the whole wafer (rows x cols PEs): Y (out x tokens) = W (out x in)
// X (in x tokens) with X resident and W streamed in. The engine's mapping: tokens in tiles of
// (at least) the SIMD width, the input features of a token tile split over as many PEs as the
// wafer has room for; each PE multiplies every arriving weight of its feature slice into its
// tokens, and the partial sums of a token tile are reduced along its chain of PEs. Sparse
// weights stream as (value, index) with a marker per output row; zeros cost nothing.
struct StreamedGemmShape {
    std::int64_t outFeatures = 0;
    std::int64_t inFeatures = 0;
    std::int64_t tokens = 0;
    double density = 1.0; // non-zero share of the weights
};
struct StreamedGemmCost : KernelCost {
    std::int64_t featureTile = 0; // input features per PE
    std::int64_t tokenTile = 0; // tokens per PE
    std::int64_t pesUsed = 0;
};
StreamedGemmCost costStreamedGemm(const StreamedGemmShape& shape, int rows, int cols, int simdWidth,
    const Calibration& calibration, int hopLatencyCycles = 1);

// ---- The decode kernels of the cycle-level run (core/cyclelevel/kernels/) ----
// Closed forms of one token's kernel on its region, cross-checked against the fabric in
// tests/core/test_decodekernels.cpp. They assume the inputs the kernel is fed there: each lane
// is sent along its row, one wavelet per cycle, from the PE before the region's first column,
// the first send at cycle 0; a row's streams follow one another (a side input first). Outputs
// stay at the exits. cycles: until the last PE's engine is done; linkWavelets: over the links
// out of the region's PEs (exact); peBusyFraction: the engines' task and compute cycles (exact)
// over PEs x cycles; computeCycles and fabricCycles: the busiest PE's engine cycles and the
// busiest link's wavelets; fmacs: the multiply-adds of the kernel's dot products.

struct DecodeLane {
    int row = 0; // of the region
    std::int64_t size = 0; // elements
};

// The GEMV of a GemvSpec (core/kernels/gemvspec.h), the spec the cycle-level GemvKernel is built
// from: GEMV column t (region column firstColumn + t) takes input lane t mod inputs (a part of it
// when several columns share the lane), turns it down its column, and each output row's partial
// sums are reduced along the row (or its tree) to its last column. Only the spec's geometry,
// epilogue and tree matter here; its weights are the cycle-level run's.
// MoE dispatch (an expert's projection): every PE stores its lanes as they come and waits for
// the spec's `experts` routing weights, whose first wavelet reaches region column u, row v at
// routedAt + u + v; it multiplies only when its expert is `chosen`. inputsStored: the lanes were
// in before the weights came (they passed while the router computed).
struct GemvDispatch {
    std::optional<double> routedAt;
    bool chosen = true;
    bool inputsStored = false;
};
KernelCost costDecodeGemv(const GemvSpec& spec, int simdWidth, const GemvDispatch& dispatch = {});

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

// A LayerNorm or RMSNorm down one column, a lane per PE on consecutive rows.
struct NormColumnShape {
    std::vector<std::int64_t> laneSizes; // from the top PE down
    bool layerNorm = true; // else RMSNorm: one reduction and broadcast instead of two
    int simdWidth = 8;
};
KernelCost costNormColumn(const NormColumnShape& shape);

// Decode attention: `rowsPerHead` rows of `width` PEs per query head, each row a part of the
// head's dimensions (the partial scores summed down each column and sent back up), cache position
// j at column j mod width.
struct DecodeAttentionShape {
    int width = 1;
    int height = 0; // region rows, at least rowsPerHead per head (0: as many)
    int heads = 1;
    int headDim = 1;
    std::int64_t position = 0; // of the token: it attends positions 0..position
    int simdWidth = 8;
    int rowsPerHead = 1;
};
KernelCost costDecodeAttention(const DecodeAttentionShape& shape);

// The embedding: output lane i summed by a chain over its block of the region's columns (every
// row, serpentine), the token id multicast from the region's first PE.
struct EmbeddingLookupShape {
    int width = 1; // region columns, at least one per lane
    int height = 1;
    std::vector<std::int64_t> laneSizes;
    int simdWidth = 8;
};
KernelCost costEmbeddingLookup(const EmbeddingLookupShape& shape);

// ---- Prefill attention on the cycle-level fabric (core/cyclelevel/kernels/prefillattentionkernel.h) ----
// The closed form of a whole prompt's causal attention, cross-checked against the fabric in
// tests/core/test_prefillattention.cpp. Each head has a g x g block of PEs (the blocks stacked
// down the region, all alike): Cannon's shifts on MeshGEMM's interleaved rings for S = Q K^T, the
// softmax chains along each block row, then O = E V on the same rings. It assumes the inputs fed
// as there: each block row's query, key and value lanes sent one after another along the row from
// the PE before the region's first column, one wavelet per cycle, the first at cycle 0. The fields
// mean what they mean for the decode kernels above (linkWavelets and the engine cycles behind
// peBusyFraction exact); fmacs counts whole score and value tiles on and below the diagonal.
// Grouped kv heads change nothing here: each query head's block takes its kv head's keys and values.
struct PrefillAttentionShape {
    int grid = 1; // g
    int heads = 1;
    int headDim = 1;
    std::int64_t tokens = 1;
    int simdWidth = 8;
};
KernelCost costPrefillAttention(const PrefillAttentionShape& shape);

// ---- Prefill GEMM on the cycle-level fabric (core/cyclelevel/kernels/prefillgemmkernel.h) ----
// The closed form of Y = X W^T + b over a whole prompt on a g x g block, cross-checked against
// the fabric in tests/core/test_prefillgemm.cpp: W stationary (loaded), Cannon's shifts of the
// partial outputs along the rows and of the input tiles up the columns on MeshGEMM's interleaved
// rings, the epilogue where each output tile ends. It assumes the input fed as there: each block
// row's lane sent along the row from the PE before the block's first column, one wavelet per
// cycle, the first at cycle 0. linkWavelets and the engine cycles behind peBusyFraction are
// exact; fmacs counts tokens x outFeatures x inFeatures.
struct PrefillGemmShape {
    int grid = 1; // g
    std::int64_t tokens = 1;
    std::int64_t inFeatures = 1;
    std::int64_t outFeatures = 1;
    bool activation = false; // an activation after the bias and rounding
    int simdWidth = 8;
};
KernelCost costPrefillGemm(const PrefillGemmShape& shape);

} // namespace waferscope::core::engine
