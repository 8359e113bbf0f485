// The prefill GEMM kernel (core/cyclelevel/kernels/prefillgemmkernel.h) alone on a small fabric
// (tests/support/prefillgemmruns.h): its outputs against linearOverTokens (batchedlinear.h), in
// bfloat16 and FP16 storage, with and without a bias and an activation, and its cycles, PE
// activity, link traffic and multiply-adds against the closed form of core/kernels/prefillgemm.h,
// over shapes that cover square and ragged tiles, prompts the grid does not divide, fewer tokens,
// inputs or outputs than the grid, in != out, one token and one PE; and what it refuses.
#include "prefillgemmruns.h"
#include "testing.h"

#include "core/cyclelevel/kernels/prefillgemmkernel.h"
#include "core/cyclelevel/referenceops.h"
#include "core/fabric/half.h"
#include "core/kernels/prefillgemm.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <stdexcept>

using namespace waferscope::core;
using namespace waferscope::core::cyclelevel;
using namespace waferscope::test;

namespace {

constexpr Storage kStorages[] = { Storage::Bf16, Storage::Fp16 };

// { name, grid, tokens, in, out, bias, activation (, SIMD width) }
const std::vector<PrefillGemmCase>& gemmCases()
{
    static const std::vector<PrefillGemmCase> cases {
        { "one PE, 5 tokens, 24 -> 16", 1, 5, 24, 16, true, std::nullopt },
        { "one PE, silu, no bias", 1, 7, 12, 10, false, Activation::Silu },
        { "2x2, 8 tokens, 16 -> 16", 2, 8, 16, 16, true, std::nullopt },
        { "3x3, 10 tokens, 20 -> 12", 3, 10, 20, 12, true, std::nullopt },
        { "4x4, 30 tokens, 32 -> 48", 4, 30, 32, 48, true, std::nullopt },
        { "3x3, gelu, 9 tokens, 24 -> 36", 3, 9, 24, 36, true, Activation::Gelu },
        { "2x2, relu, no bias, 5 tokens", 2, 5, 10, 6, false, Activation::Relu },
        { "5x5, 3 tokens (empty bands)", 5, 3, 16, 10, true, std::nullopt },
        { "3x3, 2 inputs (empty blocks)", 3, 7, 2, 9, true, std::nullopt },
        { "4x4, 3 outputs (empty band)", 4, 16, 24, 3, true, std::nullopt },
        { "1 token, 3x3", 3, 1, 12, 12, true, std::nullopt },
    };
    return cases;
}

// The storage values from `low` to `high` (low <= high, both storage values), in order.
std::vector<float> storageValuesBetween(float low, float high, Storage storage)
{
    const auto ordered = [&](float value) {
        const std::uint16_t bits
            = storage == Storage::Bf16 ? fabric::floatToBfloat16(value) : fabric::floatToHalf(value);
        return bits & 0x8000 ? -int(bits & 0x7fff) : int(bits & 0x7fff);
    };
    std::vector<float> values;
    for (int k = ordered(low); k <= ordered(high); ++k) {
        const auto bits = std::uint16_t(k < 0 ? 0x8000 | -k : k);
        values.push_back(storage == Storage::Bf16 ? fabric::bfloat16ToFloat(bits) : fabric::halfToFloat(bits));
    }
    return values;
}

// The kernel's output is the reference's epilogue applied to a rounded sum within the bound of
// the reference's sum: to one of the storage values from S(sum - bound) to S(sum + bound) (one or
// two of them, more only where the sum cancels to far below its terms).
struct Agreement {
    int total = 0;
    int identical = 0;
    int outside = 0;
    Agreement(const PrefillGemmCase& shape, const PrefillGemmRun& run, Storage storage)
    {
        const auto epilogue = [&](float rounded) {
            return shape.activation ? ffnHidden(*shape.activation, rounded, 0.0f, storage) : rounded;
        };
        for (std::size_t i = 0; i < run.out.size(); ++i) {
            ++total;
            identical += std::bit_cast<std::uint32_t>(run.out[i]) == std::bit_cast<std::uint32_t>(run.reference[i]);
            const float low = roundToStorage(float(double(run.sums[i]) - double(run.sumBounds[i])), storage);
            const float high = roundToStorage(float(double(run.sums[i]) + double(run.sumBounds[i])), storage);
            bool within = false;
            for (const float candidate : storageValuesBetween(low, high, storage))
                within = within || run.out[i] == epilogue(candidate);
            outside += within ? 0 : 1;
        }
    }
};

} // namespace

// ---- The kernel against the reference ----

// Each output sums the same float products as linearOverTokens (the 16-bit weight times the
// float input) and the bias, the input blocks in ring order from a PE-dependent block: within
// 2 gamma_(in + 1) sum |terms| of the reference's sum, so the rounded output is the reference's
// epilogue of one of the two storage values around that sum, and nearly all (at least 90%) are
// the reference's to the bit.
WS_TEST(prefillGemmMatchesTheReferenceWithinTheSummationBound)
{
    for (const Storage storage : kStorages) {
        for (const PrefillGemmCase& shape : gemmCases()) {
            const PrefillGemmRun run = runPrefillGemm(shape, storage);
            WS_REQUIRE(run.out.size() == run.reference.size());
            // The output tiles hold every token's every output exactly once.
            WS_CHECK(std::all_of(run.writes.begin(), run.writes.end(), [](int writes) { return writes == 1; }));
            const Agreement agreement(shape, run, storage);
            std::printf("%-32s %s: %4d of %4d outputs identical, %d outside the bound\n", shape.name.c_str(),
                toString(storage), agreement.identical, agreement.total, agreement.outside);
            WS_CHECK_EQ(agreement.outside, 0);
            WS_CHECK(agreement.identical * 10 >= agreement.total * 9);
        }
    }
}

// On one PE every sum runs over the inputs from 0 in order, as the reference's: bit for bit.
WS_TEST(prefillGemmIsTheReferenceBitForBitOnOnePe)
{
    for (const Storage storage : kStorages) {
        for (const PrefillGemmCase& shape : gemmCases()) {
            if (shape.grid > 1)
                continue;
            const PrefillGemmRun run = runPrefillGemm(shape, storage);
            const Agreement agreement(shape, run, storage);
            WS_CHECK_EQ(agreement.identical, agreement.total);
        }
    }
}

// A PE holds W's tile and its biases in the 16-bit format and two buffers each of the partial
// outputs and the input tile, whatever g: at most 2 (n k + n) + 4 x 2 ceil(T / g) (n + k) bytes,
// n and k the widest output band and input block.
WS_TEST(prefillGemmHoldsTwoBuffersOfEachTileAPe)
{
    for (const PrefillGemmCase& shape : gemmCases()) {
        const PrefillGemmRun run = runPrefillGemm(shape, Storage::Bf16);
        const auto widest = [&](int total) { return std::int64_t((total + shape.grid - 1) / shape.grid); };
        const std::int64_t n = widest(shape.outFeatures);
        const std::int64_t k = widest(shape.inFeatures);
        const std::int64_t tokens = widest(shape.tokens);
        WS_CHECK(run.peakSramBytes <= 2 * (n * k + n) + 4 * 2 * tokens * (n + k));
    }
}

// ---- The closed form against the fabric ----
//
// Link wavelets, engine cycles and multiply-adds are exact: the kernel fixes every tile's size
// and route, a task's cost per wavelet and a compute step's cycles. Cycles are within 2% (over
// these shapes they are exact): the closed form follows the programs' steps with the fabric's
// latencies at the grain of whole tiles; what it leaves out, the cycles a wavelet waits for a link
// another color holds, does not arise here (each ring edge has a color of its own and the lanes
// are done before the first shift). So the busy fraction, exact engine cycles over modelled
// cycles, is within 2% too.

namespace {

const std::vector<PrefillGemmCase>& sweepCases()
{
    static const std::vector<PrefillGemmCase> cases {
        { "2x2, 64 tokens, 32 -> 32", 2, 64, 32, 32, true, std::nullopt },
        { "4x4, 33 tokens, 40 -> 24", 4, 33, 40, 24, true, std::nullopt },
        { "6x6, 48 tokens, 48 -> 48", 6, 48, 48, 48, true, std::nullopt },
        { "5x5, 64 tokens, 20 -> 64", 5, 64, 20, 64, true, Activation::Gelu },
        { "3x3, 40 tokens, SIMD 4", 3, 40, 30, 18, true, std::nullopt, 4 },
        { "4x4, 32 tokens, SIMD 16", 4, 32, 64, 32, true, std::nullopt, 16 },
        { "one PE, 16 tokens, 64 -> 32", 1, 16, 64, 32, true, std::nullopt },
        { "8x8, 64 tokens, 64 -> 64", 8, 64, 64, 64, true, std::nullopt },
        { "10x10, 50 tokens, 80 -> 60", 10, 50, 80, 60, true, Activation::Relu },
    };
    return cases;
}

double worstCycleError = 0.0;

void checkClosedForm(const PrefillGemmCase& shape)
{
    const PrefillGemmRun run = runPrefillGemm(shape, Storage::Bf16);
    const KernelCost model = costPrefillGemm({ shape.grid, shape.tokens, shape.inFeatures, shape.outFeatures,
        shape.activation.has_value(), shape.simdWidth });
    const KernelMeasure& measure = run.measure;
    const double cycles = double(measure.cycles);
    const double error = (model.cycles - cycles) / cycles;
    std::printf("prefill gemm %-30s %6llu cycles, model %8.1f (%+5.1f%%); busy %.3f, model %.3f; %7llu link wavelets\n",
        shape.name.c_str(), static_cast<unsigned long long>(measure.cycles), model.cycles, 100.0 * error,
        measure.busyFraction(), model.peBusyFraction, static_cast<unsigned long long>(measure.linkWavelets));
    WS_CHECK_EQ(model.linkWavelets, double(measure.linkWavelets));
    WS_CHECK_NEAR(model.peBusyFraction * double(measure.pes) * model.cycles, double(measure.busyCycles), 1e-9);
    WS_CHECK_EQ(model.fmacs, double(run.fmacs));
    WS_CHECK_EQ(model.fmacs, double(shape.tokens) * shape.inFeatures * shape.outFeatures);
    WS_CHECK(std::fabs(error) <= 0.02);
    WS_CHECK(std::fabs(model.peBusyFraction - measure.busyFraction()) <= 0.02 * measure.busyFraction());
    worstCycleError = std::max(worstCycleError, std::fabs(error));
}

} // namespace

WS_TEST(prefillGemmClosedFormTracksTheFabric)
{
    for (const PrefillGemmCase& shape : gemmCases())
        checkClosedForm(shape);
    for (const PrefillGemmCase& shape : sweepCases())
        checkClosedForm(shape);
    std::printf("prefill gemm: worst cycle error of the closed form %.1f%%\n", 100.0 * worstCycleError);
}

// Nothing in the kernel's timing depends on the storage format.
WS_TEST(prefillGemmTimingIsTheSameInBothStorageFormats)
{
    const PrefillGemmCase& shape = gemmCases()[3];
    const KernelMeasure bf16 = runPrefillGemm(shape, Storage::Bf16).measure;
    const KernelMeasure fp16 = runPrefillGemm(shape, Storage::Fp16).measure;
    WS_CHECK_EQ(bf16.cycles, fp16.cycles);
    WS_CHECK_EQ(bf16.busyCycles, fp16.busyCycles);
    WS_CHECK_EQ(bf16.linkWavelets, fp16.linkWavelets);
}

// ---- GEMMs one after the other ----

// A prompt through four GEMMs on one block, none of them moving what the one before left: plain,
// transposed, plain, transposed, each taking the previous one's output tiles where they lie
// (output bands on rows become input blocks on rows) with a band offset one less. Each stage agrees
// with the reference (from the outputs the stage before left on the fabric) as a GEMM fed in
// lanes does, every output written once, over grids that divide the prompt and ones that do not.
WS_TEST(prefillGemmsChainWithoutMovingTheirOutputs)
{
    for (const Storage storage : kStorages) {
        for (const int g : { 1, 2, 3, 4, 5 }) {
            const int tokens = g == 5 ? 3 : 10; // 5 x 5 over 3 tokens: empty bands
            const std::vector<PrefillGemmCase> stages {
                { "up", g, tokens, 24, 36, true, std::nullopt },
                { "down, transposed", g, tokens, 36, 20, true, Activation::Gelu },
                { "again", g, tokens, 20, 12, false, std::nullopt },
                { "last, transposed", g, tokens, 12, 16, true, std::nullopt },
            };
            const std::vector<PrefillGemmRun> runs = runPrefillGemmChain(stages, storage);
            WS_REQUIRE(runs.size() == stages.size());
            for (std::size_t k = 0; k < stages.size(); ++k) {
                const Agreement agreement(stages[k], runs[k], storage);
                WS_CHECK_EQ(agreement.outside, 0);
                WS_CHECK(agreement.identical * 10 >= agreement.total * 9);
                WS_CHECK(std::all_of(runs[k].writes.begin(), runs[k].writes.end(), [](int w) { return w == 1; }));
                WS_CHECK_EQ(runs[k].fmacs,
                    std::uint64_t(tokens) * std::uint64_t(stages[k].inFeatures) * std::uint64_t(stages[k].outFeatures));
            }
        }
    }
}

// ---- What the kernel refuses ----

WS_TEST(prefillGemmRefusesWhatItCannotRun)
{
    const auto refusal = [](PrefillGemmSpec spec) -> std::string {
        try {
            PrefillGemmKernel kernel(std::move(spec), KernelContext {});
        } catch (const std::logic_error& error) {
            return error.what();
        }
        return "";
    };
    PrefillGemmSpec spec;
    spec.name = "q proj";
    spec.frame = { 0, 0, 3, 3, false };
    spec.tokens = 8;
    spec.weight = WeightTensor(1, 0.0f, 0.5f, 12, 9, Storage::Fp16);
    spec.bias = WeightTensor(2, 0.0f, 0.1f, 1, 12, Storage::Fp16);
    WS_CHECK_EQ(refusal(spec), std::string());
    PrefillGemmSpec rows = spec;
    rows.frame.h = 2;
    WS_CHECK_CONTAINS(refusal(rows), "q proj: a 3 x 3 block needs");
    WS_CHECK_CONTAINS(refusal(rows), "the region has 2");
    PrefillGemmSpec empty = spec;
    empty.tokens = 0;
    WS_CHECK_CONTAINS(refusal(empty), "q proj: the prompt has no tokens");
    PrefillGemmSpec noWeight = spec;
    noWeight.weight = WeightTensor::absent(Storage::Fp16);
    WS_CHECK_CONTAINS(refusal(noWeight), "q proj: the prefill GEMM needs a weight matrix");
    PrefillGemmSpec bias = spec;
    bias.bias = WeightTensor(2, 0.0f, 0.1f, 1, 11, Storage::Fp16);
    WS_CHECK_CONTAINS(refusal(bias), "one row of 12 values (one per output), got 1 x 11");
    PrefillGemmSpec gated = spec;
    gated.activation = Activation::SwiGlu;
    WS_CHECK_CONTAINS(refusal(gated), "q proj: a gated activation");
    PrefillGemmSpec wide = spec;
    wide.weight = WeightTensor(1, 0.0f, 0.5f, 12, 3 * 1024, Storage::Fp16);
    WS_CHECK_CONTAINS(refusal(wide), "over 1024 inputs, more than a step takes");
    PrefillGemmSpec lanes = spec;
    lanes.transposed = true;
    WS_CHECK_CONTAINS(refusal(lanes), "q proj: a transposed GEMM takes its input in place");

    // In place: the tiles a GEMM before left, taken with the band offset one less; with any
    // other offset the first PE whose tile is not the one it starts with is named.
    DecodeKernelHarness harness(3, 3, Storage::Fp16);
    spec.frame = harness.frame();
    PrefillGemmKernel before(spec, harness.context());
    before.load(harness.fabric());
    PrefillGemmSpec after = spec;
    after.weight = WeightTensor(3, 0.0f, 0.5f, 6, 12, Storage::Fp16);
    after.bias = WeightTensor::absent(Storage::Fp16);
    after.transposed = true;
    after.bandOffset = -1;
    after.inputInPlace = before.outputTiles();
    WS_CHECK_EQ(refusal(after), std::string());
    PrefillGemmSpec skewed = after;
    skewed.bandOffset = 0;
    WS_CHECK_CONTAINS(refusal(skewed), "q proj: the input tile at PE");
    WS_CHECK_CONTAINS(refusal(skewed), "the PE starts with tokens");
    PrefillGemmSpec missing = after;
    missing.inputInPlace.pop_back();
    WS_CHECK_CONTAINS(refusal(missing), "has no input tile in place");
}
