// Every decode kernel of the cycle-level run alone on a small fabric (tests/support/
// decodekernelharness.h): its outputs against the reference ops in bfloat16 and FP16 storage,
// and its cycles, PE activity and link traffic against the closed forms of core/kernels/,
// over shapes that cover the kernels' cases (square, wide, fewer lanes than columns, several
// parts a lane, one column, repeated output ranges for grouped kv heads, lanes that turn up).
#include "decodekernelruns.h"
#include "testing.h"

#include "core/cyclelevel/referenceops.h"
#include "core/kernels/kernelcost.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace waferscope::core;
using namespace waferscope::core::cyclelevel;
using namespace waferscope::test;

namespace {

constexpr Storage kStorages[] = { Storage::Bf16, Storage::Fp16 };

std::uint16_t bitsOf(float value, Storage storage)
{
    return storage == Storage::Bf16 ? fabric::floatToBfloat16(value) : fabric::floatToHalf(value);
}

// The storage values next to v: below, v, above.
std::array<float, 3> neighbours(float v, Storage storage)
{
    const std::uint16_t bits = bitsOf(v, storage);
    const auto step = [&](bool up) {
        const bool larger = up != bool(bits & 0x8000); // in magnitude
        std::uint16_t next = larger ? std::uint16_t(bits + 1) : std::uint16_t(bits - 1);
        if ((bits & 0x7fff) == 0 && !larger) // from a zero to the smallest value of the other sign
            next = std::uint16_t((bits ^ 0x8000) | 1);
        return storage == Storage::Bf16 ? fabric::bfloat16ToFloat(next) : fabric::halfToFloat(next);
    };
    return { step(false), v, step(true) };
}

// How a kernel's outputs compare with the reference's, value by value.
struct Agreement {
    int total = 0;
    int identical = 0;
    int worstUlps = 0;
    void add(float kernel, float reference, Storage storage)
    {
        ++total;
        identical += std::bit_cast<std::uint32_t>(kernel) == std::bit_cast<std::uint32_t>(reference) ? 1 : 0;
        worstUlps = std::max(worstUlps, ulps(kernel, reference, storage));
    }
    bool mostlyIdentical() const { return identical * 10 >= total * 9; }
};

Lanes lanes(int firstRow, int count, std::int64_t length)
{
    return evenLanes(firstRow, count, std::uint32_t(length));
}

const std::vector<NormCase>& normCases()
{
    using N = DecoderShape::Norm;
    static const std::vector<NormCase> cases {
        { "layernorm 4 lanes x 16", 4, 64, N::LayerNorm, true },
        { "layernorm 6 lanes, 100", 6, 100, N::LayerNorm, false },
        { "layernorm 1 lane x 24", 1, 24, N::LayerNorm, true },
        { "layernorm 2 lanes x 8", 2, 16, N::LayerNorm, true },
        { "layernorm 32 lanes x 64", 32, 2048, N::LayerNorm, true },
        { "rmsnorm 4 lanes x 16", 4, 64, N::RmsNorm, false },
        { "rmsnorm 8 lanes, 200", 8, 200, N::RmsNorm, false },
        { "rmsnorm 1 lane x 40", 1, 40, N::RmsNorm, false },
        { "rmsnorm 24 lanes x 100", 24, 2400, N::RmsNorm, false },
    };
    return cases;
}

const std::vector<GemvCase>& gemvCases()
{
    using A = DecoderShape::Activation;
    using E = Epilogue;
    // k of 4 query heads over 2 kv heads (head size 8): rows 0 and 1 both hold kv head 0.
    const Lanes gqa { { 0, 0, 8 }, { 1, 0, 8 }, { 2, 8, 16 }, { 3, 8, 16 } };
    static const std::vector<GemvCase> cases {
        { "square 4x4", 4, 4, 0, lanes(0, 4, 32), lanes(0, 4, 32), 32, 32, E::Round, A::Gelu, true },
        { "wide 8x4, 2 parts a lane", 8, 4, 0, lanes(0, 4, 64), lanes(0, 4, 32), 64, 32, E::Round },
        { "3 lanes, 4 parts a lane", 12, 3, 0, lanes(0, 3, 48), lanes(0, 3, 24), 48, 24, E::Round },
        { "16x4, 4 parts, wide rows", 16, 4, 0, lanes(0, 4, 64), lanes(0, 4, 128), 64, 128, E::Round },
        { "24x2, 12 parts a lane", 24, 2, 0, lanes(0, 2, 96), lanes(0, 2, 32), 96, 32, E::Round },
        { "one column", 1, 4, 0, lanes(0, 1, 16), lanes(0, 4, 32), 16, 32, E::Round, A::Gelu, true },
        { "tall 3x12", 3, 12, 0, lanes(0, 3, 48), lanes(0, 12, 96), 48, 96, E::Round },
        { "turn below the outputs", 4, 6, 0, lanes(4, 2, 32), lanes(0, 4, 32), 32, 32, E::Round },
        { "lanes turn up and down", 6, 16, 0, lanes(6, 4, 64), lanes(0, 16, 128), 64, 128, E::Round },
        { "after a norm column", 5, 4, 1, lanes(0, 4, 32), lanes(0, 4, 32), 32, 32, E::Round },
        { "gqa k, rotary", 4, 4, 0, lanes(0, 4, 32), gqa, 32, 16, E::Rotary, A::Gelu, false, 5 },
        { "q, rotary, bias", 4, 4, 0, lanes(0, 4, 32), lanes(0, 4, 32), 32, 32, E::Rotary, A::Gelu, true, 7 },
        { "q 6x8 rotary", 6, 8, 1, lanes(0, 5, 80), lanes(0, 8, 128), 80, 128, E::Rotary, A::Gelu, false, 12 },
        { "residual", 6, 4, 0, lanes(0, 4, 32), lanes(0, 4, 32), 32, 32, E::Residual, A::Gelu, true },
        { "residual 12x8", 12, 8, 1, lanes(0, 8, 256), lanes(0, 8, 256), 256, 256, E::Residual },
        { "down 8x8", 8, 8, 0, lanes(0, 8, 512), lanes(0, 8, 128), 512, 128, E::Residual, A::Gelu, true },
        { "gelu", 4, 6, 0, lanes(0, 4, 32), lanes(0, 6, 96), 32, 96, E::Activation, A::Gelu, true },
        { "silu", 4, 6, 0, lanes(0, 4, 32), lanes(0, 6, 96), 32, 96, E::Activation, A::Silu },
        { "up 9x8 gelu", 9, 8, 1, lanes(0, 8, 128), lanes(0, 8, 512), 128, 512, E::Activation, A::Gelu },
        { "swiglu gate", 4, 6, 0, lanes(0, 4, 32), lanes(0, 6, 96), 32, 96, E::Gated, A::SwiGlu },
        { "geglu gate", 4, 6, 0, lanes(0, 4, 32), lanes(0, 6, 96), 32, 96, E::Gated, A::GeGlu, true },
        { "logits 5 lanes", 5, 5, 0, lanes(0, 4, 32), lanes(0, 5, 50), 32, 50, E::Logits, A::Gelu, true },
        { "logits 1 lane", 3, 2, 0, lanes(0, 2, 16), lanes(0, 1, 20), 16, 20, E::Logits },
        { "logits 10x10", 10, 10, 1, lanes(0, 6, 96), lanes(0, 10, 1000), 96, 1000, E::Logits },
        // More lanes than columns: whole lanes turned down each column on colors of their own.
        { "6 lanes on 2 columns", 2, 6, 0, lanes(0, 6, 48), lanes(0, 6, 48), 48, 48, E::Round },
        { "down 3x8, 8 lanes", 3, 8, 0, lanes(0, 8, 256), lanes(0, 8, 64), 256, 64, E::Residual },
        { "12 lanes on 3 columns, 2 out", 4, 12, 1, lanes(0, 12, 96), lanes(0, 2, 32), 96, 32, E::Round },
    };
    return cases;
}

const std::vector<AttentionCase>& attentionCases()
{
    static const std::vector<AttentionCase> cases {
        { "4 columns, 2 heads", 4, 2, 2, 8, 10 },
        { "gqa 4 heads on 2, 6 columns", 6, 4, 2, 16, 9 },
        { "one column", 1, 2, 1, 8, 5 },
        { "8 columns, head 32", 8, 2, 2, 32, 12 },
        { "16 columns, head 64", 16, 2, 1, 64, 36 },
        { "3 columns, head 128", 3, 1, 1, 128, 7 },
        // A head's dimensions split over several rows (the partial scores summed down each column).
        { "4 columns, 2 heads of 2 rows", 4, 2, 2, 8, 10, 2 },
        { "gqa 4 heads on 2, 3 rows each", 6, 4, 2, 16, 9, 3 },
        { "one column, 4 rows per head", 1, 2, 1, 8, 5, 4 },
        { "8 columns, head 32 on 5 rows", 8, 2, 2, 32, 12, 5 },
        // ALiBi's bias joins a score once: on a head's first row only when the head is split.
        { "alibi, 3 columns", 3, 2, 2, 8, 7, 1, true },
        { "alibi, 3 columns, 2 rows per head", 3, 2, 2, 8, 7, 2, true },
    };
    return cases;
}

const std::vector<EmbeddingCase>& embeddingCases()
{
    static const std::vector<EmbeddingCase> cases {
        { "4x3, 4 lanes, positions", 4, 3, 4, 64, 50, 16, 37, 9 },
        { "6x2, 3 lanes, positions", 6, 2, 3, 48, 30, 8, 2, 7 },
        { "5x4, 2 lanes, none", 5, 4, 2, 40, 64, 0, 63, 3 },
        { "1x1, none", 1, 1, 1, 16, 10, 0, 4, 0 },
        { "3x3, 3 lanes, token 0", 3, 3, 3, 24, 20, 12, 0, 11 },
        { "2x30, long chains", 2, 30, 2, 64, 100, 0, 5, 0 },
        { "12x6, 4 lanes, positions", 12, 6, 4, 256, 300, 50, 299, 49 },
        { "8x8, 8 lanes", 8, 8, 8, 64, 64, 0, 3, 0 },
    };
    return cases;
}

} // namespace

// ---- The kernels against the reference ----

// The column sums its lanes' partial sums and then the partials down the column, where the
// reference sums the whole vector from index 0: the mean and variance differ from the
// reference's in the last bits of a float, so a rounded output differs by one unit in the last
// place of the storage format where the value lies that close to a rounding boundary. Few do: a
// float's rounding error is 2^-16 of a bfloat16 ulp and 2^-13 of an FP16 one.
WS_TEST(normColumnMatchesTheReferenceNormsWithinOneUlp)
{
    for (const Storage storage : kStorages) {
        for (const NormCase& shape : normCases()) {
            const NormRun run = runNorm(shape, storage);
            Agreement agreement;
            for (std::size_t i = 0; i < run.out.size(); ++i)
                agreement.add(run.out[i], run.reference[i], storage);
            WS_CHECK(agreement.worstUlps <= 1);
            WS_CHECK(agreement.mostlyIdentical());
        }
    }
}

namespace {

// The reference's epilogue applied to y, the rounded sum of output `global` (not Rotary: it
// mixes the two halves of a head).
float epilogueOf(const GemvCase& shape, const GemvRun& run, std::size_t global, float y, Storage storage)
{
    switch (shape.epilogue) {
    case Epilogue::Residual:
        return roundToStorage(run.side[global] + y, storage);
    case Epilogue::Activation:
        return ffnHidden(shape.activation, y, 0.0f, storage);
    case Epilogue::Gated:
        return ffnHidden(shape.activation, run.side[global], y, storage);
    default:
        return y;
    }
}

// Checks a rounded output lane; returns its agreement with the reference.
Agreement checkRoundedLane(const GemvCase& shape, const GemvRun& run, std::size_t k, Storage storage)
{
    const Lane& lane = shape.output[k];
    std::vector<float> sums(lane.size()); // the reference's rounded sums of the lane
    for (std::uint32_t i = 0; i < lane.size(); ++i)
        sums[i] = roundToStorage(run.sums[lane.begin + i], storage);
    const auto rotated = [&](const std::vector<float>& head) {
        std::vector<float> out = head;
        rotary(out, std::int64_t(lane.size()), shape.position, 10000.0, storage);
        return out;
    };
    const std::vector<float> reference = shape.epilogue == Epilogue::Rotary ? rotated(sums) : std::vector<float> {};
    Agreement agreement;
    for (std::uint32_t i = 0; i < lane.size(); ++i) {
        const std::size_t global = lane.begin + i;
        const float kernel = run.lanes[k][i];
        bool explained = false;
        if (shape.epilogue == Epilogue::Rotary) {
            // Output i mixes sums i and its partner in the other half of the head.
            const std::uint32_t half = lane.size() / 2;
            const std::uint32_t partner = i < half ? i + half : i - half;
            for (const float mine : neighbours(sums[i], storage)) {
                for (const float theirs : neighbours(sums[partner], storage)) {
                    std::vector<float> head = sums;
                    head[i] = mine;
                    head[partner] = theirs;
                    explained = explained || rotated(head)[i] == kernel;
                }
            }
            agreement.add(kernel, reference[i], storage);
        } else {
            for (const float y : neighbours(sums[i], storage))
                explained = explained || epilogueOf(shape, run, global, y, storage) == kernel;
            agreement.add(kernel, epilogueOf(shape, run, global, sums[i], storage), storage);
        }
        WS_CHECK(explained);
    }
    return agreement;
}

} // namespace

// The GEMV sums each output in another order than the reference (a partial sum per column, then
// the chain along the row) from the same float products, so the two float sums are within the
// bound of two summation orders (run.sumBounds), far below a storage ulp: the kernel's rounded
// sum is the reference's or a neighbour of it in the storage format. So each rounded output is
// the reference's epilogue applied to one of those three values (a rotary output: to one of
// three for each of the two it mixes), and most are the reference's to the bit. Logits are not
// rounded: within the bound. The argmax is the first maximum of the kernel's logits (the
// reduction keeps the larger value, the lower id on a tie), and the reference's whenever the
// reference's top two are further apart than two bounds.
WS_TEST(gemvKernelMatchesTheReferenceWithEachEpilogue)
{
    int decisiveArgmaxes = 0;
    for (const Storage storage : kStorages) {
        for (const GemvCase& shape : gemvCases()) {
            const GemvRun run = runGemv(shape, storage);
            if (shape.epilogue != Epilogue::Logits) {
                Agreement agreement;
                for (std::size_t k = 0; k < shape.output.size(); ++k) {
                    const Agreement lane = checkRoundedLane(shape, run, k, storage);
                    agreement.total += lane.total;
                    agreement.identical += lane.identical;
                }
                WS_CHECK(agreement.mostlyIdentical());
                continue;
            }
            std::vector<float> kernelLogits(std::size_t(shape.outFeatures));
            for (std::size_t k = 0; k < shape.output.size(); ++k) {
                const Lane& lane = shape.output[k];
                for (std::uint32_t i = 0; i < lane.size(); ++i) {
                    const float logit = run.lanes[k][i];
                    kernelLogits[lane.begin + i] = logit;
                    WS_CHECK(std::fabs(logit - run.sums[lane.begin + i]) <= run.sumBounds[lane.begin + i]);
                }
            }
            WS_CHECK_EQ(std::int64_t(run.argmax), argmax(kernelLogits));
            const float widest = *std::max_element(run.sumBounds.begin(), run.sumBounds.end());
            if (topTwoGap(run.sums) > 2.0 * widest) {
                WS_CHECK_EQ(std::int64_t(run.argmax), argmax(run.sums));
                ++decisiveArgmaxes;
            }
        }
    }
    WS_CHECK(decisiveArgmaxes >= 4); // the seeds give most logit cases a clear winner
}

// Position j of the cache lives at column j mod w. While every PE holds at most one position,
// PE u's partial output is e_u v_u alone (0 + e_u v_u, the reference's term), the max is exact in
// any order, and the sum chain adds the partials along the row in position order:
// (e_0 v_0 + e_1 v_1) + e_2 v_2 ..., the reference's sum from 0 term for term (a + b == b + a in
// IEEE arithmetic; the PEs past the last position add exact zeros). The scores are the same dot
// products in the same order. So the outputs are the reference's to the bit. Once positions
// wrap around the row, a PE sums its own positions first and the chain adds those sums: another
// order, within one unit in the last place. A head split over rows sums each score's parts down
// the column: another order of the dot product, within one unit in the last place too.
WS_TEST(attentionKernelMatchesTheReferenceBitForBitUntilPositionsWrap)
{
    for (const Storage storage : kStorages) {
        for (const AttentionCase& shape : attentionCases()) {
            const AttentionRun run = runAttention(shape, storage);
            Agreement wrapped;
            for (int position = 0; position < shape.positions; ++position) {
                const std::vector<float>& out = run.out[std::size_t(position)];
                const std::vector<float>& reference = run.reference[std::size_t(position)];
                Agreement agreement;
                for (std::size_t i = 0; i < out.size(); ++i)
                    agreement.add(out[i], reference[i], storage);
                if (position < shape.w && shape.rowsPerHead == 1) {
                    WS_CHECK_EQ(agreement.identical, agreement.total);
                } else {
                    WS_CHECK(agreement.worstUlps <= 1);
                    wrapped.total += agreement.total;
                    wrapped.identical += agreement.identical;
                }
            }
            WS_CHECK(wrapped.mostlyIdentical());
        }
    }
}

// Every PE of a lane's chain contributes its row of the token (and of the position) if it holds
// it, else zeros; the chain adds exact zeros to the one or two rows (tok + pos in either order is
// the same float), and the last PE rounds: the reference's embedding to the bit.
WS_TEST(embeddingKernelMatchesTheReferenceBitForBit)
{
    for (const Storage storage : kStorages) {
        for (const EmbeddingCase& shape : embeddingCases()) {
            const EmbeddingRun run = runEmbedding(shape, storage);
            WS_REQUIRE(run.out.size() == run.reference.size());
            for (std::size_t i = 0; i < run.out.size(); ++i)
                WS_CHECK_EQ(std::bit_cast<std::uint32_t>(run.out[i]), std::bit_cast<std::uint32_t>(run.reference[i]));
        }
    }
}

// ---- The closed forms against the fabric ----
//
// Link wavelets are exact: every stream's route is fixed by the kernel (a lane runs along its
// row to its last tap, a column multicast from the turn to the farthest output row, chains of a
// hop per PE, broadcasts to every PE) and carries a known count of wavelets. Engine cycles are
// exact: a task charges a fixed cost per wavelet (pe.cpp's taskCost) and a compute step its
// cycles, and the program fixes how many wavelets each task takes. Cycles are within 15%: each
// closed form follows the programs' steps with the fabric's latencies; it averages the one thing
// the fabric decides by its round-robin, a forwarding hop (1 or 2 cycles by the order of a
// chain's two colors, 1.5), and leaves out the queue slack that lets a lane's taps overlap a
// little (an error that grows with the parts of a lane: about 7% at 12). So the busy fraction,
// exact cycles over modelled ones, is within 15% too. The timing does not depend on the storage
// format (no task or step cost does): bfloat16 runs stand for both.

namespace {

double worstCycleError = 0.0;

void checkClosedForm(
    const char* kernel, const std::string& shape, const KernelMeasure& measure, const KernelCost& model)
{
    const double cycles = double(measure.cycles);
    const double error = (model.cycles - cycles) / cycles;
    const double pes = double(measure.pes);
    std::printf("%-9s %-30s %5llu cycles, model %7.1f (%+5.1f%%); busy %.3f, model %.3f; %6llu link wavelets\n", kernel,
        shape.c_str(), static_cast<unsigned long long>(measure.cycles), model.cycles, 100.0 * error,
        measure.busyFraction(), model.peBusyFraction, static_cast<unsigned long long>(measure.linkWavelets));
    WS_CHECK_EQ(model.linkWavelets, double(measure.linkWavelets));
    WS_CHECK_NEAR(model.peBusyFraction * pes * model.cycles, double(measure.busyCycles), 1e-9);
    WS_CHECK(std::fabs(error) <= 0.15);
    WS_CHECK(std::fabs(model.peBusyFraction - measure.busyFraction()) <= 0.15 * measure.busyFraction());
    worstCycleError = std::max(worstCycleError, std::fabs(error));
}

} // namespace

WS_TEST(normColumnClosedFormTracksTheFabric)
{
    for (const NormCase& shape : normCases()) {
        const NormRun run = runNorm(shape, Storage::Bf16);
        checkClosedForm("norm", shape.name, run.measure, run.model);
    }
}

WS_TEST(decodeGemvClosedFormTracksTheFabric)
{
    for (const GemvCase& shape : gemvCases()) {
        const GemvRun run = runGemv(shape, Storage::Bf16);
        checkClosedForm("gemv", shape.name, run.measure, run.model);
    }
}

// The tree-reduced GEMV (MeshGEMV-style): the same sums as the chain's, and its closed form.
const std::vector<GemvCase>& treeCases()
{
    using E = Epilogue;
    static const std::vector<GemvCase> cases = [] {
        std::vector<GemvCase> all {
            { "tree 2 columns", 2, 4, 0, lanes(0, 2, 32), lanes(0, 4, 32), 32, 32, E::Round },
            { "tree 5 columns", 5, 4, 0, lanes(0, 4, 32), lanes(0, 4, 32), 32, 32, E::Round },
            { "tree 16x4, 4 parts", 16, 4, 0, lanes(0, 4, 64), lanes(0, 4, 128), 64, 128, E::Round },
            { "tree 24x2, 12 parts", 24, 2, 0, lanes(0, 2, 96), lanes(0, 2, 32), 96, 32, E::Round },
            { "tree 33x4 after a norm", 33, 4, 1, lanes(0, 4, 128), lanes(0, 4, 16), 128, 16, E::Residual },
            { "tree 64x2, one output", 64, 2, 0, lanes(0, 2, 256), lanes(0, 2, 4), 256, 4, E::Round },
            { "tree 48x8, rotary", 48, 8, 1, lanes(0, 8, 256), lanes(0, 8, 64), 256, 64, E::Rotary },
            { "tree 40x6, gelu", 40, 6, 0, lanes(0, 6, 240), lanes(0, 6, 48), 240, 48, E::Activation },
            { "tree 12x8, logits", 12, 8, 1, lanes(0, 8, 64), lanes(0, 8, 256), 64, 256, E::Logits },
            { "tree 3x12, tall", 3, 12, 0, lanes(0, 3, 48), lanes(0, 12, 96), 48, 96, E::Round },
        };
        for (GemvCase& shape : all)
            shape.treeReduced = true;
        return all;
    }();
    return cases;
}

WS_TEST(treeReducedDecodeGemvSumsLikeTheChainAndItsClosedFormTracksTheFabric)
{
    for (const GemvCase& shape : treeCases()) {
        const GemvRun run = runGemv(shape, Storage::Bf16);
        if (shape.epilogue == Epilogue::Logits) {
            for (std::size_t k = 0; k < shape.output.size(); ++k)
                for (std::uint32_t i = 0; i < shape.output[k].size(); ++i) {
                    const std::size_t global = shape.output[k].begin + i;
                    WS_CHECK(std::fabs(run.lanes[k][i] - run.sums[global]) <= run.sumBounds[global]);
                }
        } else {
            Agreement agreement;
            for (std::size_t k = 0; k < shape.output.size(); ++k) {
                const Agreement lane = checkRoundedLane(shape, run, k, Storage::Bf16);
                agreement.total += lane.total;
                agreement.identical += lane.identical;
            }
            WS_CHECK(agreement.mostlyIdentical());
        }
        checkClosedForm("gemv", shape.name, run.measure, run.model);
    }
}

// The tree pays where a row has many columns and few outputs: a level's adds cost the tile's
// outputs, the chain's hops a cycle and a half a column. The fabric and the closed form agree on
// which is faster both ways.
WS_TEST(aTreeReducedDecodeGemvIsFasterOnlyOverManyColumnsWithFewOutputs)
{
    using E = Epilogue;
    const GemvCase wide { "128x2, 2 outputs a row", 128, 2, 0, lanes(0, 2, 512), lanes(0, 2, 4), 512, 4, E::Round };
    const GemvCase narrow { "8x4, 32 outputs a row", 8, 4, 0, lanes(0, 4, 64), lanes(0, 4, 128), 64, 128, E::Round };
    for (const bool treeWins : { true, false }) {
        const GemvCase& chained = treeWins ? wide : narrow;
        GemvCase tree = chained;
        tree.treeReduced = true;
        const GemvRun treeRun = runGemv(tree, Storage::Bf16);
        const GemvRun chainRun = runGemv(chained, Storage::Bf16);
        const double fabricTree = double(treeRun.measure.cycles);
        const double fabricChain = double(chainRun.measure.cycles);
        const double modelTree = treeRun.model.cycles;
        const double modelChain = chainRun.model.cycles;
        std::printf("%-24s tree %5.0f, chain %5.0f cycles; closed forms %7.1f, %7.1f\n", chained.name.c_str(),
            fabricTree, fabricChain, modelTree, modelChain);
        WS_CHECK_EQ(fabricTree < fabricChain, treeWins);
        WS_CHECK_EQ(modelTree < modelChain, treeWins);
    }
}

WS_TEST(routerClosedFormTracksTheFabric)
{
    // The MoE router: a GEMV to one lane of routing logits on the first row, whose exit then takes
    // their softmax, top k and renormalised weights.
    using E = Epilogue;
    const std::vector<GemvCase> routers {
        { "router 8 experts, 4 columns", 5, 4, 1, lanes(0, 4, 64), lanes(0, 1, 8), 64, 8, E::Route },
        { "router 4 experts, 2 lanes", 3, 2, 0, lanes(0, 2, 32), lanes(0, 1, 4), 32, 4, E::Route },
        { "router 64 experts, 6x6", 6, 6, 1, lanes(0, 6, 96), lanes(0, 1, 64), 96, 64, E::Route },
    };
    for (GemvCase shape : routers) {
        shape.topK = 2;
        const GemvRun run = runGemv(shape, Storage::Bf16);
        checkClosedForm("router", shape.name, run.measure, run.model);
    }
}

WS_TEST(decodeAttentionClosedFormTracksTheFabricAtEveryPosition)
{
    for (const AttentionCase& shape : attentionCases()) {
        const AttentionRun run = runAttention(shape, Storage::Bf16);
        for (int position = 0; position < shape.positions; ++position) {
            checkClosedForm("attention", shape.name + " at " + std::to_string(position),
                run.measures[std::size_t(position)], run.models[std::size_t(position)]);
        }
    }
}

WS_TEST(embeddingLookupClosedFormTracksTheFabric)
{
    for (const EmbeddingCase& shape : embeddingCases()) {
        const EmbeddingRun run = runEmbedding(shape, Storage::Bf16);
        checkClosedForm("embedding", shape.name, run.measure, run.model);
    }
    std::printf("decode kernels: worst cycle error of the closed forms %.1f%%\n", 100.0 * worstCycleError);
}

// Nothing in a decode kernel's timing depends on the storage format: the FP16 runs take the
// bfloat16 runs' cycles, engine cycles and link wavelets.
WS_TEST(decodeKernelTimingIsTheSameInBothStorageFormats)
{
    const auto same = [](const KernelMeasure& a, const KernelMeasure& b) {
        return a.cycles == b.cycles && a.busyCycles == b.busyCycles && a.linkWavelets == b.linkWavelets;
    };
    WS_CHECK(same(runNorm(normCases()[0], Storage::Bf16).measure, runNorm(normCases()[0], Storage::Fp16).measure));
    WS_CHECK(same(runGemv(gemvCases()[0], Storage::Bf16).measure, runGemv(gemvCases()[0], Storage::Fp16).measure));
    WS_CHECK(same(runAttention(attentionCases()[0], Storage::Bf16).measures.back(),
        runAttention(attentionCases()[0], Storage::Fp16).measures.back()));
    WS_CHECK(same(runEmbedding(embeddingCases()[0], Storage::Bf16).measure,
        runEmbedding(embeddingCases()[0], Storage::Fp16).measure));
}
