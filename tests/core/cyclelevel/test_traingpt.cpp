// A GPT-2-style decoder's training step at cycle level: the reference step
// (core/cyclelevel/traingptreference.h) against finite differences of its own loss with no
// rounding (every op's backward, LayerNorm's, attention's and GELU's among them, checked against
// the derivative it claims), and the blocked attention of the contract (trainops.h 9, 10)
// against attention in one pass.
#include "testing.h"

#include "core/cyclelevel/referenceops.h"
#include "core/cyclelevel/traingpt.h"
#include "core/cyclelevel/traingptreference.h"
#include "core/cyclelevel/trainops.h"

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
    return referenceStep(net, weights, masks, tokens, T, 1.0, false, Rounding(net.storage, true)).loss;
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
                = referenceStep(net, weights, masks, tokens, T, 1.0, false, Rounding(net.storage, true));
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
                = referenceStep(net, weights, masks, tokens, 1, 1.0, false, Rounding(net.storage, true));
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
