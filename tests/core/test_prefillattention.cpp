// The prefill attention kernel alone on a small fabric (tests/support/prefillattentionruns.h).
#include "prefillattentionruns.h"
#include "testing.h"

#include "core/fabric/half.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace waferscope::core;
using namespace waferscope::core::cyclelevel;
using namespace waferscope::test;

namespace {

constexpr Storage kStorages[] = { Storage::Bf16, Storage::Fp16 };

const std::vector<PrefillCase>& prefillCases()
{
    static const std::vector<PrefillCase> cases {
        { "1 head, 4x4, 64 tokens", 4, 1, 1, 16, 64 },
        { "4 heads, 2x2, 12 tokens", 2, 4, 4, 8, 12 },
        { "gqa 4 on 2, 3x3, 20 tokens", 3, 4, 2, 12, 20 },
        { "1 head, 4x4, 30 tokens", 4, 1, 1, 16, 30 },
        { "1 token, 1x1", 1, 2, 1, 8, 1 },
        { "1 token, 2x2", 2, 1, 1, 8, 1 },
    };
    return cases;
}

std::uint16_t bitsOf(float value, Storage storage)
{
    return storage == Storage::Bf16 ? fabric::floatToBfloat16(value) : fabric::floatToHalf(value);
}

int ulps(float a, float b, Storage storage)
{
    const auto ordered = [&](float value) {
        const std::uint16_t bits = bitsOf(value, storage);
        return bits & 0x8000 ? -int(bits & 0x7fff) : int(bits & 0x7fff);
    };
    return std::abs(ordered(a) - ordered(b));
}

} // namespace

WS_TEST(prefillAttentionMatchesTheReference)
{
    for (const Storage storage : kStorages) {
        for (const PrefillCase& shape : prefillCases()) {
            const PrefillRun run = runPrefill(shape, storage);
            int identical = 0;
            int worst = 0;
            for (std::size_t i = 0; i < run.out.size(); ++i) {
                identical += std::bit_cast<std::uint32_t>(run.out[i]) == std::bit_cast<std::uint32_t>(run.reference[i]);
                worst = std::max(worst, ulps(run.out[i], run.reference[i], storage));
            }
            std::printf("%-28s %s: %d of %zu identical, worst %d ulp; %llu cycles, busy %.3f, %llu links, %d colors, "
                        "%lld bytes\n",
                shape.name.c_str(), toString(storage), identical, run.out.size(), worst,
                (unsigned long long)run.measure.cycles, run.measure.busyFraction(),
                (unsigned long long)run.measure.linkWavelets, run.colors, (long long)run.peakSramBytes);
            WS_CHECK(worst <= 1);
        }
    }
}
