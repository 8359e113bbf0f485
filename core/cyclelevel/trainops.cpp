#include "core/cyclelevel/trainops.h"

#include "core/cyclelevel/referenceops.h"
#include "core/kernels/geometry.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace waferscope::core::cyclelevel {

namespace {

constexpr float kGeluC = 0.7978845608028654f; // float(sqrt(2 / pi)), as referenceops' gelu
constexpr float kGeluA = 0.044715f;

float headScale(std::int64_t headDim)
{
    return 1.0f / std::sqrt(float(headDim));
}

float score(std::span<const float> q, std::span<const float> k, float scale)
{
    return dot(q, k) * scale;
}

// LayerNorm's mean and 1 / sqrt(var + eps) (referenceops' form 2).
std::pair<float, float> normStatistics(std::span<const float> x, float epsilon)
{
    const auto n = float(x.size());
    float total = 0.0f;
    for (const float value : x)
        total += value;
    const float mean = total / n;
    float squares = 0.0f;
    for (const float value : x)
        squares += (value - mean) * (value - mean);
    return { mean, 1.0f / std::sqrt(squares / n + epsilon) };
}

} // namespace

bool hasTrainingDerivative(Activation activation)
{
    return activation == Activation::Relu || activation == Activation::Gelu;
}

float geluDerivative(float z)
{
    const float th = std::tanh(kGeluC * (z + kGeluA * z * z * z));
    return 0.5f * (1.0f + th) + 0.5f * z * (1.0f - th * th) * kGeluC * (1.0f + 3.0f * kGeluA * z * z);
}

float activationDerivative(Activation activation, float z)
{
    switch (activation) {
    case Activation::Relu:
        return z > 0.0f ? 1.0f : 0.0f;
    case Activation::Gelu:
        return geluDerivative(z);
    default:
        return 0.0f;
    }
}

float activate(Activation activation, float z, Rounding round)
{
    switch (activation) {
    case Activation::Relu:
        return round(z > 0.0f ? z : 0.0f);
    case Activation::Gelu:
        return round(gelu(z));
    default:
        return round(z);
    }
}

float bandedSoftmaxCrossEntropy(std::span<const float> logits, std::int32_t label, float gradientScale, int rows,
    Rounding round, std::span<float> dz)
{
    if (label < 0) {
        std::fill(dz.begin(), dz.end(), 0.0f);
        return 0.0f;
    }
    const auto m = std::int64_t(logits.size());
    float top = -std::numeric_limits<float>::infinity();
    for (const float z : logits)
        top = std::max(top, z);
    float total = 0.0f;
    for (int r = 0; r < rows; ++r) {
        float band = 0.0f;
        for (std::int64_t k = blockBegin(m, rows, r); k < blockBegin(m, rows, r + 1); ++k)
            band += std::exp(logits[std::size_t(k)] - top);
        total = r == 0 ? band : total + band;
    }
    for (std::size_t k = 0; k < logits.size(); ++k) {
        const float p = std::exp(logits[k] - top) / total;
        dz[k] = round((p - (std::int32_t(k) == label ? 1.0f : 0.0f)) * gradientScale);
    }
    return (std::log(total) + top) - logits[std::size_t(label)];
}

void layerNormForward(std::span<const float> x, std::span<const float> weight, std::span<const float> bias,
    float epsilon, Rounding round, std::span<float> out)
{
    const auto [mean, inv] = normStatistics(x, epsilon);
    for (std::size_t i = 0; i < x.size(); ++i) {
        const float scaled = (x[i] - mean) * inv * weight[i];
        out[i] = round(bias.empty() ? scaled : scaled + bias[i]);
    }
}

void layerNormBackward(std::span<const float> x, std::span<const float> weight, std::span<const float> dy,
    std::span<const float> carry, float epsilon, Rounding round, std::span<float> dx, std::span<float> weightTerms,
    std::span<float> biasTerms)
{
    const auto n = float(x.size());
    const auto [mean, inv] = normStatistics(x, epsilon);
    float sg = 0.0f;
    float sgx = 0.0f;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const float g = dy[i] * weight[i];
        sg += g;
        sgx += g * ((x[i] - mean) * inv);
    }
    const float meanG = sg / n;
    const float meanGx = sgx / n;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const float hat = (x[i] - mean) * inv;
        const float own = round(inv * ((dy[i] * weight[i] - meanG) - hat * meanGx));
        dx[i] = carry.empty() ? own : round(carry[i] + own);
        if (!weightTerms.empty()) {
            weightTerms[i] = round(dy[i] * hat);
            biasTerms[i] = dy[i];
        }
    }
}

void attentionForwardBlock(AttentionBlock queries, AttentionBlock keys, std::span<const float> values,
    std::int64_t sequence, std::int64_t headDim, std::span<float> max, std::span<float> sum, std::span<float> acc)
{
    const auto hd = std::size_t(headDim);
    const float scale = headScale(headDim);
    std::vector<float> scores(std::size_t(keys.tokens));
    for (std::int64_t t = 0; t < queries.tokens; ++t) {
        const std::span<const float> q = queries.rows.subspan(std::size_t(t) * hd, hd);
        float top = max[std::size_t(t)];
        bool any = false;
        for (std::int64_t j = 0; j < keys.tokens; ++j) {
            if (!attends(queries.first + t, keys.first + j, sequence))
                continue;
            scores[std::size_t(j)] = score(q, keys.rows.subspan(std::size_t(j) * hd, hd), scale);
            top = std::max(top, scores[std::size_t(j)]);
            any = true;
        }
        if (!any)
            continue;
        const float alpha = std::exp(max[std::size_t(t)] - top);
        float total = sum[std::size_t(t)] * alpha;
        const std::span<float> row = acc.subspan(std::size_t(t) * hd, hd);
        for (float& value : row)
            value = value * alpha;
        for (std::int64_t j = 0; j < keys.tokens; ++j) {
            if (!attends(queries.first + t, keys.first + j, sequence))
                continue;
            const float e = std::exp(scores[std::size_t(j)] - top);
            total += e;
            for (std::size_t d = 0; d < hd; ++d)
                row[d] += e * values[std::size_t(j) * hd + d];
        }
        sum[std::size_t(t)] = total;
        max[std::size_t(t)] = top;
    }
}

void attentionFinish(std::span<const float> max, std::span<const float> sum, std::span<const float> acc,
    std::int64_t headDim, Rounding round, std::span<float> out, std::span<float> lse)
{
    const auto hd = std::size_t(headDim);
    for (std::size_t t = 0; t < max.size(); ++t) {
        for (std::size_t d = 0; d < hd; ++d)
            out[t * hd + d] = round(acc[t * hd + d] / sum[t]);
        lse[t] = max[t] + std::log(sum[t]);
    }
}

void attentionDelta(
    std::span<const float> dOut, std::span<const float> out, std::int64_t headDim, std::span<float> delta)
{
    const auto hd = std::size_t(headDim);
    for (std::size_t t = 0; t < delta.size(); ++t)
        delta[t] = dot(dOut.subspan(t * hd, hd), out.subspan(t * hd, hd));
}

void attentionQueryGradBlock(AttentionBlock queries, std::span<const float> dOut, std::span<const float> lse,
    std::span<const float> delta, AttentionBlock keys, std::span<const float> values, std::int64_t sequence,
    std::int64_t headDim, std::span<float> dq)
{
    const auto hd = std::size_t(headDim);
    const float scale = headScale(headDim);
    for (std::int64_t t = 0; t < queries.tokens; ++t) {
        const std::span<const float> q = queries.rows.subspan(std::size_t(t) * hd, hd);
        const std::span<const float> g = dOut.subspan(std::size_t(t) * hd, hd);
        for (std::int64_t j = 0; j < keys.tokens; ++j) {
            if (!attends(queries.first + t, keys.first + j, sequence))
                continue;
            const std::span<const float> k = keys.rows.subspan(std::size_t(j) * hd, hd);
            const float p = std::exp(score(q, k, scale) - lse[std::size_t(t)]);
            const float ds = p * (dot(g, values.subspan(std::size_t(j) * hd, hd)) - delta[std::size_t(t)]);
            for (std::size_t d = 0; d < hd; ++d)
                dq[std::size_t(t) * hd + d] += ds * k[d];
        }
    }
}

void attentionKeyGradBlock(AttentionBlock keys, std::span<const float> values, AttentionBlock queries,
    std::span<const float> dOut, std::span<const float> lse, std::span<const float> delta, std::int64_t sequence,
    std::int64_t headDim, std::span<float> dk, std::span<float> dv)
{
    const auto hd = std::size_t(headDim);
    const float scale = headScale(headDim);
    for (std::int64_t j = 0; j < keys.tokens; ++j) {
        const std::span<const float> k = keys.rows.subspan(std::size_t(j) * hd, hd);
        const std::span<const float> v = values.subspan(std::size_t(j) * hd, hd);
        for (std::int64_t t = 0; t < queries.tokens; ++t) {
            if (!attends(queries.first + t, keys.first + j, sequence))
                continue;
            const std::span<const float> q = queries.rows.subspan(std::size_t(t) * hd, hd);
            const std::span<const float> g = dOut.subspan(std::size_t(t) * hd, hd);
            const float p = std::exp(score(q, k, scale) - lse[std::size_t(t)]);
            const float ds = p * (dot(g, v) - delta[std::size_t(t)]);
            for (std::size_t d = 0; d < hd; ++d) {
                dk[std::size_t(j) * hd + d] += ds * q[d];
                dv[std::size_t(j) * hd + d] += p * g[d];
            }
        }
    }
}

float softmaxCrossEntropy(
    std::span<const float> logits, std::int32_t label, float gradientScale, Rounding round, std::span<float> dz)
{
    if (label < 0) {
        std::fill(dz.begin(), dz.end(), 0.0f);
        return 0.0f;
    }
    float m = logits[0];
    for (const float z : logits)
        m = std::max(m, z);
    float l = 0.0f;
    for (const float z : logits)
        l += std::exp(z - m);
    for (std::size_t k = 0; k < logits.size(); ++k) {
        const float p = std::exp(logits[k] - m) / l;
        dz[k] = round((p - (std::int32_t(k) == label ? 1.0f : 0.0f)) * gradientScale);
    }
    return (std::log(l) + m) - logits[std::size_t(label)];
}

} // namespace waferscope::core::cyclelevel
