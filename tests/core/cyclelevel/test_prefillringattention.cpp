// The ring attention of the prefill (core/cyclelevel/kernels/prefillringattentionkernel.h) on the q, k
// and v the prefill GEMMs leave on its block (tests/support/prefillringruns.h): its outputs against
// referenceops' attention of the same q, k and v, in bfloat16 and FP16, over heads, head sizes and
// prompts the block divides and ones it does not (empty bands); its multiply-adds against the
// lower triangle of the band grid; the keys and values back where it says; and what it refuses.
#include "prefillringruns.h"
#include "testing.h"

#include "core/cyclelevel/kernels/prefillringattentionkernel.h"
#include "core/fabric/half.h"

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

// { name, heads (the block's side), head size, tokens, hidden }
const std::vector<RingAttentionCase>& ringCases()
{
    static const std::vector<RingAttentionCase> cases {
        { "1 head, one PE, 7 tokens", 1, 16, 7, 16 },
        { "2 heads, 8 tokens", 2, 8, 8, 16 },
        { "3 heads, 10 tokens (bands 3, 3, 4)", 3, 8, 10, 24 },
        { "4 heads, 15 tokens, head 16", 4, 16, 15, 64 },
        { "5 heads, 3 tokens (empty bands)", 5, 8, 3, 20 },
        { "4 heads, 1 token", 4, 8, 1, 32 },
    };
    return cases;
}

// Band b of the prompt on a side-g block: tokens [T b / g, T (b + 1) / g).
double band(const RingAttentionCase& shape, int b)
{
    return double(std::int64_t(shape.tokens) * (b + 1) / shape.heads - std::int64_t(shape.tokens) * b / shape.heads);
}

} // namespace

// Token i's outputs are referenceops' attention of query i over keys 0..i, from the same q, k and
// v, with the scores summed in the reference's order and the exponentials and weighted values
// added band by band in ring order: each float a few units in its last place from the
// reference's, so a rounded output is the reference's or its neighbour, nearly all (at least 90%)
// the reference's to the bit, every output written once.
WS_TEST(ringAttentionMatchesTheReferenceWithinOneUlp)
{
    for (const Storage storage : kStorages) {
        for (const RingAttentionCase& shape : ringCases()) {
            const RingAttentionRun run = runRingAttention(shape, storage);
            WS_REQUIRE(run.out.size() == run.reference.size());
            int identical = 0;
            int worst = 0;
            for (std::size_t i = 0; i < run.out.size(); ++i) {
                identical += sameBits(run.out[i], run.reference[i]);
                worst = std::max(worst, ulps(run.out[i], run.reference[i], storage));
            }
            std::printf("%-36s %s: %4d of %4zu outputs identical, worst %d ulp; %llu cycles\n", shape.name.c_str(),
                toString(storage), identical, run.out.size(), worst,
                static_cast<unsigned long long>(run.measure.cycles));
            WS_CHECK(worst <= 1);
            WS_CHECK(std::size_t(identical) * 10 >= run.out.size() * 9);
            WS_CHECK(std::all_of(run.writes.begin(), run.writes.end(), [](int w) { return w == 1; }));
            if (shape.heads == 1 || shape.tokens == 1) // the sums in the reference's order
                WS_CHECK_EQ(std::size_t(identical), run.out.size());
        }
    }
}

// The closed form from the same spec (core/kernels/prefillringattention.h), over every shape and a
// SIMD width of 4 and 16 too: cycles, link wavelets and engine cycles exact (the kernel runs alone,
// each ring edge a color of its own, so no wavelet waits for a link another holds), and its
// multiply-adds the kernel's.
WS_TEST(ringAttentionRunsAsItsClosedFormSays)
{
    std::vector<RingAttentionCase> cases = ringCases();
    cases.push_back({ "4 heads, 15 tokens, SIMD 4", 4, 16, 15, 64, 4 });
    cases.push_back({ "3 heads, 20 tokens, SIMD 16", 3, 8, 20, 24, 16 });
    for (const RingAttentionCase& shape : cases) {
        const RingAttentionRun run = runRingAttention(shape, Storage::Bf16);
        std::printf("%-36s %6llu cycles, model %8.1f; %6llu link wavelets\n", shape.name.c_str(),
            static_cast<unsigned long long>(run.measure.cycles), run.model.cycles,
            static_cast<unsigned long long>(run.measure.linkWavelets));
        WS_CHECK_EQ(closedFormMismatch(run.measure, run.model), std::string());
        WS_CHECK_EQ(run.model.fmacs, double(run.fmacs));
    }
}

// Two rounds of the ring bring every key and value tile back to the PE it started at: where the
// kernel says they are, they are what the projections left, to the bit (the decode cache's source).
WS_TEST(ringAttentionLeavesTheKeysAndValuesWhereItSays)
{
    for (const RingAttentionCase& shape : ringCases()) {
        const RingAttentionRun run = runRingAttention(shape, Storage::Bf16);
        WS_REQUIRE(run.keys.size() == run.projectedKeys.size());
        for (std::size_t i = 0; i < run.keys.size(); ++i) {
            WS_CHECK(sameBits(run.keys[i], run.projectedKeys[i]));
            WS_CHECK(sameBits(run.values[i], run.projectedValues[i]));
        }
    }
}

// Causal: only the tiles on and below the diagonal of the band grid cost multiply-adds, each three
// times its size (the scores in both passes, the weighted values), counted from the bands alone.
WS_TEST(ringAttentionComputesOnlyOnAndBelowTheDiagonal)
{
    for (const RingAttentionCase& shape : ringCases()) {
        const RingAttentionRun run = runRingAttention(shape, Storage::Fp16);
        double expected = 0.0;
        for (int query = 0; query < shape.heads; ++query)
            for (int key = 0; key <= query; ++key)
                expected += 3.0 * band(shape, query) * band(shape, key) * double(shape.headDim);
        WS_CHECK_EQ(double(run.fmacs), expected * double(shape.heads));
    }
}

WS_TEST(ringAttentionRefusesWhatItCannotRun)
{
    const auto refusal = [](PrefillRingAttentionSpec spec) -> std::string {
        try {
            PrefillRingAttentionKernel kernel(std::move(spec), KernelContext {});
        } catch (const std::logic_error& error) {
            return error.what();
        }
        return "";
    };
    // Two heads of 4 over 4 tokens: PE (x, y) holds band x of head y.
    PrefillRingAttentionSpec spec;
    spec.name = "attn";
    spec.frame = { 0, 0, 2, 2, false };
    spec.headDim = 4;
    spec.tokens = 4;
    for (int y = 0; y < 2; ++y)
        for (int x = 0; x < 2; ++x) {
            const PrefillOutputTile tile { { x, y }, 0, std::uint32_t(2 * x), 2, std::uint32_t(4 * y), 4 };
            spec.query.push_back(tile);
            spec.key.push_back(tile);
            spec.value.push_back(tile);
        }
    WS_CHECK_EQ(refusal(spec), std::string());
    PrefillRingAttentionSpec dims = spec;
    dims.key[2].firstDim = 0;
    WS_CHECK_CONTAINS(refusal(dims), "attn: the key tile at PE (0, 1) holds dimensions [0, 4)");
    dims = spec;
    dims.query[2].firstDim = 0;
    WS_CHECK_CONTAINS(refusal(dims), "row 1 holds head 1's [4, 8)");
    PrefillRingAttentionSpec tokens = spec;
    tokens.value[3].firstToken = 0;
    WS_CHECK_CONTAINS(refusal(tokens), "the value tile at PE (1, 1) holds other tokens than the query tile there");
    PrefillRingAttentionSpec missing = spec;
    missing.value.pop_back();
    WS_CHECK_CONTAINS(refusal(missing), "PE (1, 1) of the block lacks a query, key or value tile");
    PrefillRingAttentionSpec twice = spec;
    twice.key.push_back(spec.key.front());
    WS_CHECK_CONTAINS(refusal(twice), "a second key tile at PE (0, 0)");
    PrefillRingAttentionSpec shortRow = spec;
    shortRow.tokens = 5;
    WS_CHECK_CONTAINS(refusal(shortRow), "row 0's tiles hold 4 tokens, the prompt 5");
    PrefillRingAttentionSpec outside = spec;
    outside.query[0].pe = { 5, 0 };
    WS_CHECK_CONTAINS(refusal(outside), "the query tile at PE (5, 0) is outside the block");
    PrefillRingAttentionSpec rows = spec;
    rows.frame.h = 1;
    WS_CHECK_CONTAINS(refusal(rows), "a 2 x 2 block needs");
}
