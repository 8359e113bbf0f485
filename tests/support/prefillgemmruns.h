#pragma once

// The prefill GEMM kernel (core/cyclelevel/kernels/prefillgemmkernel.h) built on a
// DecodeKernelHarness from a small shape, fed a seeded prompt in its lanes and run once, with
// what the reference computes for every token of it and the bound of two summation orders.
#include "decodekernelharness.h"

#include "core/kernels/kernelspec.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::test {

struct PrefillGemmCase {
    std::string name;
    int grid = 1; // g: the block is g x g PEs
    int tokens = 1;
    int inFeatures = 8;
    int outFeatures = 8;
    bool bias = true;
    std::optional<core::Activation> activation;
    int simdWidth = 8; // FP16 lanes of a PE's engine
};

struct PrefillGemmRun {
    std::vector<float> out; // tokens x outFeatures, as the kernel leaves them
    std::vector<int> writes; // per output: how many output tiles hold it
    std::vector<float> reference; // linearOverTokens, then the activation if any
    std::vector<float> sums; // the reference's sums plus the bias, not rounded
    std::vector<float> sumBounds; // per output: how far two summation orders' sums can differ
    KernelMeasure measure;
    std::uint64_t fmacs = 0; // the block's PEs' multiply-adds
    int colors = 0; // the most colors any router carries
    std::int64_t peakSramBytes = 0; // the most any block PE holds
};

PrefillGemmRun runPrefillGemm(const PrefillGemmCase& shape, core::Storage storage);

// GEMMs one after the other on one block, each taking the previous one's outputs where they lie:
// the first fed a seeded prompt in its lanes, then transposed and plain in turn, each with a band
// offset one less (PrefillGemmSpec). Every stage is a run of its own on the fabric; its reference
// and bounds are computed from the outputs the stage before left on the fabric. All stages share
// the first's grid and tokens; each stage's inFeatures is the previous one's outFeatures.
std::vector<PrefillGemmRun> runPrefillGemmChain(const std::vector<PrefillGemmCase>& stages, core::Storage storage);

} // namespace waferscope::test
