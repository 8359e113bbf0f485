#pragma once

// The prefill attention kernel (core/cyclelevel/kernels/prefillattentionkernel.h) built on a
// DecodeKernelHarness from a small shape, fed seeded Q, K and V in its lanes and run over the
// whole prompt, with what the reference ops compute for every token of it.
#include "decodekernelharness.h"

#include "core/cyclelevel/decoder.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::test {

struct PrefillCase {
    std::string name;
    int grid = 1; // g: a head's block is g x g PEs
    int heads = 1; // stacked down the region
    int kvHeads = 1;
    int headDim = 8;
    int tokens = 1;
    int simdWidth = 8; // FP16 lanes of a PE's engine
};

struct PrefillRun {
    std::vector<float> out; // tokens x heads x headDim, as the reference's rows
    std::vector<float> reference; // token i: referenceops attention() at position i over keys 0..i
    KernelMeasure measure;
    std::uint64_t fmacs = 0; // the region's PEs' multiply-adds
    std::uint64_t fmacsAboveDiagonal = 0; // of the PEs whose key band lies after their query band
    int colors = 0; // the most colors any router carries
    std::int64_t peakSramBytes = 0; // the most any region PE holds
};

PrefillRun runPrefill(const PrefillCase& shape, core::Storage storage);

} // namespace waferscope::test
