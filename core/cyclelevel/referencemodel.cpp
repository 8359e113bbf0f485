#include "core/cyclelevel/referencemodel.h"

#include "core/cyclelevel/kernels/batchedlinear.h"
#include "core/cyclelevel/referenceops.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include <tbb/parallel_for.h>

namespace waferscope::core::cyclelevel {

namespace {

// x = S(x + y), element by element.
void addResidual(TokenMatrix& x, const TokenMatrix& y, Storage storage)
{
    for (std::size_t i = 0; i < x.values.size(); ++i)
        x.values[i] = roundToStorage(x.values[i] + y.values[i], storage);
}

} // namespace

ReferenceModel::ReferenceModel(const DecoderWeights& weights)
    : m_weights(weights)
    , m_shape(weights.shape())
    , m_keys(std::size_t(m_shape.layers))
    , m_values(std::size_t(m_shape.layers))
{
}

std::vector<float> ReferenceModel::forward(std::span<const std::int32_t> tokens)
{
    assert(!tokens.empty() && m_length + std::int64_t(tokens.size()) <= m_shape.maxPositions);
    TokenMatrix x = embed(tokens);
    for (int layer = 0; layer < int(m_shape.layers); ++layer)
        block(layer, x);
    m_length += x.tokens;
    return lastTokenLogits(x);
}

void ReferenceModel::block(int layer, TokenMatrix& x)
{
    attentionBlock(layer, x);
    feedForwardBlock(layer, x);
}

TokenMatrix ReferenceModel::embed(std::span<const std::int32_t> tokens) const
{
    TokenMatrix x(std::int64_t(tokens.size()), m_shape.hidden);
    const WeightTensor tokenTable = tensor(Tensor::TokenEmbedding, 0);
    const WeightTensor positionTable = tensor(Tensor::PositionEmbedding, 0);
    std::vector<float> position(std::size_t(m_shape.hidden));
    for (std::int64_t t = 0; t < x.tokens; ++t) {
        const std::span<float> row = x.row(t);
        tokenTable.row(tokens[std::size_t(t)], row);
        if (!positionTable.present())
            continue;
        positionTable.row(m_length + t, position);
        for (std::size_t i = 0; i < row.size(); ++i)
            row[i] = roundToStorage(row[i] + position[i], m_shape.storage);
    }
    return x;
}

void ReferenceModel::attentionBlock(int layer, TokenMatrix& x)
{
    const Storage storage = m_shape.storage;
    TokenMatrix normed(x.tokens, x.width);
    const WeightTensor normWeight = tensor(Tensor::Norm1Weight, layer);
    const WeightTensor normBias = tensor(Tensor::Norm1Bias, layer);
    for (std::int64_t t = 0; t < x.tokens; ++t)
        norm(m_shape, normWeight, normBias, x.row(t), normed.row(t));

    TokenMatrix queries;
    TokenMatrix keys;
    TokenMatrix values;
    linearOverTokens(tensor(Tensor::Wq, layer), tensor(Tensor::Bq, layer), normed, storage, queries);
    linearOverTokens(tensor(Tensor::Wk, layer), tensor(Tensor::Bk, layer), normed, storage, keys);
    linearOverTokens(tensor(Tensor::Wv, layer), tensor(Tensor::Bv, layer), normed, storage, values);
    if (m_shape.positions == DecoderShape::Positions::Rotary) {
        for (std::int64_t t = 0; t < x.tokens; ++t) {
            rotary(queries.row(t), m_shape.headDim, m_length + t, m_shape.ropeTheta, storage);
            rotary(keys.row(t), m_shape.headDim, m_length + t, m_shape.ropeTheta, storage);
        }
    }
    std::vector<float>& keyCache = m_keys[std::size_t(layer)];
    std::vector<float>& valueCache = m_values[std::size_t(layer)];
    keyCache.insert(keyCache.end(), keys.values.begin(), keys.values.end());
    valueCache.insert(valueCache.end(), values.values.begin(), values.values.end());

    TokenMatrix attended(x.tokens, m_shape.queryWidth());
    const KvView cache { keyCache, valueCache, m_shape.kvWidth() };
    tbb::parallel_for(std::int64_t(0), x.tokens,
        [&](std::int64_t t) { attention(m_shape, queries.row(t), cache, m_length + t, attended.row(t)); });
    TokenMatrix projected;
    linearOverTokens(tensor(Tensor::Wo, layer), tensor(Tensor::Bo, layer), attended, storage, projected);
    addResidual(x, projected, storage);
}

void ReferenceModel::feedForwardBlock(int layer, TokenMatrix& x) const
{
    TokenMatrix normed(x.tokens, x.width);
    const WeightTensor normWeight = tensor(Tensor::Norm3Weight, layer);
    const WeightTensor normBias = tensor(Tensor::Norm3Bias, layer);
    for (std::int64_t t = 0; t < x.tokens; ++t)
        norm(m_shape, normWeight, normBias, x.row(t), normed.row(t));
    TokenMatrix out;
    if (m_shape.experts > 0)
        mixtureOfExperts(layer, normed, out);
    else
        expertFeedForward(layer, 0, normed, out);
    addResidual(x, out, m_shape.storage);
}

void ReferenceModel::expertFeedForward(int layer, int expert, const TokenMatrix& input, TokenMatrix& out) const
{
    const Storage storage = m_shape.storage;
    TokenMatrix up;
    linearOverTokens(tensor(Tensor::WUp, layer, expert), tensor(Tensor::BUp, layer, expert), input, storage, up);
    TokenMatrix gate;
    if (m_shape.gated())
        linearOverTokens(
            tensor(Tensor::WGate, layer, expert), tensor(Tensor::BGate, layer, expert), input, storage, gate);
    TokenMatrix hidden(up.tokens, up.width);
    for (std::size_t i = 0; i < hidden.values.size(); ++i)
        hidden.values[i]
            = ffnHidden(m_shape.activation, up.values[i], m_shape.gated() ? gate.values[i] : 0.0f, storage);
    linearOverTokens(tensor(Tensor::WDown, layer, expert), tensor(Tensor::BDown, layer, expert), hidden, storage, out);
}

void ReferenceModel::mixtureOfExperts(int layer, const TokenMatrix& input, TokenMatrix& out) const
{
    TokenMatrix routerLogits;
    logitsOverTokens(tensor(Tensor::Router, layer), WeightTensor::absent(m_shape.storage), input, routerLogits);
    std::vector<Routing> routings;
    for (std::int64_t t = 0; t < input.tokens; ++t)
        routings.push_back(route(routerLogits.row(t), m_shape.topK));

    // Experts in index order, each over the tokens routed to it, so that every token's weighted
    // sum runs in expert order.
    TokenMatrix sums(input.tokens, input.width);
    for (int expert = 0; expert < int(m_shape.experts); ++expert) {
        std::vector<std::pair<std::int64_t, float>> routed; // token, weight
        for (std::int64_t t = 0; t < input.tokens; ++t)
            for (std::size_t k = 0; k < routings[std::size_t(t)].experts.size(); ++k)
                if (routings[std::size_t(t)].experts[k] == expert)
                    routed.emplace_back(t, routings[std::size_t(t)].weights[k]);
        if (routed.empty())
            continue;
        TokenMatrix gathered(std::int64_t(routed.size()), input.width);
        for (std::size_t k = 0; k < routed.size(); ++k)
            std::copy_n(input.row(routed[k].first).begin(), input.width, gathered.row(std::int64_t(k)).begin());
        TokenMatrix expertOut;
        expertFeedForward(layer, expert, gathered, expertOut);
        for (std::size_t k = 0; k < routed.size(); ++k) {
            const std::span<float> sum = sums.row(routed[k].first);
            const std::span<const float> y = expertOut.row(std::int64_t(k));
            for (std::size_t i = 0; i < sum.size(); ++i)
                sum[i] += routed[k].second * y[i];
        }
    }
    out = TokenMatrix(input.tokens, input.width);
    for (std::size_t i = 0; i < out.values.size(); ++i)
        out.values[i] = roundToStorage(sums.values[i], m_shape.storage);
}

std::vector<float> ReferenceModel::lastTokenLogits(const TokenMatrix& x) const
{
    TokenMatrix last(1, x.width);
    norm(m_shape, tensor(Tensor::FinalNormWeight, 0), tensor(Tensor::FinalNormBias, 0), x.row(x.tokens - 1),
        last.row(0));
    TokenMatrix logits;
    logitsOverTokens(tensor(Tensor::LmHead, 0), tensor(Tensor::LmHeadBias, 0), last, logits);
    return std::move(logits.values);
}

} // namespace waferscope::core::cyclelevel
