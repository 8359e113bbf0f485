// The prefill norm (core/cyclelevel/kernels/prefillnormkernel.h) on a block whose PEs hold a
// prompt's hidden vectors as a plain prefill GEMM takes them (tests/support/prefillringruns.h):
// RMSNorm and LayerNorm, with and without biases, in bfloat16 and FP16, against referenceops'
// norm of each token; the input moved where the kernel says; and a GEMM that takes the normed
// tiles where the norm left them.
#include "prefillringruns.h"
#include "testing.h"

#include "core/fabric/half.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>

using namespace waferscope::core;
using namespace waferscope::test;

namespace {

constexpr Storage kStorages[] = { Storage::Bf16, Storage::Fp16 };

// { name, grid, tokens, hidden, LayerNorm, bias, band offset }
const std::vector<PrefillNormCase>& normCases()
{
    static const std::vector<PrefillNormCase> cases {
        { "rms, one PE, 5 tokens", 1, 5, 12, false, false, 0 },
        { "rms 3x3, 10 tokens, 24", 3, 10, 24, false, false, 0 },
        { "rms 4x4, 15 tokens, offset -1", 4, 15, 32, false, false, -1 },
        { "rms 3x3, 2 values (empty blocks)", 3, 6, 2, false, false, 0 },
        { "layer 2x2, bias", 2, 8, 16, true, true, 0 },
        { "layer 3x3, 7 tokens, offset 2", 3, 7, 20, true, true, 2 },
        { "layer 5x5, 3 tokens (empty bands)", 5, 3, 20, true, false, 0 },
        { "layer, one PE", 1, 4, 10, true, true, 0 },
    };
    return cases;
}

struct Agreement {
    int identical = 0;
    int worst = 0;
    Agreement(const std::vector<float>& out, const std::vector<float>& reference, Storage storage)
    {
        for (std::size_t i = 0; i < out.size(); ++i) {
            identical += sameBits(out[i], reference[i]);
            worst = std::max(worst, ulps(out[i], reference[i], storage));
        }
    }
};

} // namespace

// Each token's sums (of its values, of their squares, of their centred squares) run over the hidden
// blocks in ring order where the reference adds from index 0: the same terms, so each normed value
// is the reference's or its neighbour in the storage format, nearly all (at least 90%) to the bit,
// and all of them on one PE, where the order is the reference's. Every value is written once.
WS_TEST(prefillNormMatchesTheReferenceWithinOneUlp)
{
    for (const Storage storage : kStorages) {
        for (const PrefillNormCase& shape : normCases()) {
            const PrefillNormRun run = runPrefillNorm(shape, storage);
            WS_REQUIRE(run.out.size() == run.reference.size());
            const Agreement agreement(run.out, run.reference, storage);
            std::printf("%-34s %s: %4d of %4zu identical, worst %d ulp; %llu cycles\n", shape.name.c_str(),
                toString(storage), agreement.identical, run.out.size(), agreement.worst,
                static_cast<unsigned long long>(run.measure.cycles));
            WS_CHECK(agreement.worst <= 1);
            WS_CHECK(std::size_t(agreement.identical) * 10 >= run.out.size() * 9);
            if (shape.grid == 1)
                WS_CHECK_EQ(std::size_t(agreement.identical), run.out.size());
            WS_CHECK(std::all_of(run.writes.begin(), run.writes.end(), [](int w) { return w == 1; }));
        }
    }
}

// The closed form from the same spec (core/kernels/prefillnorm.h), over every shape: cycles, link
// wavelets and engine cycles exact (the kernel runs alone, each ring edge a color of its own).
WS_TEST(prefillNormRunsAsItsClosedFormSays)
{
    for (const PrefillNormCase& shape : normCases()) {
        const PrefillNormRun run = runPrefillNorm(shape, Storage::Bf16);
        std::printf("%-36s %6llu cycles, model %8.1f; %6llu link wavelets\n", shape.name.c_str(),
            static_cast<unsigned long long>(run.measure.cycles), run.model.cycles,
            static_cast<unsigned long long>(run.measure.linkWavelets));
        WS_CHECK_EQ(closedFormMismatch(run.measure, run.model), std::string());
    }
}

// The input moves with the sums (up the columns, g - 1 ring positions a pass) and stays beside the
// normed tiles, unchanged: the block's residual.
WS_TEST(prefillNormLeavesTheInputBesideTheNormedTiles)
{
    for (const PrefillNormCase& shape : normCases()) {
        const PrefillNormRun run = runPrefillNorm(shape, Storage::Bf16);
        WS_REQUIRE(run.moved.size() == run.input.size());
        for (std::size_t i = 0; i < run.input.size(); ++i)
            WS_CHECK(sameBits(run.moved[i], run.input[i]));
    }
}

// A plain GEMM with the band offset outputOffset() takes the normed tiles where the norm left them:
// its outputs are linearOverTokens of the normed values within the two summation orders' rounding.
WS_TEST(aGemmTakesTheNormedTilesWhereTheyLie)
{
    for (const Storage storage : kStorages) {
        for (const PrefillNormCase& shape : normCases()) {
            const PrefillNormRun run = runPrefillNorm(shape, storage);
            const Agreement agreement(run.projected, run.projectedReference, storage);
            WS_CHECK(agreement.worst <= 1);
            WS_CHECK(std::size_t(agreement.identical) * 10 >= run.projected.size() * 9);
        }
    }
}
