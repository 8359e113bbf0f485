#pragma once

// Each decode kernel built on a DecodeKernelHarness from a small shape, fed seeded inputs and
// run, with what the reference ops (core/cyclelevel/referenceops.h) compute for the same inputs.
#include "decodekernelharness.h"

#include "core/cyclelevel/decoder.h"
#include "core/cyclelevel/kernels/attentionkernel.h"
#include "core/cyclelevel/kernels/embeddingkernel.h"
#include "core/cyclelevel/kernels/gemvkernel.h"
#include "core/cyclelevel/kernels/normcolumn.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::test {

// ---- NormColumn ----

struct NormCase {
    std::string name;
    int lanes = 1; // one per row of a one-column region
    std::uint32_t length = 0;
    core::cyclelevel::DecoderShape::Norm norm = core::cyclelevel::DecoderShape::Norm::LayerNorm;
    bool bias = true; // LayerNorm only
};

struct NormRun {
    core::Lanes lanes;
    std::vector<float> out; // the normalised vector, gathered from the lanes
    std::vector<float> reference;
    KernelMeasure measure;
    core::KernelCost model; // the kernel's closed form (RegionKernel::closedForm), from the spec it ran
};

NormRun runNorm(const NormCase& shape, core::Storage storage);

// ---- GemvKernel ----

struct GemvCase {
    std::string name;
    int w = 1;
    int h = 1;
    int firstColumn = 0;
    core::Lanes input; // on rows of the region (its first row is row 0)
    core::Lanes output;
    std::int64_t inFeatures = 0;
    std::int64_t outFeatures = 0;
    core::Epilogue epilogue = core::Epilogue::Round;
    core::cyclelevel::DecoderShape::Activation activation = core::cyclelevel::DecoderShape::Activation::Gelu;
    bool bias = false;
    std::int64_t position = 0; // Rotary
    int topK = 0; // Route: the experts (outFeatures) the router picks per token
    bool treeReduced = false; // the output rows reduce along a binary tree, not a chain
};

struct GemvRun {
    std::vector<std::vector<float>> lanes; // per output lane, as the kernel left it at its exit
    std::vector<float> sums; // the reference's float sums with the bias (the logits)
    std::vector<float> sumBounds; // per output: how far apart two summation orders may put them
    std::vector<float> side; // the side input (Residual: x; Gated: up), by output index
    std::uint32_t argmax = 0; // Logits: the token id the kernel found
    KernelMeasure measure;
    core::KernelCost model; // the kernel's closed form (RegionKernel::closedForm), from the spec it ran
};

// The side input (Residual, Gated) is sent first on its row: in a decode it is ready before the
// GEMV's input (the residual x before the block; up beside gate).
GemvRun runGemv(const GemvCase& shape, core::Storage storage);

// ---- AttentionKernel ----

struct AttentionCase {
    std::string name;
    int w = 1;
    int heads = 1; // a row each
    int kvHeads = 1;
    int headDim = 8;
    int positions = 1; // runs positions 0 .. positions - 1, a program each, as a decode does
    int rowsPerHead = 1; // a head's dimensions split over this many rows
    bool alibi = false; // ALiBi biases the scores (else rotary positions, applied before the kernel)
};

struct AttentionRun {
    std::vector<std::vector<float>> out; // per position: every head's output
    std::vector<std::vector<float>> reference; // per position
    std::vector<KernelMeasure> measures; // per position
    std::vector<core::KernelCost> models; // the kernel's closed form at each position
};

AttentionRun runAttention(const AttentionCase& shape, core::Storage storage);

// ---- EmbeddingKernel ----

struct EmbeddingCase {
    std::string name;
    int w = 1;
    int h = 1;
    int lanes = 1;
    std::int64_t hidden = 0;
    std::int64_t vocab = 0;
    std::int64_t positionRows = 0; // 0: no learned positions
    std::int32_t token = 0;
    std::int64_t position = 0;
};

struct EmbeddingRun {
    core::Lanes lanes;
    std::vector<float> out; // gathered from the lanes' exits
    std::vector<float> reference;
    KernelMeasure measure;
    core::KernelCost model; // the kernel's closed form (RegionKernel::closedForm), from the spec it ran
};

EmbeddingRun runEmbedding(const EmbeddingCase& shape, core::Storage storage);

} // namespace waferscope::test
