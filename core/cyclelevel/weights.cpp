#include "core/cyclelevel/weights.h"

#include <cassert>
#include <cmath>

namespace waferscope::core::cyclelevel {

namespace {

enum class Role { Matrix, Embedding, NormWeight, Bias };

struct Layout {
    Role role = Role::Bias;
    std::int64_t rows = 0; // 0: the shape has no such tensor
    std::int64_t cols = 0;
};

Layout vector(bool present, std::int64_t width, Role role = Role::Bias)
{
    return present ? Layout { role, 1, width } : Layout {};
}

Layout matrix(bool present, std::int64_t outputs, std::int64_t inputs)
{
    return present ? Layout { Role::Matrix, outputs, inputs } : Layout {};
}

Layout layoutOf(const DecoderShape& shape, Tensor tensor)
{
    using T = Tensor;
    const std::int64_t hidden = shape.hidden;
    const bool layerNormBias = shape.norm == DecoderShape::Norm::LayerNorm && shape.normBias;
    switch (tensor) {
    case T::TokenEmbedding:
        return { Role::Embedding, shape.vocab, hidden };
    case T::PositionEmbedding:
        return shape.positions == DecoderShape::Positions::Learned
            ? Layout { Role::Embedding, shape.maxPositions, hidden }
            : Layout {};
    case T::Norm1Weight:
    case T::Norm3Weight:
    case T::FinalNormWeight:
        return vector(true, hidden, Role::NormWeight);
    case T::Norm1Bias:
    case T::Norm3Bias:
    case T::FinalNormBias:
        return vector(layerNormBias, hidden);
    case T::Wq:
        return matrix(true, shape.queryWidth(), hidden);
    case T::Bq:
        return vector(shape.qkvBias, shape.queryWidth());
    case T::Wk:
    case T::Wv:
        return matrix(true, shape.kvWidth(), hidden);
    case T::Bk:
    case T::Bv:
        return vector(shape.qkvBias, shape.kvWidth());
    case T::Wo:
        return matrix(true, hidden, shape.queryWidth());
    case T::Bo:
        return vector(shape.outBias, hidden);
    case T::WUp:
        return matrix(true, shape.ffn, hidden);
    case T::BUp:
        return vector(shape.ffnBias, shape.ffn);
    case T::WGate:
        return matrix(shape.gated(), shape.ffn, hidden);
    case T::BGate:
        return vector(shape.gated() && shape.ffnBias, shape.ffn);
    case T::WDown:
        return matrix(true, hidden, shape.ffn);
    case T::BDown:
        return vector(shape.ffnBias, hidden);
    case T::Router:
        return matrix(shape.experts > 0, shape.experts, hidden);
    case T::LmHead:
        return shape.tiedHead ? Layout { Role::Embedding, shape.vocab, hidden } : matrix(true, shape.vocab, hidden);
    case T::LmHeadBias:
        return vector(shape.lmHeadBias, shape.vocab);
    }
    return {};
}

bool isPerExpert(Tensor tensor)
{
    switch (tensor) {
    case Tensor::WUp:
    case Tensor::BUp:
    case Tensor::WGate:
    case Tensor::BGate:
    case Tensor::WDown:
    case Tensor::BDown:
        return true;
    default:
        return false;
    }
}

bool isInBlock(Tensor tensor)
{
    switch (tensor) {
    case Tensor::TokenEmbedding:
    case Tensor::PositionEmbedding:
    case Tensor::FinalNormWeight:
    case Tensor::FinalNormBias:
    case Tensor::LmHead:
    case Tensor::LmHeadBias:
        return false;
    default:
        return true;
    }
}

} // namespace

const char* toString(Tensor tensor)
{
    static const char* const names[] = { "token_embedding", "position_embedding", "norm1_weight", "norm1_bias", "wq",
        "bq", "wk", "bk", "wv", "bv", "wo", "bo", "norm3_weight", "norm3_bias", "w_up", "b_up", "w_gate", "b_gate",
        "w_down", "b_down", "router", "final_norm_weight", "final_norm_bias", "lm_head", "lm_head_bias" };
    return names[std::size_t(tensor)];
}

DecoderWeights::DecoderWeights(const DecoderShape& shape, std::uint64_t seed)
    : m_shape(shape)
    , m_seed(seed)
{
}

WeightTensor DecoderWeights::tensor(Tensor which, int layer, int expert) const
{
    const Layout layout = layoutOf(m_shape, which);
    if (which == Tensor::LmHead && m_shape.tiedHead)
        which = Tensor::TokenEmbedding; // the same values, by the same key
    if (!isInBlock(which))
        layer = 0;
    assert(layer >= 0 && layer < (1 << 20) && expert >= 0 && expert < (1 << 20));
    if (!isPerExpert(which))
        expert = 0;
    const std::uint64_t id
        = (std::uint64_t(which) << 48) | (std::uint64_t(std::uint32_t(layer)) << 24) | std::uint64_t(expert);
    const std::uint64_t key = WeightTensor::mix(m_seed ^ WeightTensor::mix(id + WeightTensor::kGolden));

    float offset = 0.0f;
    float scale = 0.1f;
    switch (layout.role) {
    case Role::Matrix:
        scale = float(std::sqrt(3.0 / double(layout.cols)));
        break;
    case Role::Embedding:
        scale = 1.0f;
        break;
    case Role::NormWeight:
        offset = 1.0f;
        break;
    case Role::Bias:
        break;
    }
    return WeightTensor(key, offset, scale, layout.rows, layout.cols, m_shape.storage);
}

} // namespace waferscope::core::cyclelevel
