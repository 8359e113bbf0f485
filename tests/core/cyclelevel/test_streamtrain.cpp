// The training step at cycle level (core/cyclelevel/trainrun.h): its kernels beside the streamed
// GEMMs (the column all-gather, the activation and its derivative on the bands, the softmax
// cross-entropy) against plain loops and their closed forms, in both regimes (a token a PE and
// many); the optimizer's schedule; and whole steps of a small classifier against the reference
// step (trainreference.h), whose loss it matches to the bit and whose gradients within the bound
// the reference states, with the loss falling over steps as the reference's does.
#include "corefixtures.h"
#include "testing.h"

#include "core/cyclelevel/kernels/columngatherkernel.h"
#include "core/cyclelevel/kernels/localstepkernel.h"
#include "core/cyclelevel/kernels/streamgradientkernel.h"
#include "core/cyclelevel/referenceops.h"
#include "core/cyclelevel/streamfabric.h"
#include "core/cyclelevel/trainnet.h"
#include "core/cyclelevel/trainops.h"
#include "core/cyclelevel/trainreference.h"
#include "core/cyclelevel/trainrun.h"

#include <cmath>
#include <cstdio>
#include <tuple>

using namespace waferscope::core;
using namespace waferscope::core::cyclelevel;

namespace {

struct Layout {
    std::string name;
    int rows = 1;
    int columns = 1;
    int tokensPerPe = 1;
    std::int64_t dims = 1;
};

const std::vector<Layout>& layouts()
{
    static const std::vector<Layout> cases {
        { "a token a PE: 6 x 4 PEs, 20 values", 6, 4, 1, 20 },
        { "many tokens a PE: 3 x 2 PEs, 24 tokens each, 9 values", 3, 2, 24, 9 },
        { "more rows than values: 5 x 3 PEs, 3 values", 5, 3, 4, 3 },
        { "one row: 1 x 4 PEs", 1, 4, 2, 7 },
        { "tall: 16 x 2 PEs, 50 values", 16, 2, 3, 50 },
        { "one value over 3 rows", 3, 1, 1, 1 },
        { "every other band empty: 24 x 3 PEs, 12 values", 24, 3, 1, 12 },
        { "4 rows, 2 values", 4, 2, 1, 2 },
    };
    return cases;
}

std::vector<float> values(std::size_t count, std::uint64_t key, Storage storage)
{
    std::vector<float> out(count);
    WeightTensor(key, 0.0f, 2.0f, 1, std::int64_t(count), storage).row(0, out);
    return out;
}

double within(double measured, double model)
{
    return model > 0.0 ? std::abs(measured - model) / model : (measured == 0.0 ? 0.0 : 1.0);
}

} // namespace

// Every PE of a column ends with every band of its tokens, unchanged; engine cycles (one a store)
// and link wavelets are the closed form's exactly, the cycles within 15%.
WS_TEST(theColumnGatherGivesEveryPeItsTokensValues)
{
    for (const Layout& shape : layouts()) {
        const std::int64_t tokens = std::int64_t(shape.columns) * shape.tokensPerPe;
        ColumnGatherSpec spec;
        spec.name = "gather";
        spec.frame = { 0, 0, shape.columns, shape.rows, false };
        spec.tokensPerPe = shape.tokensPerPe;
        spec.dims = shape.dims;
        spec.values = values(std::size_t(tokens * shape.dims), 3, Storage::Fp16);
        KernelContext context;
        ColumnGatherKernel kernel(spec, context);
        StreamKernelRun run(shape.columns, shape.rows, 8, 1);
        kernel.route(run.book());
        kernel.load(run.fabric());
        const StreamRunMeasure measure = run.run(kernel, -1, 1'000'000);
        // Each PE's tiles, one PE at a time: all of its column's tokens' values, once each.
        std::vector<int> held(std::size_t(shape.rows * shape.columns), 0);
        int wrong = 0;
        for (const PrefillOutputTile& tile : kernel.outputTiles()) {
            const fabric::PeState& pe = run.fabric().pe(tile.pe.x, tile.pe.y);
            WS_CHECK_EQ(tile.firstToken, std::uint32_t(tile.pe.x * shape.tokensPerPe));
            for (std::uint32_t d = 0; d < tile.dims; ++d)
                for (std::uint32_t t = 0; t < tile.tokens; ++t)
                    wrong += pe.f32[tile.offset + d * tile.tokens + t]
                        != spec.values[std::size_t(tile.firstToken + t) * std::size_t(shape.dims) + tile.firstDim + d];
            held[std::size_t(tile.pe.y * shape.columns + tile.pe.x)] += int(tile.dims);
        }
        const KernelCost model = kernel.closedForm();
        const double busy = double(measure.busyCycles) / double(measure.pes * measure.cycles);
        std::printf("%-58s %6llu cycles, model %6.0f (%+.1f%%); busy %.3f, model %.3f\n", shape.name.c_str(),
            static_cast<unsigned long long>(measure.cycles), model.cycles,
            100.0 * (double(measure.cycles) - model.cycles) / model.cycles, busy, model.peBusyFraction);
        WS_CHECK_EQ(wrong, 0);
        for (const int count : held)
            WS_CHECK_EQ(count, int(shape.dims));
        WS_CHECK_EQ(double(measure.linkWavelets), model.linkWavelets);
        WS_CHECK(within(busy * double(measure.cycles), model.peBusyFraction * model.cycles) < 1e-9);
        WS_CHECK(within(double(measure.cycles), model.cycles) <= 0.15);
    }
}

// The local steps compute trainops.h's expressions to the bit, and take the cycles their closed
// form says exactly.
WS_TEST(theLocalStepsComputeTheContract)
{
    for (const Storage storage : { Storage::Fp16, Storage::Bf16 })
        for (const Layout& shape : layouts()) {
            const std::int64_t tokens = std::int64_t(shape.columns) * shape.tokensPerPe;
            const std::size_t count = std::size_t(tokens * shape.dims);
            KernelContext context;
            context.storage = storage;
            const std::vector<float> sums = values(count, 5, storage);
            const std::vector<float> saved = values(count, 7, storage);
            std::vector<std::int32_t> labels(static_cast<std::size_t>(tokens));
            for (std::size_t t = 0; t < labels.size(); ++t)
                labels[t] = t + 1 == labels.size() ? -1 : std::int32_t((t * 7) % std::size_t(shape.dims));
            for (const LocalStepSpec::Op op :
                { LocalStepSpec::Op::Activate, LocalStepSpec::Op::ActivateBackward, LocalStepSpec::Op::SoftmaxLoss }) {
                LocalStepSpec spec;
                spec.name = "step";
                spec.frame = { 0, 0, shape.columns, shape.rows, false };
                spec.op = op;
                spec.tokensPerPe = shape.tokensPerPe;
                spec.dims = shape.dims;
                spec.input = sums;
                spec.saved = op == LocalStepSpec::Op::ActivateBackward ? saved : std::vector<float> {};
                spec.labels = labels;
                spec.gradientScale = 1.0f / float(tokens);
                LocalStepKernel kernel(spec, context);
                StreamKernelRun run(shape.columns, shape.rows, 8, 1);
                kernel.load(run.fabric());
                const StreamRunMeasure measure = run.run(kernel, -1, 1'000'000);
                const std::vector<float> out = run.read(kernel.outputTiles(), tokens, shape.dims);
                std::vector<float> expected(count);
                std::vector<float> losses(static_cast<std::size_t>(tokens));
                for (std::int64_t t = 0; t < tokens; ++t) {
                    const std::size_t row = std::size_t(t * shape.dims);
                    if (op == LocalStepSpec::Op::SoftmaxLoss) {
                        losses[std::size_t(t)] = softmaxCrossEntropy(
                            std::span(sums).subspan(row, std::size_t(shape.dims)), labels[std::size_t(t)],
                            spec.gradientScale, storage, std::span(expected).subspan(row, std::size_t(shape.dims)));
                        continue;
                    }
                    for (std::int64_t d = 0; d < shape.dims; ++d) {
                        const float x = sums[row + std::size_t(d)];
                        expected[row + std::size_t(d)] = op == LocalStepSpec::Op::Activate
                            ? roundToStorage(relu(roundToStorage(x, storage)), storage)
                            : roundToStorage(roundToStorage(x, storage)
                                    * activationDerivative(Activation::Relu, saved[row + std::size_t(d)]),
                                storage);
                    }
                }
                int differ = 0;
                for (std::size_t i = 0; i < count; ++i)
                    differ += std::bit_cast<std::uint32_t>(out[i]) != std::bit_cast<std::uint32_t>(expected[i]);
                WS_CHECK_EQ(differ, 0);
                if (op == LocalStepSpec::Op::SoftmaxLoss) {
                    const std::vector<float> perToken = run.read(kernel.sideTiles(), tokens, 1);
                    for (std::int64_t t = 0; t < tokens; ++t)
                        WS_CHECK_EQ(perToken[std::size_t(t)], losses[std::size_t(t)]);
                }
                if (op == LocalStepSpec::Op::Activate) { // z = S(sum) beside h
                    const std::vector<float> z = run.read(kernel.sideTiles(), tokens, shape.dims);
                    for (std::size_t i = 0; i < count; ++i)
                        WS_CHECK_EQ(z[i], roundToStorage(sums[i], storage));
                }
                const KernelCost model = kernel.closedForm();
                WS_CHECK_EQ(double(measure.cycles), model.cycles);
                WS_CHECK(within(double(measure.busyCycles), model.peBusyFraction * model.cycles * double(measure.pes))
                    < 1e-9);
            }
        }
}

// The schedule of a Model Zoo optimizer: GPT-2 small's linear warm-up from 0 to 6e-4 over 500
// steps, then cosine decay to 6e-5 over 9,000; and the settings read with it.
WS_TEST(theOptimizerFollowsTheConfigsSchedule)
{
    const ModelGraph graph = waferscope::test::load(waferscope::test::sourceDir() + "/samples/gpt2_small.yaml");
    const ModelConfig::OptimizerSettings& settings = graph.config.optimizerSettings;
    WS_CHECK_EQ(settings.beta1, 0.9);
    WS_CHECK_EQ(settings.beta2, 0.95);
    WS_CHECK_EQ(settings.weightDecay, 0.1);
    WS_CHECK_EQ(settings.maxGradientNorm, 1.0);
    WS_CHECK_EQ(settings.lossScale, 0.0); // dynamic
    WS_REQUIRE(settings.schedule.size() == 2);
    const TrainOptimizer optimizer = trainOptimizer(graph.config, 0.0);
    WS_CHECK_EQ(optimizer.learningRate(0), 0.0);
    WS_CHECK_NEAR(optimizer.learningRate(250), 3e-4, 1e-12);
    WS_CHECK_NEAR(optimizer.learningRate(500), 6e-4, 1e-12);
    WS_CHECK_NEAR(optimizer.learningRate(500 + 4500), 6e-5 + (6e-4 - 6e-5) * 0.5, 1e-9);
    WS_CHECK_NEAR(optimizer.learningRate(9500), 6e-5, 1e-9);
    WS_CHECK_EQ(trainOptimizer(graph.config, 0.01).learningRate(0), 0.01);
    WS_CHECK_EQ(optimizer.lossScale, 32768.0);
}

// The weight gradient leaves through the west edge at the I/O's pace: a stream-bound gradient
// (a token a PE) taken off the wafer a wavelet every 4 cycles is bound by the exit, as its closed
// form says; every gradient arrives, in stream order.
WS_TEST(theGradientLeavesAtTheEdgesPace)
{
    for (const auto& [tokensPerPe, wavelets, cycles] : { std::tuple { 1, 1u, 4u }, std::tuple { 64, 1u, 4u },
             std::tuple { 1, 3u, 4u }, std::tuple { 1, 1001u, 1024u } }) {
        const int rows = 3;
        const int columns = 4;
        const std::int64_t outputs = 12;
        const std::int64_t inputs = 20;
        const std::int64_t tokens = std::int64_t(columns) * tokensPerPe;
        StreamGradientSpec spec;
        spec.name = "gradient";
        spec.frame = { 0, 0, columns, rows, false };
        spec.weight = WeightTensor(31, 0.0f, 0.5f, outputs, inputs, Storage::Fp16);
        spec.tokensPerPe = tokensPerPe;
        spec.input = values(std::size_t(tokens * inputs), 41, Storage::Fp16);
        spec.delta = values(std::size_t(tokens * outputs), 43, Storage::Fp16);
        spec.exit = { 0, wavelets, cycles };
        KernelContext context;
        StreamGradientKernel kernel(spec, context);
        StreamKernelRun run(columns, rows, 8, 1);
        kernel.route(run.book());
        kernel.load(run.fabric());
        const StreamRunMeasure measure = run.run(kernel, -1, 1'000'000);
        const KernelCost model = kernel.closedForm();
        std::size_t arrived = 0;
        for (const std::vector<float>& row : kernel.exited(run.fabric()))
            arrived += row.size();
        std::printf("gradient, %2d tokens a PE, out %u wavelets every %u cycles: %llu cycles, model %.0f (%+.1f%%)\n",
            tokensPerPe, wavelets, cycles, static_cast<unsigned long long>(measure.cycles), model.cycles,
            100.0 * (double(measure.cycles) - model.cycles) / model.cycles);
        WS_CHECK_EQ(arrived, std::size_t(outputs * inputs));
        WS_CHECK_EQ(double(measure.linkWavelets), model.linkWavelets);
        WS_CHECK(within(double(measure.cycles), model.cycles) <= 0.15);
        if (tokensPerPe == 1) // 80 a row, at most `wavelets` every `cycles` cycles
            WS_CHECK(double(measure.cycles) >= 80.0 * double(cycles) / double(wavelets));
    }
}

namespace {

TrainRunResult trainSmall(
    int width, std::int64_t samples, int steps, double rate, int threads = 1, const std::string& file = "tiny_mlp.yaml")
{
    const ModelGraph graph = waferscope::test::load(waferscope::test::dataDir() + "/cyclelevel/" + file);
    TrainRunOptions options;
    options.microBatch = samples;
    options.steps = steps;
    options.learningRate = rate;
    options.threads = threads;
    Expected<TrainRunResult> result = runTrainCycleLevel(graph, waferscope::test::smallWafer(width, 32), options);
    if (!result)
        throw std::runtime_error(result.error().format());
    return std::move(result).value();
}

} // namespace

// A step's loss is the reference's to the bit and every gradient within the reference's bound;
// with several tokens a PE (a narrow wafer), the fabric's sums over the tokens differ from the
// plain loop's order, and the errors stay within the bound.
WS_TEST(aTrainingStepMatchesTheReference)
{
    for (const int width : { 64, 3 }) {
        const TrainRunResult run = trainSmall(width, 12, 1, 0.0);
        std::printf("%d columns (%d tokens a PE): loss %.6f, reference %.6f; largest gradient error %.3g (%.0f%% of "
                    "its bound); %llu cycles, model %.0f\n",
            run.columns, run.tokensPerPe, run.loss, run.referenceLoss, run.maxAbsGradError, 100.0 * run.worstBoundShare,
            static_cast<unsigned long long>(run.cyclesPerStep), run.modelCyclesPerStep);
        WS_CHECK(run.lossMatchesReference);
        WS_CHECK(run.gradsMatchReference);
        WS_CHECK_EQ(run.loss, run.referenceLoss);
        WS_CHECK(std::isfinite(run.loss) && run.loss > 0.0);
        // Three layers: forward (stream, activation, gather) each, the loss, then each layer's
        // gradient and, above the first, its delta, activation derivative and gather.
        WS_CHECK_EQ(run.regions.size(), std::size_t(3 * 3 + 1 + 3 + 2 * 3));
        for (const TrainKernelRecord& record : run.regions) {
            WS_CHECK(record.measuredCycles > 0);
            const double error = within(double(record.measuredCycles), record.modelCycles);
            if (error > 0.15)
                std::printf("  %s %s %s: %llu cycles, model %.0f\n", record.op.c_str(), record.kernel.c_str(),
                    nameOf(record.pass), static_cast<unsigned long long>(record.measuredCycles), record.modelCycles);
            WS_CHECK(error <= 0.15);
        }
        if (width == 3) {
            WS_CHECK_EQ(run.tokensPerPe, 4);
            WS_CHECK(run.maxAbsGradError > 0.0); // other sums, the bound's reason
        }
    }
}

// With a constant rate, a few steps lower the loss on the fabric as in the reference, which the
// fabric's losses follow; two threads give the same steps to the bit.
WS_TEST(theLossFallsOverSteps)
{
    const TrainRunResult run = trainSmall(64, 16, 6, 0.2);
    const TrainRunResult twoThreads = trainSmall(64, 16, 6, 0.2, 2);
    WS_REQUIRE(run.losses.size() == 6 && run.referenceLosses.size() == 6);
    for (std::size_t i = 0; i < run.losses.size(); ++i) {
        std::printf("step %zu: loss %.6f, reference %.6f\n", i + 1, run.losses[i], run.referenceLosses[i]);
        WS_CHECK_NEAR(run.losses[i], run.referenceLosses[i], 1e-3);
        WS_CHECK_EQ(run.losses[i], twoThreads.losses[i]);
    }
    WS_CHECK(run.losses.back() < run.losses.front());
    WS_CHECK(run.referenceLosses.back() < run.referenceLosses.front());
}

// 90% sparse weights: the forward and delta streams carry the non-zeros only (and a marker an
// output), the gradient leaves for the weights the mask keeps only, and the step still matches the
// reference.
WS_TEST(sparseWeightsStreamTheirNonZerosOnly)
{
    const TrainRunResult dense = trainSmall(64, 8, 1, 0.0);
    const TrainRunResult sparse = trainSmall(64, 8, 1, 0.0, 1, "tiny_mlp_sparse.yaml");
    WS_CHECK(sparse.lossMatchesReference);
    WS_CHECK(sparse.gradsMatchReference);
    std::int64_t denseIn = 0;
    std::int64_t sparseIn = 0;
    std::int64_t denseOut = 0;
    std::int64_t sparseOut = 0;
    for (std::size_t i = 0; i < dense.regions.size(); ++i) {
        denseIn += dense.regions[i].bytesIn;
        sparseIn += sparse.regions[i].bytesIn;
        denseOut += dense.regions[i].bytesOut;
        sparseOut += sparse.regions[i].bytesOut;
    }
    // Dense: every weight and bias; sparse: about a tenth of the weights, the biases (zero at
    // first, so not streamed; kept, so with a gradient) and the markers.
    const std::int64_t weights = 24 * 16 + 16 * 12 + 12 * 5;
    const std::int64_t biases = 16 + 12 + 5;
    std::printf("bytes in %lld dense, %lld sparse; gradient bytes out %lld dense, %lld sparse\n",
        static_cast<long long>(denseIn), static_cast<long long>(sparseIn), static_cast<long long>(denseOut),
        static_cast<long long>(sparseOut));
    WS_CHECK_EQ(denseOut, 4 * (weights + biases));
    WS_CHECK(sparseOut > 4 * (weights / 20 + biases) && sparseOut < 4 * (weights / 5 + biases));
    WS_CHECK(sparseIn < denseIn / 3);
}

// A model the step cannot train yet is refused with the op it stops at.
WS_TEST(aModelWithoutTrainingKernelsIsRefused)
{
    const ModelGraph graph = waferscope::test::load(waferscope::test::dataDir() + "/cyclelevel/tiny_llama.yaml");
    const Expected<TrainRunResult> result
        = runTrainCycleLevel(graph, waferscope::test::smallWafer(64, 32), TrainRunOptions {});
    WS_REQUIRE(!result);
    WS_CHECK(result.error().kind == Diagnostic::Kind::CannotMap);
    WS_CHECK_CONTAINS(result.error().message, "has no training kernel yet");
}
