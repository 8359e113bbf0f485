// The prompt's embedding and whole decoder blocks over it on one block of PEs through the prefill kernels
// (core/cyclelevel/prefilllayer.h), each kernel taking its inputs where the one before left them:
// the block's output and its keys and values against the reference decoder's block
// (referencemodel.h) on the same input, for the tiny Llama (RMSNorm, rotary, grouped-query
// attention, SwiGLU, bfloat16) and the tiny GPT-2 (LayerNorm with biases, biases everywhere,
// GELU, FP16) of tests/data/cyclelevel.
#include "corefixtures.h"
#include "decodekernelharness.h"
#include "prefillringruns.h"
#include "testing.h"

#include "core/cyclelevel/decoder.h"
#include "core/cyclelevel/kernels/prefillembeddingkernel.h"
#include "core/cyclelevel/prefilllayer.h"
#include "core/cyclelevel/referencemodel.h"
#include "core/fabric/half.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>

using namespace waferscope::core;
using namespace waferscope::core::cyclelevel;
using namespace waferscope::test;

namespace {

struct BlockRun {
    std::vector<float> input; // tokens x hidden
    std::vector<float> out;
    std::vector<float> reference;
    std::vector<float> keys; // tokens x (heads x headDim): the kv head of each query head
    std::vector<float> referenceKeys; // from the reference's cache, the same layout
    std::vector<float> values;
    std::vector<float> referenceValues;
    KernelMeasure measure;
    int colors = 0;
    std::int64_t peakSramBytes = 0;
    Storage storage = Storage::Bf16;
    struct OneKernel {
        std::string name;
        KernelMeasure measure; // its own run, the kernel before it done
        KernelCost model; // its closed form
    };
    std::vector<OneKernel> kernels; // run one by one
    double closedFormCycles = 0.0; // the block's
};

// The block in one run, or (oneByOne) a run for each kernel in turn.
BlockRun runBlock(const std::string& file, int tokens, int layer, bool oneByOne = false)
{
    const ModelGraph graph = load(dataDir() + "/cyclelevel/" + file);
    const DecoderShape shape = decoderShape(graph).value();
    const DecoderWeights weights(shape, 7);
    const int g = int(shape.heads);
    DecodeKernelHarness harness(g, g, shape.storage);
    const Frame& frame = harness.frame();
    BlockRun run;
    run.storage = shape.storage;
    const auto hidden = std::size_t(shape.hidden);
    run.input.resize(std::size_t(tokens) * hidden);
    WeightTensor(901, 0.0f, 1.0f, 1, std::int64_t(run.input.size()), shape.storage).row(0, run.input);
    // The input written into the block as a plain GEMM with band offset 0 takes it.
    const PrefillGrid grid(g, tokens, shape.hidden);
    std::vector<PrefillOutputTile> input;
    for (int y = 0; y < g; ++y)
        for (int x = 0; x < g; ++x) {
            const int band = grid.blockAt(x, y, 0);
            const std::uint32_t rows = grid.bandSize(band);
            const std::uint32_t cols = grid.blockSize(x);
            if (rows == 0 || cols == 0)
                continue;
            fabric::PeState& pe = harness.fabric().pe(frame.x(x), frame.y(y));
            const std::uint32_t offset = pe.allocF32(std::size_t(rows) * cols);
            for (std::uint32_t t = 0; t < rows; ++t)
                for (std::uint32_t i = 0; i < cols; ++i)
                    pe.f32[offset + t * cols + i]
                        = run.input[(grid.bandBegin(band) + t) * hidden + grid.blockBegin(x) + i];
            input.push_back(
                { { frame.x(x), frame.y(y) }, offset, grid.bandBegin(band), rows, grid.blockBegin(x), cols });
        }
    PrefillLayer block(shape, weights, layer, frame, tokens, input, 0, harness.context());
    block.load(harness.fabric());
    PrefillRings rings("block", frame, g);
    block.needRings(rings);
    rings.place(harness.book());
    block.useRings(rings);
    if (oneByOne) {
        for (const PrefillKernel* kernel : block.kernels())
            run.kernels.push_back({ kernel->name(),
                harness.run([&](ProgramWriter& writer) { kernel->program(writer, -1); }), kernel->closedForm() });
    } else {
        run.measure = harness.run([&](ProgramWriter& writer) { block.program(writer); });
    }
    run.closedFormCycles = block.closedFormCycles();
    run.colors = harness.book().maxColorsAtARouter();
    for (int v = 0; v < frame.h; ++v)
        for (int u = 0; u < frame.w; ++u)
            run.peakSramBytes = std::max(run.peakSramBytes, harness.fabric().pe(frame.x(u), frame.y(v)).sramBytes());
    const auto width = std::size_t(shape.queryWidth());
    run.out = gatherTiles(harness, block.outputTiles(), std::size_t(tokens), hidden);
    run.keys = gatherTiles(harness, block.keyTiles(), std::size_t(tokens), width);
    run.values = gatherTiles(harness, block.valueTiles(), std::size_t(tokens), width);

    ReferenceModel reference(weights);
    TokenMatrix x(tokens, shape.hidden);
    x.values = run.input;
    reference.block(layer, x);
    run.reference = x.values;
    const auto kvWidth = std::size_t(shape.kvWidth());
    const auto d = std::size_t(shape.headDim);
    const std::size_t group = std::size_t(shape.heads / shape.kvHeads);
    for (std::size_t t = 0; t < std::size_t(tokens); ++t)
        for (std::size_t h = 0; h < std::size_t(shape.heads); ++h)
            for (std::size_t i = 0; i < d; ++i) {
                run.referenceKeys.push_back(reference.keys(layer)[t * kvWidth + h / group * d + i]);
                run.referenceValues.push_back(reference.values(layer)[t * kvWidth + h / group * d + i]);
            }
    return run;
}

struct Agreement {
    std::size_t identical = 0;
    int worst = 0;
    Agreement(const std::vector<float>& out, const std::vector<float>& reference, Storage storage)
    {
        for (std::size_t i = 0; i < out.size(); ++i) {
            identical += std::bit_cast<std::uint32_t>(out[i]) == std::bit_cast<std::uint32_t>(reference[i]);
            worst = std::max(worst, ulps(out[i], reference[i], storage));
        }
    }
};

void report(const char* what, const std::string& file, const Agreement& a, std::size_t total)
{
    std::printf("%-16s %-8s %5zu of %5zu identical, worst %d ulp\n", file.c_str(), what, a.identical, total, a.worst);
}

} // namespace

// The sums run in other orders than the reference's (the GEMMs' input blocks from a PE-dependent
// block, the norms' hidden blocks, the attention's key bands), so a value rounded after a sum may
// land a unit away; the block carries such differences through its norms and projections, a few
// units at most. Keys and values are one projection deep: at most one unit.
WS_TEST(aDecoderBlockOnThePrefillKernelsMatchesTheReferenceBlock)
{
    for (const std::string file : { "tiny_llama.yaml", "tiny_gpt2.yaml" }) {
        for (const int tokens : { 12, 5, 6, 10 }) {
            const BlockRun run = runBlock(file, tokens, 1);
            WS_REQUIRE(run.out.size() == run.reference.size());
            const Agreement out(run.out, run.reference, run.storage);
            const Agreement keys(run.keys, run.referenceKeys, run.storage);
            const Agreement values(run.values, run.referenceValues, run.storage);
            report("output", file, out, run.out.size());
            report("keys", file, keys, run.keys.size());
            report("values", file, values, run.values.size());
            std::printf("  %llu cycles, %d colors at the busiest router, %lld bytes of SRAM at the fullest PE\n",
                static_cast<unsigned long long>(run.measure.cycles), run.colors,
                static_cast<long long>(run.peakSramBytes));
            WS_CHECK(out.worst <= 4);
            WS_CHECK(out.identical * 10 >= run.out.size() * 9);
            WS_CHECK(keys.worst <= 1);
            WS_CHECK(values.worst <= 1);
            WS_CHECK(keys.identical * 10 >= run.keys.size() * 9);
        }
    }
}

// Each kernel of a block, run on its own with its input where the kernel before left it, against
// its closed form built from the same spec (core/kernels/prefill*.h): link wavelets and engine
// cycles exact, since the kernel fixes every tile's size and route and every step's cycles; and
// cycles exact too, the form following the programs through the fabric's timing rules at the
// grain of whole tiles: what it leaves out, a wavelet waiting for a link another color holds,
// does not arise with each ring edge a color of its own and one kernel at a time. The shapes cover plain and transposed
// GEMMs with rotary, grouped keys and values and activations, both norms, the ring attention, the shifts and the
// combines, over prompts the grid divides and ones it does not. The block's closed form, its kernels one after another,
// is no less than its one run, where each PE goes on as soon as its own part is done.
WS_TEST(eachKernelOfABlockRunsAsItsClosedFormSays)
{
    double worst = 0.0;
    for (const std::string file : { "tiny_llama.yaml", "tiny_gpt2.yaml" }) {
        for (const int tokens : { 12, 5, 10 }) {
            const BlockRun run = runBlock(file, tokens, 0, true);
            WS_REQUIRE(!run.kernels.empty());
            for (const BlockRun::OneKernel& kernel : run.kernels) {
                const KernelMeasure& measure = kernel.measure;
                const double cycles = double(measure.cycles);
                const double error = (kernel.model.cycles - cycles) / cycles;
                std::printf("%-16s %2d tokens %-28s %6llu cycles, model %8.1f (%+5.1f%%); %6llu link wavelets\n",
                    file.c_str(), tokens, kernel.name.c_str(), static_cast<unsigned long long>(measure.cycles),
                    kernel.model.cycles, 100.0 * error, static_cast<unsigned long long>(measure.linkWavelets));
                WS_CHECK_EQ(closedFormMismatch(measure, kernel.model), std::string());
                worst = std::max(worst, std::fabs(error));
            }
            const BlockRun whole = runBlock(file, tokens, 0);
            std::printf("%-16s %2d tokens: block in one run %llu cycles, its kernels' closed forms in turn %.0f\n",
                file.c_str(), tokens, static_cast<unsigned long long>(whole.measure.cycles), whole.closedFormCycles);
            WS_CHECK(whole.closedFormCycles >= 0.95 * double(whole.measure.cycles));
        }
    }
    std::printf("prefill block kernels: worst cycle error of the closed forms %.1f%%\n", 100.0 * worst);
}

namespace {

struct ModelRun {
    std::vector<float> embedded; // tokens x hidden, where the embedding left it
    std::vector<float> referenceEmbedded;
    std::vector<float> out; // after every block
    std::vector<float> reference;
    std::uint64_t cycles = 0; // the blocks'
    KernelMeasure embedding; // the embedding's own run
    KernelCost embeddingModel; // its closed form
    Storage storage = Storage::Bf16;
};

// The prompt's ids fed to the embedding in lanes, then every block, each taking the one before's
// output where it lies: one run of the fabric for the whole prompt.
ModelRun runModel(const std::string& file, int tokens)
{
    const ModelGraph graph = load(dataDir() + "/cyclelevel/" + file);
    const DecoderShape shape = decoderShape(graph).value();
    const DecoderWeights weights(shape, 7);
    const int g = int(shape.heads);
    DecodeKernelHarness harness(g, g, shape.storage);
    const Frame& frame = harness.frame();
    std::vector<std::int32_t> ids;
    for (int t = 0; t < tokens; ++t)
        ids.push_back(std::int32_t((37 * t + 11) % shape.vocab));
    PrefillEmbeddingSpec spec;
    spec.name = "embedding";
    spec.frame = frame;
    spec.tokens = tokens;
    spec.token = weights.tensor(Tensor::TokenEmbedding, 0, 0);
    if (shape.positions == DecoderShape::Positions::Learned)
        spec.position = weights.tensor(Tensor::PositionEmbedding, 0, 0);
    PrefillEmbeddingKernel embedding(spec, harness.context());
    embedding.load(harness.fabric());
    embedding.takePrompt(ids);
    std::vector<std::unique_ptr<PrefillLayer>> blocks;
    std::vector<PrefillOutputTile> x = embedding.outputTiles();
    int offset = embedding.outputOffset();
    for (int layer = 0; layer < int(shape.layers); ++layer) {
        blocks.push_back(
            std::make_unique<PrefillLayer>(shape, weights, layer, frame, tokens, x, offset, harness.context()));
        blocks.back()->load(harness.fabric());
        x = blocks.back()->outputTiles();
        offset = blocks.back()->outputOffset();
    }
    PrefillRings rings("block", frame, g);
    embedding.needRings(rings);
    for (const auto& block : blocks)
        block->needRings(rings);
    rings.place(harness.book());
    embedding.useRings(rings);
    for (const auto& block : blocks)
        block->useRings(rings);
    std::vector<std::vector<Pe>> taps;
    for (std::size_t lane = 0; lane < embedding.lanes().size(); ++lane)
        taps.push_back(embedding.taps(lane));
    const int color = harness.addFeed("ids", embedding.lanes(), taps);
    harness.setFeed(color, embedding.feed());
    ModelRun run;
    run.storage = shape.storage;
    harness.validateRoutes([&](ProgramWriter& writer) {
        embedding.program(writer, color);
        for (const auto& block : blocks)
            block->program(writer);
    });
    run.embedding = harness.run([&](ProgramWriter& writer) { embedding.program(writer, color); });
    run.embeddingModel = embedding.closedForm();
    harness.setFeed(color, {});
    run.cycles = harness
                     .run([&](ProgramWriter& writer) {
                         for (const auto& block : blocks)
                             block->program(writer);
                     })
                     .cycles;
    const auto hidden = std::size_t(shape.hidden);
    run.embedded = gatherTiles(harness, embedding.outputTiles(), std::size_t(tokens), hidden);
    run.out = gatherTiles(harness, x, std::size_t(tokens), hidden);

    TokenMatrix reference(tokens, shape.hidden);
    std::vector<float> position(hidden);
    for (int t = 0; t < tokens; ++t) {
        spec.token.row(ids[std::size_t(t)], reference.row(t));
        if (spec.position.present()) {
            spec.position.row(t, position);
            for (std::size_t i = 0; i < hidden; ++i)
                reference.row(t)[i] = roundToStorage(reference.row(t)[i] + position[i], shape.storage);
        }
    }
    run.referenceEmbedded = reference.values;
    ReferenceModel model(weights);
    for (int layer = 0; layer < int(shape.layers); ++layer)
        model.block(layer, reference);
    run.reference = reference.values;
    return run;
}

} // namespace

// The embedding (the token table's rows, with learned positions added) is the reference's to the
// bit and runs as its closed form says, and the whole stack of blocks after it, all in one run,
// agrees with the reference decoder's blocks as one block does.
WS_TEST(thePromptsEmbeddingAndEveryBlockOnThePrefillKernels)
{
    for (const std::string file : { "tiny_llama.yaml", "tiny_gpt2.yaml" }) {
        const ModelRun run = runModel(file, 11);
        const Agreement embedded(run.embedded, run.referenceEmbedded, run.storage);
        WS_CHECK_EQ(embedded.identical, run.embedded.size());
        const Agreement out(run.out, run.reference, run.storage);
        report("stack", file, out, run.out.size());
        std::printf("  embedding %llu cycles (closed form %.0f), every block %llu cycles\n",
            static_cast<unsigned long long>(run.embedding.cycles), run.embeddingModel.cycles,
            static_cast<unsigned long long>(run.cycles));
        // The embedding's closed form, from the same spec and prompt: exact, as the blocks' kernels'.
        WS_CHECK_EQ(closedFormMismatch(run.embedding, run.embeddingModel), std::string());
        WS_CHECK(out.worst <= 4);
        WS_CHECK(out.identical * 10 >= run.out.size() * 9);
    }
}
