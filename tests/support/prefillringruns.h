#pragma once

// Prefill kernels that take their inputs where the kernels before left them, on one g x g block of
// a DecodeKernelHarness: the ring attention after the q, k and v projections, and the norm before
// a projection; with what the reference ops compute from the same inputs.
#include "decodekernelharness.h"

#include "core/cyclelevel/kernels/prefillgrid.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::test {

// tokens x width values from tiles a prefill kernel left (tile.firstDim counts in width), NaN
// where no tile holds one; `writes` (if given) counts the tiles that hold each.
std::vector<float> gatherTiles(const DecodeKernelHarness& harness,
    const std::vector<core::cyclelevel::PrefillOutputTile>& tiles, std::size_t tokens, std::size_t width,
    std::vector<int>* writes = nullptr);

struct RingAttentionCase {
    std::string name;
    int heads = 1; // the block is heads x heads PEs
    int headDim = 8;
    int tokens = 1;
    int hidden = 16; // the projections' input
    int simdWidth = 8;
};

struct RingAttentionRun {
    std::vector<float> out; // tokens x heads x headDim, as the reference's rows
    std::vector<int> writes; // per output: how many output tiles hold it
    std::vector<float> reference; // token i: referenceops attention() at position i over keys 0..i
    std::vector<float> keys; // tokens x heads x headDim: where the kernel says the keys are after it
    std::vector<float> projectedKeys; // ... and what the k projection left
    std::vector<float> values;
    std::vector<float> projectedValues;
    KernelMeasure measure; // the attention's run
    core::KernelCost model; // its closed form
    std::uint64_t fmacs = 0; // the attention's multiply-adds
    int colors = 0;
    std::int64_t peakSramBytes = 0;
};

RingAttentionRun runRingAttention(const RingAttentionCase& shape, core::Storage storage);

// The prefill norm (core/cyclelevel/kernels/prefillnormkernel.h) on a g x g block whose PEs hold a
// seeded prompt's hidden vectors as a plain GEMM takes them (written into their SRAM), then a
// plain GEMM that takes the normed tiles where the norm left them.
struct PrefillNormCase {
    std::string name;
    int grid = 1;
    int tokens = 1;
    int hidden = 8;
    bool layerNorm = false;
    bool bias = false; // LayerNorm's
    int bandOffset = 0;
};

struct PrefillNormRun {
    std::vector<float> out; // tokens x hidden
    std::vector<int> writes;
    std::vector<float> reference; // referenceops norm() of each token
    std::vector<float> moved; // the input where the kernel says it moved it
    std::vector<float> input;
    std::vector<float> projected; // the GEMM after the norm, tokens x 6
    std::vector<float> projectedReference; // linearOverTokens of the kernel's normed tiles
    KernelMeasure measure;
    core::KernelCost model; // the norm's closed form
    int colors = 0;
};

PrefillNormRun runPrefillNorm(const PrefillNormCase& shape, core::Storage storage);

} // namespace waferscope::test
