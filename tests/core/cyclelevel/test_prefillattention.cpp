// The prefill attention kernel (core/cyclelevel/kernels/prefillattentionkernel.h) alone on a small fabric
// (tests/support/prefillattentionruns.h): its outputs against the reference ops' attention of each
// token over the tokens up to it, in bfloat16 and FP16 storage, and its cycles, PE activity, link
// traffic and multiply-adds against the closed form of core/kernels/prefillattention.h, over shapes that
// cover one head, several heads, grouped kv heads, tokens and head sizes that the grid does not
// divide, fewer tokens than the grid, one token and one PE.
#include "prefillattentionruns.h"
#include "testing.h"

#include "core/cyclelevel/kernels/prefillattentionkernel.h"
#include "core/fabric/half.h"
#include "core/kernels/prefillattention.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

using namespace waferscope::core;
using namespace waferscope::core::cyclelevel;
using namespace waferscope::test;

namespace {

constexpr Storage kStorages[] = { Storage::Bf16, Storage::Fp16 };

// { name, grid, heads, kv heads, head size, tokens (, SIMD width) }
const std::vector<PrefillCase>& prefillCases()
{
    static const std::vector<PrefillCase> cases {
        { "1 head, 4x4, 64 tokens", 4, 1, 1, 16, 64 },
        { "4 heads, 2x2, 12 tokens", 2, 4, 4, 8, 12 },
        { "gqa 4 on 2, 3x3, 20 tokens", 3, 4, 2, 12, 20 },
        { "4x4, 30 tokens (bands 7, 8)", 4, 1, 1, 16, 30 },
        { "3x3, head 20 (blocks 6, 7)", 3, 1, 1, 20, 17 },
        { "5x5, 64 tokens, head 32", 5, 1, 1, 32, 64 },
        { "5x5, 3 tokens (empty bands)", 5, 1, 1, 10, 3 },
        { "gqa 2 on 1, one PE", 1, 2, 1, 16, 24 },
        { "1 token, 2 heads, one PE", 1, 2, 1, 8, 1 },
        { "1 token, 2x2", 2, 1, 1, 8, 1 },
    };
    return cases;
}

struct Agreement {
    int total = 0;
    int identical = 0;
    int worstUlps = 0;
    explicit Agreement(const PrefillRun& run, Storage storage)
    {
        for (std::size_t i = 0; i < run.out.size(); ++i) {
            ++total;
            identical += std::bit_cast<std::uint32_t>(run.out[i]) == std::bit_cast<std::uint32_t>(run.reference[i]);
            worstUlps = std::max(worstUlps, ulps(run.out[i], run.reference[i], storage));
        }
    }
};

// The multiply-adds of the score and value tiles on and below the diagonal of the g x g grid of
// bands (band b = tokens [T b / g, T (b + 1) / g)), counted from the shape alone.
double lowerTriangleFmacs(const PrefillCase& shape)
{
    const auto band = [&](int b) {
        return double(std::int64_t(shape.tokens) * (b + 1) / shape.grid - std::int64_t(shape.tokens) * b / shape.grid);
    };
    double fmacs = 0.0;
    for (int y = 0; y < shape.grid; ++y)
        for (int x = 0; x <= y; ++x)
            fmacs += 2.0 * band(y) * band(x) * double(shape.headDim);
    return fmacs * double(shape.heads);
}

} // namespace

// ---- The kernel against the reference ----

// Token i's outputs are referenceops' attention of query i over keys 0..i with three sums taken
// in another order: a score sums the head dimension a block at a time from a block that depends
// on the PE (Cannon's skew), a row sum adds the PEs' partial sums along the row's chain, and a
// weighted value adds the key bands in the order the partial output meets them along its ring.
// The terms are the reference's (the same float operands and products), so each float differs
// from the reference's by a few units in the last place of a float, 2^-16 of a bfloat16 unit and
// 2^-13 of an FP16 one: a rounded output is the reference's or its neighbour (at most one unit in
// the last place of the storage format), and nearly all (at least 90%) are the reference's to the
// bit.
WS_TEST(prefillAttentionMatchesTheReferenceWithinOneUlp)
{
    for (const Storage storage : kStorages) {
        for (const PrefillCase& shape : prefillCases()) {
            const PrefillRun run = runPrefill(shape, storage);
            WS_REQUIRE(run.out.size() == run.reference.size());
            const Agreement agreement(run, storage);
            std::printf("%-30s %s: %4d of %4d outputs identical, worst %d ulp\n", shape.name.c_str(), toString(storage),
                agreement.identical, agreement.total, agreement.worstUlps);
            WS_CHECK(agreement.worstUlps <= 1);
            WS_CHECK(agreement.identical * 10 >= agreement.total * 9);
        }
    }
}

// Where the kernel's sums run in the reference's order, its outputs are the reference's to the
// bit: on one PE (every tile whole: the head dimension and the keys summed from index 0), and for
// a single token (one key: e = exp(s - s) = 1, l = 1, o = S(v), whatever the score).
WS_TEST(prefillAttentionIsTheReferenceBitForBitWhereTheSumsRunInItsOrder)
{
    for (const Storage storage : kStorages) {
        for (const PrefillCase& shape : prefillCases()) {
            if (shape.grid > 1 && shape.tokens > 1)
                continue;
            const PrefillRun run = runPrefill(shape, storage);
            const Agreement agreement(run, storage);
            WS_CHECK_EQ(agreement.identical, agreement.total);
        }
    }
}

// Tiles above the diagonal (key band after query band) cost no multiply-adds: the PEs that hold
// them do none, and the others do exactly the whole score and value tiles on and below it.
WS_TEST(prefillAttentionSkipsTheTilesAboveTheDiagonal)
{
    for (const PrefillCase& shape : prefillCases()) {
        const PrefillRun run = runPrefill(shape, Storage::Bf16);
        WS_CHECK_EQ(run.fmacsAboveDiagonal, std::uint64_t(0));
        WS_CHECK_EQ(double(run.fmacs), lowerTriangleFmacs(shape));
    }
}

// ---- The closed form against the fabric ----
//
// Link wavelets and engine cycles are exact: the kernel fixes every tile's size and route, a
// task's cost per wavelet and a compute step's cycles. Cycles are within 15%: the closed form
// follows the programs' steps with the fabric's latencies at the grain of whole tiles, averages
// the round-robin's one choice (a chain hop of 1 or 2 cycles, 1.5) and leaves out the cycles a
// wavelet waits for a link another color holds. So the busy fraction, exact engine cycles over
// modelled cycles, is within 15% too. Timing does not depend on the storage format: bfloat16 runs
// stand for both.

namespace {

// Shapes for the closed form, beyond the cases above.
const std::vector<PrefillCase>& sweepCases()
{
    static const std::vector<PrefillCase> cases {
        { "2x2, 64 tokens, head 32", 2, 1, 1, 32, 64 },
        { "3x3, 33 tokens, head 64", 3, 1, 1, 64, 33 },
        { "6x6, 64 tokens, head 64", 6, 1, 1, 64, 64 },
        { "6x6, 16 tokens, head 16", 6, 1, 1, 16, 16 },
        { "2 heads 4x4, 48 tokens, head 32", 4, 2, 1, 32, 48 },
        { "5x5, 7 tokens, head 64", 5, 1, 1, 64, 7 },
        { "one PE, 16 tokens, head 64", 1, 1, 1, 64, 16 },
        { "4x4, 40 tokens, SIMD 4", 4, 1, 1, 32, 40, 4 },
        { "3x3, 64 tokens, SIMD 16", 3, 1, 1, 48, 64, 16 },
    };
    return cases;
}

double worstCycleError = 0.0;

void checkClosedForm(const PrefillCase& shape)
{
    const PrefillRun run = runPrefill(shape, Storage::Bf16);
    const KernelCost model
        = costPrefillAttention({ shape.grid, shape.heads, shape.headDim, shape.tokens, shape.simdWidth });
    const KernelMeasure& measure = run.measure;
    const double cycles = double(measure.cycles);
    const double error = (model.cycles - cycles) / cycles;
    std::printf("prefill %-32s %6llu cycles, model %8.1f (%+5.1f%%); busy %.3f, model %.3f; %7llu link wavelets\n",
        shape.name.c_str(), static_cast<unsigned long long>(measure.cycles), model.cycles, 100.0 * error,
        measure.busyFraction(), model.peBusyFraction, static_cast<unsigned long long>(measure.linkWavelets));
    WS_CHECK_EQ(model.linkWavelets, double(measure.linkWavelets));
    WS_CHECK_NEAR(model.peBusyFraction * double(measure.pes) * model.cycles, double(measure.busyCycles), 1e-9);
    WS_CHECK_EQ(model.fmacs, double(run.fmacs));
    WS_CHECK(std::fabs(error) <= 0.15);
    WS_CHECK(std::fabs(model.peBusyFraction - measure.busyFraction()) <= 0.15 * measure.busyFraction());
    worstCycleError = std::max(worstCycleError, std::fabs(error));
}

} // namespace

WS_TEST(prefillAttentionClosedFormTracksTheFabric)
{
    for (const PrefillCase& shape : prefillCases())
        checkClosedForm(shape);
    for (const PrefillCase& shape : sweepCases())
        checkClosedForm(shape);
    std::printf("prefill attention: worst cycle error of the closed form %.1f%%\n", 100.0 * worstCycleError);
}

// Nothing in the kernel's timing depends on the storage format.
WS_TEST(prefillAttentionTimingIsTheSameInBothStorageFormats)
{
    const PrefillCase& shape = prefillCases()[2];
    const KernelMeasure bf16 = runPrefill(shape, Storage::Bf16).measure;
    const KernelMeasure fp16 = runPrefill(shape, Storage::Fp16).measure;
    WS_CHECK_EQ(bf16.cycles, fp16.cycles);
    WS_CHECK_EQ(bf16.busyCycles, fp16.busyCycles);
    WS_CHECK_EQ(bf16.linkWavelets, fp16.linkWavelets);
}

// ---- What the kernel refuses ----

WS_TEST(prefillAttentionRefusesWhatItCannotRun)
{
    const auto refusal = [](PrefillAttentionSpec spec) -> std::string {
        try {
            PrefillAttentionKernel kernel(std::move(spec), KernelContext {});
        } catch (const std::logic_error& error) {
            return error.what();
        }
        return "";
    };
    PrefillAttentionSpec spec;
    spec.name = "prefill";
    spec.frame = { 0, 0, 2, 4, false };
    spec.heads = 2;
    spec.kvHeads = 1;
    spec.headDim = 8;
    spec.tokens = 8;
    WS_CHECK_EQ(refusal(spec), std::string());
    PrefillAttentionSpec alibi = spec;
    alibi.alibi = true;
    WS_CHECK_CONTAINS(refusal(alibi), "prefill: ALiBi is not supported");
    PrefillAttentionSpec groups = spec;
    groups.heads = 3;
    groups.kvHeads = 2;
    groups.frame.h = 6;
    WS_CHECK_CONTAINS(refusal(groups), "must be a positive multiple of kv heads");
    PrefillAttentionSpec rows = spec;
    rows.frame.h = 3;
    WS_CHECK_CONTAINS(refusal(rows), "need 4 rows, the region has 3");
}
