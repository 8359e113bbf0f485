#pragma once

// A prompt through the q, k and v projections (prefill GEMMs) and the ring attention that takes
// their outputs where they lie (core/cyclelevel/kernels/prefillringattention.h), on one g x g
// block of a DecodeKernelHarness, g the heads; with what the reference ops compute from the q, k
// and v the projections left on the fabric.
#include "decodekernelharness.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::test {

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
    std::uint64_t fmacs = 0; // the attention's multiply-adds
    int colors = 0;
    std::int64_t peakSramBytes = 0;
};

RingAttentionRun runRingAttention(const RingAttentionCase& shape, core::Storage storage);

} // namespace waferscope::test
