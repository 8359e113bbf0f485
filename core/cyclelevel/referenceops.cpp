#include "core/cyclelevel/referenceops.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>

namespace waferscope::core::cyclelevel {

float dot(std::span<const float> a, std::span<const float> b)
{
    assert(a.size() == b.size());
    float sum = 0.0f;
    for (std::size_t i = 0; i < a.size(); ++i)
        sum += a[i] * b[i];
    return sum;
}

void layerNorm(std::span<const float> x, std::span<const float> weight, std::span<const float> bias, float epsilon,
    Storage storage, std::span<float> out)
{
    const float count = float(x.size());
    float sum = 0.0f;
    for (const float value : x)
        sum += value;
    const float mean = sum / count;
    float squares = 0.0f;
    for (const float value : x) {
        const float centred = value - mean;
        squares += centred * centred;
    }
    const float inverse = 1.0f / std::sqrt(squares / count + epsilon);
    for (std::size_t i = 0; i < x.size(); ++i) {
        const float scaled = (x[i] - mean) * inverse * weight[i];
        out[i] = roundToStorage(bias.empty() ? scaled : scaled + bias[i], storage);
    }
}

void rmsNorm(
    std::span<const float> x, std::span<const float> weight, float epsilon, Storage storage, std::span<float> out)
{
    float squares = 0.0f;
    for (const float value : x)
        squares += value * value;
    const float inverse = 1.0f / std::sqrt(squares / float(x.size()) + epsilon);
    for (std::size_t i = 0; i < x.size(); ++i)
        out[i] = roundToStorage(x[i] * inverse * weight[i], storage);
}

void norm(const DecoderShape& shape, const WeightTensor& weight, const WeightTensor& bias, std::span<const float> x,
    std::span<float> out)
{
    std::vector<float> weights(x.size());
    weight.row(0, weights);
    if (shape.norm == DecoderShape::Norm::RmsNorm) {
        rmsNorm(x, weights, shape.normEpsilon, shape.storage, out);
        return;
    }
    std::vector<float> biases(bias.present() ? x.size() : 0);
    bias.row(0, biases);
    layerNorm(x, weights, biases, shape.normEpsilon, shape.storage, out);
}

float linearOutput(
    std::span<const float> weightRow, std::span<const float> x, bool hasBias, float bias, Storage storage)
{
    const float sum = dot(weightRow, x);
    return roundToStorage(hasBias ? sum + bias : sum, storage);
}

void linear(const WeightTensor& weight, const WeightTensor& bias, std::span<const float> x, Storage storage,
    std::span<float> out)
{
    std::vector<float> row(std::size_t(weight.cols()));
    for (std::int64_t i = 0; i < weight.rows(); ++i) {
        weight.row(i, row);
        out[std::size_t(i)] = linearOutput(row, x, bias.present(), bias.at(0, i), storage);
    }
}

void logits(const WeightTensor& weight, const WeightTensor& bias, std::span<const float> x, std::span<float> out)
{
    std::vector<float> row(std::size_t(weight.cols()));
    for (std::int64_t i = 0; i < weight.rows(); ++i) {
        weight.row(i, row);
        const float sum = dot(row, x);
        out[std::size_t(i)] = bias.present() ? sum + bias.at(0, i) : sum;
    }
}

void rotary(std::span<float> vector, std::int64_t headDim, std::int64_t position, double theta, Storage storage)
{
    const std::size_t half = std::size_t(headDim / 2);
    std::vector<float> cosines(half);
    std::vector<float> sines(half);
    for (std::size_t i = 0; i < half; ++i) {
        const double angle = double(position) * std::pow(theta, -2.0 * double(i) / double(headDim));
        cosines[i] = float(std::cos(angle));
        sines[i] = float(std::sin(angle));
    }
    for (std::size_t head = 0; head + std::size_t(headDim) <= vector.size(); head += std::size_t(headDim)) {
        for (std::size_t i = 0; i < half; ++i) {
            const float first = vector[head + i];
            const float second = vector[head + half + i];
            vector[head + i] = roundToStorage(first * cosines[i] - second * sines[i], storage);
            vector[head + half + i] = roundToStorage(second * cosines[i] + first * sines[i], storage);
        }
    }
}

float alibiSlope(std::int64_t head, std::int64_t heads)
{
    std::int64_t powerOfTwo = 1;
    while (powerOfTwo * 2 <= heads)
        powerOfTwo *= 2;
    if (head < powerOfTwo)
        return float(std::pow(2.0, -8.0 * double(head + 1) / double(powerOfTwo)));
    const std::int64_t extra = head - powerOfTwo;
    return float(std::pow(2.0, -8.0 * double(2 * extra + 1) / double(2 * powerOfTwo)));
}

void attention(const DecoderShape& shape, std::span<const float> query, const KvView& cache, std::int64_t position,
    std::span<float> out)
{
    const std::size_t headDim = std::size_t(shape.headDim);
    const std::int64_t group = shape.heads / shape.kvHeads;
    const float scale = 1.0f / std::sqrt(float(shape.headDim));
    const bool alibi = shape.positions == DecoderShape::Positions::Alibi;
    std::vector<float> scores(std::size_t(position + 1));
    for (std::int64_t head = 0; head < shape.heads; ++head) {
        const std::span<const float> q = query.subspan(std::size_t(head) * headDim, headDim);
        const std::size_t kvOffset = std::size_t(head / group) * headDim;
        const float slope = alibi ? alibiSlope(head, shape.heads) : 0.0f;
        for (std::int64_t j = 0; j <= position; ++j) {
            const std::span<const float> key = cache.keys.subspan(std::size_t(j * cache.width) + kvOffset, headDim);
            const float score = dot(q, key) * scale;
            scores[std::size_t(j)] = alibi ? score + slope * float(j - position) : score;
        }
        const float top = *std::max_element(scores.begin(), scores.end());
        float total = 0.0f;
        for (float& score : scores) {
            score = std::exp(score - top);
            total += score;
        }
        for (std::size_t i = 0; i < headDim; ++i) {
            float sum = 0.0f;
            for (std::int64_t j = 0; j <= position; ++j)
                sum += scores[std::size_t(j)] * cache.values[std::size_t(j * cache.width) + kvOffset + i];
            out[std::size_t(head) * headDim + i] = roundToStorage(sum / total, shape.storage);
        }
    }
}

float gelu(float x)
{
    constexpr float kSqrtTwoOverPi = 0.7978845608028654f;
    return 0.5f * x * (1.0f + std::tanh(kSqrtTwoOverPi * (x + 0.044715f * x * x * x)));
}

float silu(float x)
{
    return x / (1.0f + std::exp(-x));
}

float relu(float x)
{
    return x > 0.0f ? x : 0.0f;
}

float ffnHidden(DecoderShape::Activation activation, float up, float gate, Storage storage)
{
    switch (activation) {
    case DecoderShape::Activation::Gelu:
        return roundToStorage(gelu(up), storage);
    case DecoderShape::Activation::Relu:
        return roundToStorage(relu(up), storage);
    case DecoderShape::Activation::Silu:
        return roundToStorage(silu(up), storage);
    case DecoderShape::Activation::SwiGlu:
        return roundToStorage(silu(gate) * up, storage);
    case DecoderShape::Activation::GeGlu:
        return roundToStorage(gelu(gate) * up, storage);
    }
    return 0.0f;
}

Routing route(std::span<const float> routerLogits, std::int64_t topK)
{
    const float top = *std::max_element(routerLogits.begin(), routerLogits.end());
    std::vector<float> probabilities(routerLogits.size());
    float total = 0.0f;
    for (std::size_t e = 0; e < routerLogits.size(); ++e) {
        probabilities[e] = std::exp(routerLogits[e] - top);
        total += probabilities[e];
    }
    for (float& probability : probabilities)
        probability = probability / total;

    std::vector<std::int64_t> order(routerLogits.size());
    std::iota(order.begin(), order.end(), 0);
    const std::size_t chosen = std::min(std::size_t(topK), order.size());
    std::partial_sort(
        order.begin(), order.begin() + std::ptrdiff_t(chosen), order.end(), [&](std::int64_t a, std::int64_t b) {
            const float pa = probabilities[std::size_t(a)];
            const float pb = probabilities[std::size_t(b)];
            return pa > pb || (pa == pb && a < b);
        });
    Routing routing;
    routing.experts.assign(order.begin(), order.begin() + std::ptrdiff_t(chosen));
    std::sort(routing.experts.begin(), routing.experts.end());
    float selected = 0.0f;
    for (const std::int64_t expert : routing.experts)
        selected += probabilities[std::size_t(expert)];
    for (const std::int64_t expert : routing.experts)
        routing.weights.push_back(probabilities[std::size_t(expert)] / selected);
    return routing;
}

std::int64_t argmax(std::span<const float> values)
{
    return std::max_element(values.begin(), values.end()) - values.begin(); // the first of equal maxima
}

double topTwoGap(std::span<const float> values)
{
    if (values.size() < 2)
        return 0.0;
    const std::size_t best = std::size_t(argmax(values));
    float second = -std::numeric_limits<float>::infinity();
    for (std::size_t i = 0; i < values.size(); ++i)
        if (i != best)
            second = std::max(second, values[i]);
    return double(values[best]) - double(second);
}

} // namespace waferscope::core::cyclelevel
