#include "core/cyclelevel/traingptreference.h"

#include "core/kernels/geometry.h"

#include <cmath>
#include <limits>

namespace waferscope::core::cyclelevel {

namespace {

using Matrix = std::vector<float>; // tokens x width, row-major

Matrix withOnes(const Matrix& x, std::int64_t tokens, std::int64_t n)
{
    Matrix out(std::size_t(tokens * (n + 1)));
    for (std::int64_t t = 0; t < tokens; ++t) {
        std::copy_n(x.begin() + std::ptrdiff_t(t * n), n, out.begin() + std::ptrdiff_t(t * (n + 1)));
        out[std::size_t(t * (n + 1) + n)] = 1.0f;
    }
    return out;
}

// y_ti = R(Σ_j W_ij x_tj), j ascending over the `width` columns (a bias's input is 1).
Matrix linearForward(const std::vector<float>& w, std::int64_t outputs, std::int64_t width, const Matrix& x,
    std::int64_t tokens, Rounding round)
{
    Matrix y(std::size_t(tokens * outputs));
    for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int64_t i = 0; i < outputs; ++i) {
            float sum = 0.0f;
            for (std::int64_t j = 0; j < width; ++j)
                sum += w[std::size_t(i * width + j)] * x[std::size_t(t * width + j)];
            y[std::size_t(t * outputs + i)] = round(sum);
        }
    return y;
}

// dx_tj = R(Σ_i W_ij dz_ti), i ascending, over W's first `inputs` columns.
Matrix linearDelta(const std::vector<float>& w, std::int64_t outputs, std::int64_t inputs, std::int64_t width,
    const Matrix& dz, std::int64_t tokens, Rounding round)
{
    Matrix dx(std::size_t(tokens * inputs));
    for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int64_t j = 0; j < inputs; ++j) {
            float sum = 0.0f;
            for (std::int64_t i = 0; i < outputs; ++i)
                sum += w[std::size_t(i * width + j)] * dz[std::size_t(t * outputs + i)];
            dx[std::size_t(t * inputs + j)] = round(sum);
        }
    return dx;
}

// The head's delta over the vocabulary's bands: S(Σ_bands Σ_{i in band} W_ij dz_ti), W V x (D + 1).
Matrix bandedDelta(const std::vector<float>& w, std::int64_t outputs, std::int64_t inputs, const Matrix& dz,
    std::int64_t tokens, int rows, Rounding round)
{
    Matrix dx(std::size_t(tokens * inputs));
    for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int64_t j = 0; j < inputs; ++j) {
            float total = 0.0f;
            for (int r = 0; r < rows; ++r) {
                float band = 0.0f;
                for (std::int64_t i = blockBegin(outputs, rows, r); i < blockBegin(outputs, rows, r + 1); ++i)
                    band += w[std::size_t(i * (inputs + 1) + j)] * dz[std::size_t(t * outputs + i)];
                total = r == 0 ? band : total + band;
            }
            dx[std::size_t(t * inputs + j)] = round(total);
        }
    return dx;
}

class Gradients {
public:
    Gradients(ReferenceStep& step, const std::vector<std::vector<float>>& masks, std::int64_t tokens, bool withBounds)
        : m_step(step)
        , m_masks(masks)
        , m_tokens(tokens)
        , m_withBounds(withBounds)
    {
        const double u = 0x1p-24;
        m_gamma = double(tokens - 1) * u / (1.0 - double(tokens - 1) * u);
    }

    // Adds dG_ij = Σ_t dz_ti x_tj (t ascending) for the kept weights of tensor `index`, laid out
    // outputs x width; `dz` empty: 1 a token (a norm's terms).
    void add(std::size_t index, std::int64_t outputs, std::int64_t width, const Matrix& dz, const Matrix& x)
    {
        std::vector<float>& grad = m_step.gradients[index];
        for (std::int64_t i = 0; i < outputs; ++i)
            for (std::int64_t j = 0; j < width; ++j) {
                const std::size_t at = std::size_t(i * width + j);
                if (m_masks[index][at] == 0.0f)
                    continue;
                float sum = 0.0f;
                double magnitude = 0.0;
                for (std::int64_t t = 0; t < m_tokens; ++t) {
                    const float product
                        = (dz.empty() ? 1.0f : dz[std::size_t(t * outputs + i)]) * x[std::size_t(t * width + j)];
                    sum += product;
                    magnitude += std::fabs(double(product));
                }
                grad[at] = sum;
                if (m_withBounds)
                    m_step.bounds[index][at] = float(2.0 * m_gamma * magnitude
                        + double(m_tokens) * double(std::numeric_limits<float>::denorm_min()));
            }
    }

private:
    ReferenceStep& m_step;
    const std::vector<std::vector<float>>& m_masks;
    std::int64_t m_tokens = 0;
    bool m_withBounds = false;
    double m_gamma = 0.0;
};

// What the forward keeps for the backward of a block.
struct BlockSaved {
    Matrix in; // x
    Matrix a; // LN1(x), with ones
    Matrix qkv;
    Matrix out; // attention's o
    Matrix lse; // tokens x heads
    Matrix oWithOnes;
    Matrix mid; // x after attention
    Matrix b; // LN2, with ones
    Matrix u; // fc1's z
    Matrix h; // act(u), with ones
};

// The rows of one head's part of `rows` (tokens x stride) for the tokens of block `block`.
std::vector<float> headRows(
    const Matrix& rows, std::int64_t stride, std::int64_t offset, std::int64_t hd, std::int64_t block, std::int64_t T)
{
    std::vector<float> out(std::size_t(T * hd));
    for (std::int64_t t = 0; t < T; ++t)
        std::copy_n(
            rows.begin() + std::ptrdiff_t((block * T + t) * stride + offset), hd, out.begin() + std::ptrdiff_t(t * hd));
    return out;
}

// LayerNorm forward of every token with tensor `weights` (weight, then bias).
Matrix normForward(const TrainTransformer& net, const std::vector<float>& weights, const Matrix& x, std::int64_t tokens,
    Rounding round)
{
    const auto D = std::size_t(net.hidden);
    Matrix y(x.size());
    const std::span<const float> all(weights);
    for (std::int64_t t = 0; t < tokens; ++t)
        layerNormForward(std::span(x).subspan(std::size_t(t) * D, D), all.first(D), all.subspan(D, D), net.epsilon,
            round, std::span(y).subspan(std::size_t(t) * D, D));
    return y;
}

// LayerNorm backward of every token: returns dx (with `carry` added) and fills the terms
// (tokens x 2D: dy x^, then dy).
Matrix normBackward(const TrainTransformer& net, const std::vector<float>& weights, const Matrix& x, const Matrix& dy,
    const Matrix& carry, std::int64_t tokens, Rounding round, Matrix& terms)
{
    const auto D = std::size_t(net.hidden);
    Matrix dx(x.size());
    terms.assign(std::size_t(tokens) * 2 * D, 0.0f);
    for (std::int64_t t = 0; t < tokens; ++t) {
        const std::span<float> row = std::span(terms).subspan(std::size_t(t) * 2 * D, 2 * D);
        layerNormBackward(std::span(x).subspan(std::size_t(t) * D, D), std::span(weights).first(D),
            std::span(dy).subspan(std::size_t(t) * D, D),
            carry.empty() ? std::span<const float>() : std::span(carry).subspan(std::size_t(t) * D, D), net.epsilon,
            round, std::span(dx).subspan(std::size_t(t) * D, D), row.first(D), row.subspan(D, D));
    }
    return dx;
}

Matrix residual(const Matrix& x, const Matrix& y, Rounding round)
{
    Matrix out(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
        out[i] = round(x[i] + y[i]);
    return out;
}

} // namespace

namespace {
struct Attention {
    const AttentionShape& net;
    Rounding round;
    std::int64_t tokens = net.tokens;
    std::int64_t T = net.tokensPerPe;
    std::int64_t blocks() const { return tokens / T; }
    std::int64_t firstBlock(std::int64_t c) const { return (c * T / net.sequence) * net.sequence / T; }
    std::int64_t lastBlock(std::int64_t c) const
    {
        const std::int64_t end = ((c * T + T - 1) / net.sequence + 1) * net.sequence - 1;
        return std::min(blocks() - 1, end / T);
    }

    void forward(const Matrix& qkv, Matrix& out, Matrix& lse) const
    {
        const std::int64_t hd = net.headDim;
        const std::int64_t stride = 3 * net.hidden;
        out.assign(std::size_t(tokens * net.hidden), 0.0f);
        lse.assign(std::size_t(tokens * net.heads), 0.0f);
        for (std::int64_t h = 0; h < net.heads; ++h)
            for (std::int64_t c = 0; c < blocks(); ++c) {
                const std::vector<float> q = headRows(qkv, stride, h * 3 * hd, hd, c, T);
                std::vector<float> m(std::size_t(T), -std::numeric_limits<float>::infinity());
                std::vector<float> l(std::size_t(T), 0.0f);
                std::vector<float> acc(std::size_t(T * hd), 0.0f);
                for (std::int64_t kb = c; kb >= firstBlock(c); --kb) {
                    const std::vector<float> k = headRows(qkv, stride, h * 3 * hd + hd, hd, kb, T);
                    const std::vector<float> v = headRows(qkv, stride, h * 3 * hd + 2 * hd, hd, kb, T);
                    attentionForwardBlock({ q, c * T, T }, { k, kb * T, T }, v, net.sequence, hd, m, l, acc);
                }
                std::vector<float> o(std::size_t(T * hd));
                std::vector<float> logSum(static_cast<std::size_t>(T));
                attentionFinish(m, l, acc, hd, round, o, logSum);
                for (std::int64_t t = 0; t < T; ++t) {
                    std::copy_n(o.begin() + std::ptrdiff_t(t * hd), hd,
                        out.begin() + std::ptrdiff_t((c * T + t) * net.hidden + h * hd));
                    lse[std::size_t((c * T + t) * net.heads + h)] = logSum[std::size_t(t)];
                }
            }
    }

    // dqkv (tokens x 3D, head-major) from dO (tokens x D).
    Matrix backward(const Matrix& qkv, const Matrix& out, const Matrix& lse, const Matrix& dOut) const
    {
        const std::int64_t hd = net.headDim;
        const std::int64_t stride = 3 * net.hidden;
        const float scale = 1.0f / std::sqrt(float(hd));
        Matrix dqkv(std::size_t(tokens * stride), 0.0f);
        for (std::int64_t h = 0; h < net.heads; ++h) {
            const auto part = [&](std::int64_t which, std::int64_t block) {
                return headRows(qkv, stride, h * 3 * hd + which * hd, hd, block, T);
            };
            std::vector<std::vector<float>> gOut(static_cast<std::size_t>(blocks()));
            std::vector<std::vector<float>> logSums(static_cast<std::size_t>(blocks()));
            std::vector<std::vector<float>> deltas(static_cast<std::size_t>(blocks()));
            for (std::int64_t c = 0; c < blocks(); ++c) {
                gOut[std::size_t(c)] = headRows(dOut, net.hidden, h * hd, hd, c, T);
                const std::vector<float> o = headRows(out, net.hidden, h * hd, hd, c, T);
                logSums[std::size_t(c)] = headRows(lse, net.heads, h, 1, c, T);
                deltas[std::size_t(c)].resize(std::size_t(T));
                attentionDelta(gOut[std::size_t(c)], o, hd, deltas[std::size_t(c)]);
            }
            for (std::int64_t c = 0; c < blocks(); ++c) {
                const std::vector<float> q = part(0, c);
                std::vector<float> dq(std::size_t(T * hd), 0.0f);
                for (std::int64_t kb = c; kb >= firstBlock(c); --kb)
                    attentionQueryGradBlock({ q, c * T, T }, gOut[std::size_t(c)], logSums[std::size_t(c)],
                        deltas[std::size_t(c)], { part(1, kb), kb * T, T }, part(2, kb), net.sequence, hd, dq);
                const std::vector<float> k = part(1, c);
                const std::vector<float> v = part(2, c);
                std::vector<float> dk(std::size_t(T * hd), 0.0f);
                std::vector<float> dv(std::size_t(T * hd), 0.0f);
                for (std::int64_t qb = c; qb <= lastBlock(c); ++qb)
                    attentionKeyGradBlock({ k, c * T, T }, v, { part(0, qb), qb * T, T }, gOut[std::size_t(qb)],
                        logSums[std::size_t(qb)], deltas[std::size_t(qb)], net.sequence, hd, dk, dv);
                for (std::int64_t t = 0; t < T; ++t)
                    for (std::int64_t d = 0; d < hd; ++d) {
                        const std::size_t row = std::size_t((c * T + t) * stride + h * 3 * hd + d);
                        const std::size_t at = std::size_t(t * hd + d);
                        dqkv[row] = round(dq[at] * scale);
                        dqkv[row + std::size_t(hd)] = round(dk[at] * scale);
                        dqkv[row + std::size_t(2 * hd)] = round(dv[at]);
                    }
            }
        }
        return dqkv;
    }
};

} // namespace

void referenceAttention(const AttentionShape& shape, const std::vector<float>& qkv, Rounding round,
    std::vector<float>& out, std::vector<float>& lse)
{
    Attention { shape, round }.forward(qkv, out, lse);
}

std::vector<float> referenceAttentionBackward(const AttentionShape& shape, const std::vector<float>& qkv,
    const std::vector<float>& out, const std::vector<float>& lse, const std::vector<float>& dOut, Rounding round)
{
    return Attention { shape, round }.backward(qkv, out, lse, dOut);
}

ReferenceStep referenceStep(const TrainTransformer& net, const std::vector<std::vector<float>>& weights,
    const std::vector<std::vector<float>>& masks, const TrainTokens& tokens, DecoderLayout layout, double lossScale,
    bool withBounds, Rounding round)
{
    const int tokensPerPe = layout.tokensPerPe;
    const auto n = std::int64_t(tokens.ids.size());
    const std::int64_t D = net.hidden;
    const std::int64_t F = net.ffn;
    const std::int64_t V = net.vocab;
    const AttentionShape shape { n, tokensPerPe, net.sequence, net.heads, net.headDim(), net.hidden };
    const Attention attention { shape, round };
    const std::vector<float> embedding = embeddingMatrix(net, weights);
    const Matrix oneHot = embeddingInputs(net, tokens, n);
    Matrix x = linearForward(embedding, D, V + net.sequence, oneHot, n, round);
    std::vector<BlockSaved> saved(std::size_t(net.blocks));
    for (std::int64_t b = 0; b < net.blocks; ++b) {
        BlockSaved& s = saved[std::size_t(b)];
        const auto tensor = [&](TrainTransformer::BlockTensor which) -> const std::vector<float>& {
            return weights[net.blockTensor(b, which)];
        };
        s.in = x;
        s.a = withOnes(normForward(net, tensor(TrainTransformer::Ln1), x, n, round), n, D);
        s.qkv = linearForward(tensor(TrainTransformer::Qkv), 3 * D, D + 1, s.a, n, round);
        attention.forward(s.qkv, s.out, s.lse);
        s.oWithOnes = withOnes(s.out, n, D);
        s.mid = residual(x, linearForward(tensor(TrainTransformer::Proj), D, D + 1, s.oWithOnes, n, round), round);
        s.b = withOnes(normForward(net, tensor(TrainTransformer::Ln2), s.mid, n, round), n, D);
        s.u = linearForward(tensor(TrainTransformer::Fc1), F, D + 1, s.b, n, round);
        Matrix h(s.u.size());
        for (std::size_t i = 0; i < h.size(); ++i)
            h[i] = activate(net.activation, s.u[i], round);
        s.h = withOnes(h, n, F);
        x = residual(s.mid, linearForward(tensor(TrainTransformer::Fc2), D, F + 1, s.h, n, round), round);
    }
    const Matrix finalIn = x;
    const Matrix finalOut = withOnes(normForward(net, weights[net.finalNorm()], x, n, round), n, D);
    const Matrix logits = linearForward(weights[net.head()], V, D + 1, finalOut, n, round);

    ReferenceStep step;
    Matrix dz(std::size_t(n * V));
    const float g = float(lossScale) / float(n);
    float total = 0.0f;
    for (std::int64_t t = 0; t < n; ++t)
        total += bandedSoftmaxCrossEntropy(std::span(logits).subspan(std::size_t(t * V), std::size_t(V)),
            tokens.labels[std::size_t(t)], g, layout.rows, round,
            std::span(dz).subspan(std::size_t(t * V), std::size_t(V)));
    step.loss = total / float(n);

    step.gradients.resize(weights.size());
    step.bounds.resize(weights.size());
    for (std::size_t i = 0; i < weights.size(); ++i) {
        step.gradients[i].assign(weights[i].size(), 0.0f);
        if (withBounds)
            step.bounds[i].assign(weights[i].size(), 0.0f);
    }
    Gradients gradients(step, masks, n, withBounds);
    std::vector<std::vector<float>> headGradient;
    Matrix terms;
    if (net.tied) { // the head's gradient and the embedding's land in one table: the head's first
        ReferenceStep head;
        head.gradients.assign(1, std::vector<float>(weights[net.head()].size(), 0.0f));
        head.bounds.assign(1, std::vector<float>(weights[net.head()].size(), 0.0f));
        const std::vector<std::vector<float>> headMask { masks[net.head()] };
        Gradients(head, headMask, n, withBounds).add(0, V, D + 1, dz, finalOut);
        step.gradients[net.head()] = head.gradients[0];
        step.bounds[net.head()] = head.bounds[0];
    } else {
        gradients.add(net.head(), V, D + 1, dz, finalOut);
    }
    Matrix dx = bandedDelta(weights[net.head()], V, D, dz, n, layout.rows, round);
    dx = normBackward(net, weights[net.finalNorm()], finalIn, dx, {}, n, round, terms);
    gradients.add(net.finalNorm(), 1, 2 * D, {}, terms);
    for (std::int64_t b = net.blocks; b-- > 0;) {
        const BlockSaved& s = saved[std::size_t(b)];
        const auto index = [&](TrainTransformer::BlockTensor which) { return net.blockTensor(b, which); };
        gradients.add(index(TrainTransformer::Fc2), D, F + 1, dx, s.h);
        Matrix du = linearDelta(weights[index(TrainTransformer::Fc2)], D, F, F + 1, dx, n, round);
        for (std::size_t i = 0; i < du.size(); ++i)
            du[i] = round(du[i] * activationDerivative(net.activation, s.u[i]));
        gradients.add(index(TrainTransformer::Fc1), F, D + 1, du, s.b);
        const Matrix db = linearDelta(weights[index(TrainTransformer::Fc1)], F, D, D + 1, du, n, round);
        dx = normBackward(net, weights[index(TrainTransformer::Ln2)], s.mid, db, dx, n, round, terms);
        gradients.add(index(TrainTransformer::Ln2), 1, 2 * D, {}, terms);
        gradients.add(index(TrainTransformer::Proj), D, D + 1, dx, s.oWithOnes);
        const Matrix dOut = linearDelta(weights[index(TrainTransformer::Proj)], D, D, D + 1, dx, n, round);
        const Matrix dqkv = attention.backward(s.qkv, s.out, s.lse, dOut);
        gradients.add(index(TrainTransformer::Qkv), 3 * D, D + 1, dqkv, s.a);
        const Matrix da = linearDelta(weights[index(TrainTransformer::Qkv)], 3 * D, D, D + 1, dqkv, n, round);
        dx = normBackward(net, weights[index(TrainTransformer::Ln1)], s.in, da, dx, n, round, terms);
        gradients.add(index(TrainTransformer::Ln1), 1, 2 * D, {}, terms);
    }
    // The embedding's gradient: D x (V + S) over the one-hot inputs, into the tables.
    const std::int64_t width = V + net.sequence;
    std::vector<std::vector<float>> embeddingMask { std::vector<float>(std::size_t(D * width), 1.0f) };
    ReferenceStep embeddingStep;
    embeddingStep.gradients.assign(1, std::vector<float>(std::size_t(D * width), 0.0f));
    embeddingStep.bounds.assign(1, std::vector<float>(std::size_t(D * width), 0.0f));
    Gradients(embeddingStep, embeddingMask, n, withBounds).add(0, D, width, dx, oneHot);
    scatterEmbeddingGradient(net, embeddingStep.gradients[0], step.gradients);
    if (withBounds) {
        std::vector<std::vector<float>> bounds(step.gradients.size());
        bounds[TrainTransformer::kTokenTable] = step.bounds[TrainTransformer::kTokenTable];
        bounds[TrainTransformer::kPositionTable] = step.bounds[TrainTransformer::kPositionTable];
        scatterEmbeddingGradient(net, embeddingStep.bounds[0], bounds);
        step.bounds[TrainTransformer::kTokenTable] = bounds[TrainTransformer::kTokenTable];
        step.bounds[TrainTransformer::kPositionTable] = bounds[TrainTransformer::kPositionTable];
        if (net.tied) // the head's and the embedding's sums are added once more
            for (std::size_t j = 0; j < step.bounds[net.head()].size(); ++j)
                step.bounds[net.head()][j] += float(0x1p-22 * std::fabs(double(step.gradients[net.head()][j])));
    }
    for (std::size_t i = 0; i < step.gradients.size(); ++i) // masked weights (a missing bias) get none
        for (std::size_t j = 0; j < step.gradients[i].size(); ++j)
            if (masks[i][j] == 0.0f)
                step.gradients[i][j] = 0.0f;
    return step;
}

} // namespace waferscope::core::cyclelevel
