// A GPT-2-style decoder's training step at cycle level: the reference step
// (core/cyclelevel/traingptreference.h) against finite differences of its own loss with no
// rounding (every op's backward, LayerNorm's, attention's and GELU's among them, checked against
// the derivative it claims), and the blocked attention of the contract (trainops.h 9, 10)
// against attention in one pass.
#include "corefixtures.h"
#include "testing.h"

#include "core/cyclelevel/kernels/bandedlosskernel.h"
#include "core/cyclelevel/kernels/columngatherkernel.h"
#include "core/cyclelevel/kernels/columnreducekernel.h"
#include "core/cyclelevel/kernels/localstepkernel.h"
#include "core/cyclelevel/kernels/rowattentionkernel.h"
#include "core/cyclelevel/kernels/streamgemmkernel.h"
#include "core/cyclelevel/referenceops.h"
#include "core/cyclelevel/streamfabric.h"
#include "core/cyclelevel/traingpt.h"
#include "core/cyclelevel/traingptreference.h"
#include "core/cyclelevel/trainops.h"
#include "core/cyclelevel/trainrun.h"

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

using namespace waferscope::core;
using namespace waferscope::core::cyclelevel;

namespace {

TrainTransformer tinyDecoder(bool tied)
{
    TrainTransformer net;
    net.model = "tiny";
    net.storage = Storage::Fp16;
    net.vocab = 11;
    net.hidden = 8;
    net.heads = 2;
    net.ffn = 12;
    net.sequence = 6;
    net.blocks = 2;
    net.tied = tied;
    net.headBias = true;
    return net;
}

// The loss with no rounding, the weights as given.
float exactLoss(const TrainTransformer& net, const std::vector<std::vector<float>>& weights,
    const std::vector<std::vector<float>>& masks, const TrainTokens& tokens, int T)
{
    return referenceStep(net, weights, masks, tokens, { T, 3 }, 1.0, false, Rounding(net.storage, true)).loss;
}

std::vector<float> values(std::size_t count, std::uint64_t key, Storage storage, float scale = 2.0f)
{
    std::vector<float> out(count);
    WeightTensor(key, 0.0f, scale, 1, std::int64_t(count), storage).row(0, out);
    return out;
}

int bitsDiffer(const std::vector<float>& a, const std::vector<float>& b)
{
    if (a.size() != b.size())
        return -1;
    int differ = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        differ += std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i]);
    return differ;
}

double within(double measured, double model)
{
    return model > 0.0 ? std::abs(measured - model) / model : (measured == 0.0 ? 0.0 : 1.0);
}

} // namespace

// Each tensor's gradient, at a few of its entries, is the central difference of the loss: the
// step's backward is the derivative of its forward, with ties, the bias columns and the norms.
WS_TEST(theReferenceGradientsAreTheLossesDerivative)
{
    for (const bool tied : { true, false }) {
        const TrainTransformer net = tinyDecoder(tied);
        TrainOptimizer optimizer;
        TrainState state = initialState(net, 7, optimizer);
        // Norm weights away from 1 and biases away from 0, so that every term is exercised.
        std::vector<std::vector<float>> weights;
        std::vector<std::vector<float>> masks;
        const std::vector<TrainTransformer::Tensor> tensors = net.tensors();
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            std::vector<float> w = state.layers[i].master;
            for (std::size_t j = 0; j < w.size(); ++j)
                if (state.layers[i].mask[j] != 0.0f)
                    w[j] += 0.05f * std::sin(float(3 * j + i));
                else
                    w[j] = 0.0f;
            weights.push_back(w);
            masks.push_back(state.layers[i].mask);
        }
        const TrainTokens tokens = trainTokens(net, 2, 3, 0);
        for (const int T : { 1, 2, 3 }) {
            const ReferenceStep step
                = referenceStep(net, weights, masks, tokens, { T, 3 }, 1.0, false, Rounding(net.storage, true));
            WS_CHECK(std::isfinite(step.loss) && step.loss > 1.0f);
            double worst = 0.0;
            for (std::size_t i = 0; i < tensors.size(); ++i) {
                for (int pick = 0; pick < 4; ++pick) {
                    const std::size_t j = (std::size_t(pick) * 7919 + i * 31) % weights[i].size();
                    if (masks[i][j] == 0.0f) {
                        WS_CHECK_EQ(step.gradients[i][j], 0.0f);
                        continue;
                    }
                    const float h = 2e-3f;
                    std::vector<std::vector<float>> moved = weights;
                    moved[i][j] = weights[i][j] + h;
                    const float up = exactLoss(net, moved, masks, tokens, T);
                    moved[i][j] = weights[i][j] - h;
                    const float down = exactLoss(net, moved, masks, tokens, T);
                    const double difference = (double(up) - double(down)) / (2.0 * double(h));
                    const double error = std::fabs(difference - double(step.gradients[i][j]));
                    worst = std::max(worst, error / (2e-4 + 0.02 * std::fabs(difference)));
                    if (error > 2e-4 + 0.02 * std::fabs(difference))
                        std::printf("  %s[%zu] (T %d, %s): gradient %.6g, difference %.6g\n", tensors[i].name.c_str(),
                            j, T, tied ? "tied" : "untied", double(step.gradients[i][j]), difference);
                    WS_CHECK(error <= 2e-4 + 0.02 * std::fabs(difference));
                }
            }
            std::printf("  %s, T %d: loss %.5f, worst gradient error %.2f of its tolerance\n", tied ? "tied" : "untied",
                T, double(step.loss), worst);
            // The key blocks' size changes the order of the attention's sums only.
            const ReferenceStep one
                = referenceStep(net, weights, masks, tokens, { 1, 1 }, 1.0, false, Rounding(net.storage, true));
            WS_CHECK(std::fabs(step.loss - one.loss) <= 1e-5f * one.loss);
        }
    }
}

// Attention in blocks (trainops.h 9) equals attention in one pass over each query's keys, as the
// decode's contract computes it (referenceops.h 6), to within float rounding.
WS_TEST(blockedAttentionIsAttention)
{
    const std::int64_t hd = 4;
    const std::int64_t S = 6;
    const std::int64_t T = 2;
    const std::int64_t n = 12; // two sequences
    std::vector<float> q(std::size_t(n * hd));
    std::vector<float> k(q.size());
    std::vector<float> v(q.size());
    for (std::size_t i = 0; i < q.size(); ++i) {
        q[i] = std::sin(float(i) * 0.7f);
        k[i] = std::cos(float(i) * 1.3f);
        v[i] = std::sin(float(i) * 0.29f + 1.0f);
    }
    const float scale = 1.0f / std::sqrt(float(hd));
    for (std::int64_t c = 0; c < n / T; ++c) {
        std::vector<float> m(std::size_t(T), -std::numeric_limits<float>::infinity());
        std::vector<float> l(std::size_t(T), 0.0f);
        std::vector<float> acc(std::size_t(T * hd), 0.0f);
        const std::span<const float> qs = std::span(q).subspan(std::size_t(c * T * hd), std::size_t(T * hd));
        for (std::int64_t kb = c; kb >= (c * T / S) * S / T; --kb)
            attentionForwardBlock({ qs, c * T, T },
                { std::span(k).subspan(std::size_t(kb * T * hd), std::size_t(T * hd)), kb * T, T },
                std::span(v).subspan(std::size_t(kb * T * hd), std::size_t(T * hd)), S, hd, m, l, acc);
        std::vector<float> out(std::size_t(T * hd));
        std::vector<float> lse(static_cast<std::size_t>(T));
        attentionFinish(m, l, acc, hd, Rounding(Storage::Fp16, true), out, lse);
        for (std::int64_t t = 0; t < T; ++t) {
            const std::int64_t token = c * T + t;
            const std::int64_t start = token / S * S;
            std::vector<double> scores;
            double top = -1e30;
            for (std::int64_t j = start; j <= token; ++j) {
                double s = 0.0;
                for (std::int64_t d = 0; d < hd; ++d)
                    s += double(q[std::size_t(token * hd + d)]) * double(k[std::size_t(j * hd + d)]);
                scores.push_back(s * double(scale));
                top = std::max(top, scores.back());
            }
            double total = 0.0;
            for (const double s : scores)
                total += std::exp(s - top);
            WS_CHECK(std::fabs(double(lse[std::size_t(t)]) - (top + std::log(total))) < 1e-5);
            for (std::int64_t d = 0; d < hd; ++d) {
                double o = 0.0;
                for (std::int64_t j = start; j <= token; ++j)
                    o += std::exp(scores[std::size_t(j - start)] - top) * double(v[std::size_t(j * hd + d)]);
                WS_CHECK(std::fabs(double(out[std::size_t(t * hd + d)]) - o / total) < 1e-5);
            }
        }
    }
}

// The three passes of the row attention give the reference's blocked attention to the bit (O,
// the log-sum-exp, dQ, dK and dV), for a token a PE, several, a sequence a PE and two sequences a
// PE; engine cycles and link wavelets are the closed form's exactly, the cycles within 15%.
WS_TEST(theRowAttentionComputesTheContract)
{
    const std::int64_t heads = 2;
    const std::int64_t hd = 4;
    const std::int64_t S = 6;
    const std::int64_t tokens = 12;
    for (const Storage storage : { Storage::Fp16, Storage::Bf16 })
        for (const int T : { 1, 2, 3, 6, 12 }) {
            KernelContext context;
            context.storage = storage;
            const int columns = int(tokens / T);
            const AttentionShape shape { tokens, T, S, heads, hd, heads * hd };
            const std::vector<float> qkv = values(std::size_t(tokens * 3 * heads * hd), 21, storage);
            std::vector<float> out;
            std::vector<float> lse;
            referenceAttention(shape, qkv, storage, out, lse);
            const std::vector<float> dOut = values(out.size(), 22, storage, 0.5f);
            const std::vector<float> dqkv = referenceAttentionBackward(shape, qkv, out, lse, dOut, storage);
            for (const auto mode : { RowAttentionSpec::Mode::Forward, RowAttentionSpec::Mode::QueryGrad,
                     RowAttentionSpec::Mode::KeyGrad }) {
                RowAttentionSpec spec;
                spec.name = "attention";
                spec.frame = { 0, 0, columns, 3, false };
                spec.mode = mode;
                spec.tokensPerPe = T;
                spec.sequence = S;
                spec.heads = heads;
                spec.headDim = hd;
                spec.qkv = qkv;
                if (mode != RowAttentionSpec::Mode::Forward) {
                    spec.out = out;
                    spec.lse = lse;
                    spec.dOut = dOut;
                }
                RowAttentionKernel kernel(spec, context);
                StreamKernelRun run(columns, 3, 8, 1);
                kernel.route(run.book());
                kernel.load(run.fabric());
                const StreamRunMeasure measure = run.run(kernel, -1, 10'000'000);
                if (mode == RowAttentionSpec::Mode::Forward) {
                    WS_CHECK_EQ(bitsDiffer(run.read(kernel.outputTiles(), tokens, heads * hd), out), 0);
                    WS_CHECK_EQ(bitsDiffer(run.read(kernel.sideTiles(), tokens, heads), lse), 0);
                } else {
                    // The pass's share of dqkv: dq (QueryGrad) or dk and dv (KeyGrad) of each head.
                    const std::vector<float> got = run.read(kernel.outputTiles(), tokens, 3 * heads * hd);
                    std::vector<float> expected(dqkv.size(), 0.0f);
                    for (std::int64_t t = 0; t < tokens; ++t)
                        for (std::int64_t h = 0; h < heads; ++h)
                            for (std::int64_t d = 0; d < 3 * hd; ++d) {
                                const bool query = d < hd;
                                if (query == (mode == RowAttentionSpec::Mode::QueryGrad)) {
                                    const std::size_t at = std::size_t(t * 3 * heads * hd + h * 3 * hd + d);
                                    expected[at] = dqkv[at];
                                }
                            }
                    WS_CHECK_EQ(bitsDiffer(got, expected), 0);
                }
                const KernelCost model = kernel.closedForm();
                std::printf("  T %d, mode %d: %llu cycles (model %.0f), %llu link wavelets (model %.0f)\n", T,
                    int(mode), static_cast<unsigned long long>(measure.cycles), model.cycles,
                    static_cast<unsigned long long>(measure.linkWavelets), model.linkWavelets);
                WS_CHECK(within(double(measure.cycles), model.cycles) <= 0.15);
                WS_CHECK_EQ(double(measure.linkWavelets), model.linkWavelets);
                WS_CHECK(within(double(measure.busyCycles), model.peBusyFraction * model.cycles * double(measure.pes))
                    < 1e-9);
            }
        }
}

// The norms and the residual on the fabric are the contract's to the bit: LayerNorm at every PE
// of a column, its backward with and without a carried gradient (dx and the weight terms), and
// the residual add on the bands; a gather of bands of any bounds leaves every value in place.
WS_TEST(theNormsAndTheResidualComputeTheContract)
{
    const int columns = 3;
    const int rows = 4;
    const int T = 2;
    const std::int64_t D = 10;
    const std::int64_t tokens = columns * T;
    const auto count = std::size_t(tokens * D);
    for (const Storage storage : { Storage::Fp16, Storage::Bf16 }) {
        KernelContext context;
        context.storage = storage;
        const std::vector<float> x = values(count, 31, storage);
        const std::vector<float> dy = values(count, 32, storage, 0.25f);
        const std::vector<float> carry = values(count, 33, storage, 0.25f);
        std::vector<float> params = values(2 * std::size_t(D), 34, storage, 0.5f);
        for (std::int64_t i = 0; i < D; ++i)
            params[std::size_t(i)] += 1.0f;
        for (const LocalStepSpec::Op op :
            { LocalStepSpec::Op::LayerNorm, LocalStepSpec::Op::LayerNormBackward, LocalStepSpec::Op::Residual }) {
            for (const bool carried : { false, true }) {
                if (carried && op != LocalStepSpec::Op::LayerNormBackward)
                    continue;
                LocalStepSpec spec;
                spec.name = "norm";
                spec.frame = { 0, 0, columns, rows, false };
                spec.op = op;
                spec.tokensPerPe = T;
                spec.dims = D;
                spec.input = op == LocalStepSpec::Op::LayerNormBackward ? dy : x;
                if (op != LocalStepSpec::Op::LayerNorm)
                    spec.saved = op == LocalStepSpec::Op::Residual ? carry : x;
                if (carried)
                    spec.carry = carry;
                if (op != LocalStepSpec::Op::Residual)
                    spec.params = params;
                LocalStepKernel kernel(spec, context);
                StreamKernelRun run(columns, rows, 8, 1);
                kernel.load(run.fabric());
                const StreamRunMeasure measure = run.run(kernel, -1, 1'000'000);
                std::vector<float> expected(count);
                std::vector<float> terms(count * 2);
                for (std::int64_t t = 0; t < tokens; ++t) {
                    const auto row = std::size_t(t * D);
                    const auto at
                        = [&](const std::vector<float>& v) { return std::span(v).subspan(row, std::size_t(D)); };
                    const std::span<float> to = std::span(expected).subspan(row, std::size_t(D));
                    const std::span<const float> all(params);
                    if (op == LocalStepSpec::Op::LayerNorm)
                        layerNormForward(
                            at(x), all.first(std::size_t(D)), all.subspan(std::size_t(D)), 1e-5f, storage, to);
                    else if (op == LocalStepSpec::Op::Residual)
                        for (std::int64_t d = 0; d < D; ++d)
                            to[std::size_t(d)] = roundToStorage(
                                carry[row + std::size_t(d)] + roundToStorage(x[row + std::size_t(d)], storage),
                                storage);
                    else
                        layerNormBackward(at(x), all.first(std::size_t(D)), at(dy),
                            carried ? at(carry) : std::span<const float>(), 1e-5f, storage, to,
                            std::span(terms).subspan(2 * row, std::size_t(D)),
                            std::span(terms).subspan(2 * row + std::size_t(D), std::size_t(D)));
                }
                // Every PE of a column holds the norm's outputs: each row's copy is checked.
                if (op == LocalStepSpec::Op::Residual) {
                    WS_CHECK_EQ(bitsDiffer(run.read(kernel.outputTiles(), tokens, D), expected), 0);
                } else {
                    for (int r = 0; r < rows; ++r) {
                        std::vector<PrefillOutputTile> tiles;
                        for (const PrefillOutputTile& tile : kernel.outputTiles())
                            if (tile.pe.y == r)
                                tiles.push_back(tile);
                        WS_CHECK_EQ(bitsDiffer(run.read(tiles, tokens, D), expected), 0);
                    }
                }
                if (op == LocalStepSpec::Op::LayerNormBackward)
                    WS_CHECK_EQ(bitsDiffer(run.read(kernel.sideTiles(), tokens, 2 * D), terms), 0);
                const KernelCost model = kernel.closedForm();
                WS_CHECK_EQ(double(measure.cycles), model.cycles);
            }
        }
        // A gather of the attention's bands: a head's 3 values on each of the first 3 rows of 4.
        ColumnGatherSpec gather;
        gather.name = "gather";
        gather.frame = { 0, 0, columns, rows, false };
        gather.tokensPerPe = T;
        gather.dims = 9;
        gather.values = values(std::size_t(tokens * 9), 35, storage);
        gather.bands = { 0, 3, 6, 9, 9 };
        ColumnGatherKernel kernel(gather, context);
        StreamKernelRun run(columns, rows, 8, 1);
        kernel.route(run.book());
        kernel.load(run.fabric());
        const StreamRunMeasure measure = run.run(kernel, -1, 1'000'000);
        for (int r = 0; r < rows; ++r) {
            std::vector<PrefillOutputTile> tiles;
            for (const PrefillOutputTile& tile : kernel.outputTiles())
                if (tile.pe.y == r)
                    tiles.push_back(tile);
            std::vector<float> got = run.read(tiles, tokens, 9);
            // A PE's own band stays where it was loaded, outside the tiles of what came to it.
            for (std::int64_t t = 0; t < tokens; ++t)
                for (std::uint32_t d = gather.bands[std::size_t(r)]; d < gather.bands[std::size_t(r) + 1]; ++d)
                    if (got[std::size_t(t * 9 + d)] == 0.0f)
                        got[std::size_t(t * 9 + d)] = gather.values[std::size_t(t * 9 + d)];
            WS_CHECK_EQ(bitsDiffer(got, gather.values), 0);
        }
        WS_CHECK(within(double(measure.cycles), kernel.closedForm().cycles) <= 0.15);
        WS_CHECK_EQ(double(measure.linkWavelets), kernel.closedForm().linkWavelets);
    }
}

// Whole steps of two small decoders on the fabric, a token a PE, several (a sequence over two
// columns) and two sequences a PE: the loss equals the reference step's to the bit, every
// gradient is within the reference's bound, and each of the step's 46 L + 15 kernels is within
// 15% of its closed form.
WS_TEST(aDecoderStepOnTheFabricIsTheReferenceStep)
{
    struct Case {
        const char* file;
        int width;
        int expectedT;
    };
    for (const Case& c : { Case { "tiny_gpt2.yaml", 64, 1 }, Case { "tiny_gpt2_tied.yaml", 4, 4 },
             Case { "tiny_gpt2_tied.yaml", 1, 16 } }) {
        const ModelGraph graph = waferscope::test::load(waferscope::test::dataDir() + "/cyclelevel/" + c.file);
        TrainRunOptions options;
        options.microBatch = 2;
        options.sequence = 8;
        options.layers = 2;
        options.learningRate = 0.01;
        const Expected<TrainRunResult> result
            = runTrainCycleLevel(graph, waferscope::test::smallWafer(c.width, 40), options);
        WS_REQUIRE(result.hasValue());
        WS_CHECK_EQ(result->tokensPerPe, c.expectedT);
        WS_CHECK_EQ(result->tokens, std::int64_t(16));
        WS_CHECK(result->lossMatchesReference);
        WS_CHECK(result->gradsMatchReference);
        WS_CHECK_EQ(result->regions.size(), std::size_t(46 * 2 + 15));
        double worst = 0.0;
        for (const TrainKernelRecord& record : result->regions) {
            const double off = within(double(record.measuredCycles), record.modelCycles);
            worst = std::max(worst, off);
            if (off > 0.15)
                std::printf("  %s %s: %llu cycles, model %.0f\n", record.op.c_str(), record.kernel.c_str(),
                    static_cast<unsigned long long>(record.measuredCycles), record.modelCycles);
            WS_CHECK(off <= 0.15);
        }
        std::printf("  %s, T %d: loss %.5f (reference %.5f), gradient error %.2g (%.0f%% of its bound), %llu cycles "
                    "(model %.0f), worst kernel %.1f%% off its model\n",
            c.file, result->tokensPerPe, result->loss, result->referenceLoss, result->maxAbsGradError,
            100.0 * result->worstBoundShare, static_cast<unsigned long long>(result->cyclesPerStep),
            result->modelCyclesPerStep, 100.0 * worst);
    }
}

// Over six steps with AdamW the decoder learns the tokens' alphabet and rule (traingpt.h): the
// loss falls by more than a quarter, step by step as the reference's copy of the weights falls
// (the two differ only by the order of the gradients' sums), and two threads give the same
// losses as one to the bit.
WS_TEST(aDecoderLearnsOnTheFabric)
{
    const ModelGraph graph = waferscope::test::load(waferscope::test::dataDir() + "/cyclelevel/tiny_gpt2_tied.yaml");
    std::vector<std::vector<double>> runs;
    for (const int threads : { 1, 2 }) {
        TrainRunOptions options;
        options.microBatch = 4;
        options.sequence = 8;
        options.steps = 6;
        options.learningRate = 0.03;
        options.threads = threads;
        const Expected<TrainRunResult> result = runTrainCycleLevel(graph, waferscope::test::smallWafer(8, 40), options);
        WS_REQUIRE(result.hasValue());
        WS_REQUIRE(result->losses.size() == 6);
        for (std::size_t s = 0; s < 6; ++s)
            WS_CHECK(std::fabs(result->losses[s] - result->referenceLosses[s]) <= 1e-3 * result->referenceLosses[s]);
        WS_CHECK(result->losses.back() < 0.7 * result->losses.front());
        std::printf("  %d thread(s): losses", threads);
        for (const double loss : result->losses)
            std::printf(" %.4f", loss);
        std::printf("\n");
        runs.push_back(result->losses);
    }
    WS_CHECK(runs[0] == runs[1]);
}

// The LM head's delta over the vocabulary's bands: each PE row streams its band's rows of W and
// sums over its band only (StreamGemmSpec::splitInner); the column all-reduce adds the rows'
// partials in row order and rounds: dX = S(Σ_bands Σ_{i in band} W_ij dz_i), to the bit; the
// all-reduce's link wavelets are its closed form's, its cycles within 15%.
WS_TEST(theHeadsDeltaOverTheVocabularysBandsIsTheBandedSum)
{
    const int columns = 3;
    const int T = 2;
    const std::int64_t V = 37;
    const std::int64_t D = 10;
    const std::int64_t tokens = columns * T;
    for (const int rows : { 1, 2, 5 }) {
        KernelContext context;
        const std::vector<float> w = values(std::size_t(V * D), 41, context.storage, 0.5f);
        const std::vector<float> dz = values(std::size_t(tokens * V), 42, context.storage, 0.25f);
        StreamGemmSpec spec;
        spec.name = "head delta";
        spec.frame = { 0, 0, columns, rows, false };
        spec.pass = Pass::BackwardDelta;
        spec.weight = WeightTensor::stored(std::make_shared<const std::vector<float>>(w), V, D, D, context.storage);
        spec.tokensPerPe = T;
        spec.resident = dz;
        spec.splitInner = true;
        StreamGemmKernel gemm(spec, context);
        StreamKernelRun run(columns, rows, 8, 1);
        const int color = run.feedFromEdge(gemm.name(), gemm.lanes(), gemm.feed(), columns, {});
        gemm.load(run.fabric());
        run.run(gemm, color, 1'000'000);
        ColumnReduceSpec reduce;
        reduce.name = "head delta reduce";
        reduce.frame = spec.frame;
        reduce.tokensPerPe = T;
        reduce.dims = D;
        for (int r = 0; r < rows; ++r) {
            std::vector<PrefillOutputTile> tiles;
            for (const PrefillOutputTile& tile : gemm.outputTiles())
                if (tile.pe.y == r)
                    tiles.push_back(tile);
            reduce.partials.push_back(run.read(tiles, tokens, D));
        }
        ColumnReduceKernel kernel(reduce, context);
        StreamKernelRun second(columns, rows, 8, 1);
        kernel.route(second.book());
        kernel.load(second.fabric());
        const StreamRunMeasure measure = second.run(kernel, -1, 1'000'000);
        std::vector<float> expected(std::size_t(tokens * D));
        for (std::int64_t t = 0; t < tokens; ++t)
            for (std::int64_t j = 0; j < D; ++j) {
                float total = 0.0f;
                for (int r = 0; r < rows; ++r) {
                    float band = 0.0f;
                    for (std::int64_t i = blockBegin(V, rows, r); i < blockBegin(V, rows, r + 1); ++i)
                        band += w[std::size_t(i * D + j)] * dz[std::size_t(t * V + i)];
                    total = r == 0 ? band : total + band;
                }
                expected[std::size_t(t * D + j)] = roundToStorage(total, context.storage);
            }
        for (int r = 0; r < rows; ++r) {
            std::vector<PrefillOutputTile> tiles;
            for (const PrefillOutputTile& tile : kernel.outputTiles())
                if (tile.pe.y == r)
                    tiles.push_back(tile);
            WS_CHECK_EQ(bitsDiffer(second.read(tiles, tokens, D), expected), 0);
        }
        const KernelCost model = kernel.closedForm();
        std::printf("  %d rows: %llu cycles (model %.0f), %llu link wavelets (model %.0f)\n", rows,
            static_cast<unsigned long long>(measure.cycles), model.cycles,
            static_cast<unsigned long long>(measure.linkWavelets), model.linkWavelets);
        WS_CHECK(within(double(measure.cycles), model.cycles) <= 0.15);
        WS_CHECK_EQ(double(measure.linkWavelets), model.linkWavelets);
    }
}

// The loss on the head's bands: dz and each token's loss are bandedSoftmaxCrossEntropy()'s to the
// bit (the max and the band sums all-reduced down and up the columns), a padding token has none;
// the cycles are within 15% of the closed form and the link wavelets its.
WS_TEST(theLossOnTheLogitsBandsIsTheBandedContract)
{
    const int columns = 3;
    const int T = 2;
    const std::int64_t V = 23;
    const std::int64_t tokens = columns * T;
    for (const int rows : { 1, 3, 7, 30 }) {
        KernelContext context;
        BandedLossSpec spec;
        spec.name = "loss";
        spec.frame = { 0, 0, columns, rows, false };
        spec.tokensPerPe = T;
        spec.dims = V;
        spec.logits = values(std::size_t(tokens * V), 51, context.storage, 4.0f);
        for (std::int64_t t = 0; t < tokens; ++t)
            spec.labels.push_back(t + 1 == tokens ? -1 : std::int32_t((t * 5 + 3) % V));
        spec.gradientScale = 0.25f;
        BandedLossKernel kernel(spec, context);
        StreamKernelRun run(columns, rows, 8, 1);
        kernel.route(run.book());
        kernel.load(run.fabric());
        const StreamRunMeasure measure = run.run(kernel, -1, 1'000'000);
        std::vector<float> expected(spec.logits.size());
        std::vector<float> losses(static_cast<std::size_t>(tokens));
        for (std::int64_t t = 0; t < tokens; ++t)
            losses[std::size_t(t)]
                = bandedSoftmaxCrossEntropy(std::span(spec.logits).subspan(std::size_t(t * V), std::size_t(V)),
                    spec.labels[std::size_t(t)], spec.gradientScale, rows, context.storage,
                    std::span(expected).subspan(std::size_t(t * V), std::size_t(V)));
        WS_CHECK_EQ(bitsDiffer(run.read(kernel.outputTiles(), tokens, V), expected), 0);
        const std::vector<float> perRow = run.read(kernel.sideTiles(), tokens, rows);
        for (std::int64_t t = 0; t < tokens; ++t) {
            float loss = 0.0f;
            for (int r = 0; r < rows; ++r)
                loss += perRow[std::size_t(t * rows + r)];
            WS_CHECK_EQ(loss, losses[std::size_t(t)]);
        }
        const KernelCost model = kernel.closedForm();
        std::printf("  %d rows: %llu cycles (model %.0f), %llu link wavelets (model %.0f)\n", rows,
            static_cast<unsigned long long>(measure.cycles), model.cycles,
            static_cast<unsigned long long>(measure.linkWavelets), model.linkWavelets);
        WS_CHECK(within(double(measure.cycles), model.cycles) <= 0.15);
        WS_CHECK_EQ(double(measure.linkWavelets), model.linkWavelets);
    }
}

// What a decoder's step cannot run is refused before it starts, each with what it would need:
// sizes the kernels' 16-bit indices cannot name, more tokens a PE than its SRAM holds (found in
// a bounded search, not by counting up to it), more heads than PE rows; and a model whose
// positions are fewer than the default 128 runs with as many as it has.
WS_TEST(aDecoderStepItCannotRunIsRefusedBeforeItStarts)
{
    const ModelGraph tiny = waferscope::test::load(waferscope::test::dataDir() + "/cyclelevel/tiny_gpt2_tied.yaml");
    ModelGraph wide = tiny;
    wide.config.vocabSize = 70000;
    const Expected<TrainRunResult> vocabulary = runTrainCycleLevel(wide, waferscope::test::preset("cs2"), {});
    WS_REQUIRE(!vocabulary);
    WS_CHECK(vocabulary.error().kind == Diagnostic::Kind::CannotMap);
    WS_CHECK_CONTAINS(vocabulary.error().message, "a vocabulary of 70000");

    ModelGraph longer = tiny;
    longer.config.maxPositions = 8192;
    TrainRunOptions huge;
    huge.microBatch = 999983; // prime: no whole number of sequences a column but all of them
    huge.sequence = 8192;
    const auto start = std::chrono::steady_clock::now();
    const Expected<TrainRunResult> tooMany = runTrainCycleLevel(longer, waferscope::test::preset("cs2"), huge);
    WS_REQUIRE(!tooMany);
    WS_CHECK(tooMany.error().kind == Diagnostic::Kind::CannotMap);
    WS_CHECK_CONTAINS(tooMany.error().message, "tokens a PE");
    WS_CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));

    const Expected<TrainRunResult> heads = runTrainCycleLevel(tiny, waferscope::test::smallWafer(8, 2), {});
    WS_REQUIRE(!heads);
    WS_CHECK_CONTAINS(heads.error().message, "heads on 2 PE rows");

    ModelGraph shortPositions = tiny; // max_sequence_length 8 in the config, 32 positions
    shortPositions.config.sequenceLength = 1024;
    TrainRunOptions one;
    one.layers = 1;
    const Expected<TrainRunResult> capped
        = runTrainCycleLevel(shortPositions, waferscope::test::smallWafer(64, 40), one);
    WS_REQUIRE(capped.hasValue());
    WS_CHECK_EQ(capped->tokens, std::int64_t(32));
}
