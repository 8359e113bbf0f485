#pragma once

#include "core/cyclelevel/decoder.h"

#include <algorithm>
#include <cstdint>
#include <span>

namespace waferscope::core::cyclelevel {

// The parameter tensors of a DecoderShape. Matrices are rows = outputs x cols = inputs (Wq:
// heads*headDim x hidden, Router: experts x hidden, WDown: hidden x ffn); embeddings have a row
// per token or position and hidden columns; vectors (norms, biases) are one row.
enum class Tensor : std::uint8_t {
    TokenEmbedding,
    PositionEmbedding,
    Norm1Weight,
    Norm1Bias,
    Wq,
    Bq,
    Wk,
    Bk,
    Wv,
    Bv,
    Wo,
    Bo,
    Norm3Weight,
    Norm3Bias,
    WUp,
    BUp,
    WGate,
    BGate,
    WDown,
    BDown,
    Router,
    FinalNormWeight,
    FinalNormBias,
    LmHead,
    LmHeadBias
};

const char* toString(Tensor tensor);

// Seeded weights of a decoder: a pure function of (seed, tensor, layer, expert, row, col), never
// stored. Matrices have unit-variance outputs for unit-variance inputs (scale sqrt(3 / inputs)),
// embeddings are uniform in [-1, 1), norm weights 1 + 0.1u, biases 0.1u. With a tied head,
// LmHead(v, h) == TokenEmbedding(v, h). Immutable, so any thread may read it.
class DecoderWeights {
public:
    DecoderWeights(const DecoderShape& shape, std::uint64_t seed);

    const DecoderShape& shape() const { return m_shape; }
    std::uint64_t seed() const { return m_seed; }

    // `expert` selects an expert's WUp/WGate/WDown and their biases (0 for a dense FFN and for
    // every other tensor); `layer` is 0 for the tensors outside the blocks.
    WeightTensor tensor(Tensor which, int layer, int expert) const;
    // The value already rounded to the shape's storage; 0 for a tensor the shape does not have.
    float value(Tensor which, int layer, int expert, std::int64_t row, std::int64_t col) const
    {
        return tensor(which, layer, expert).at(row, col);
    }

private:
    DecoderShape m_shape;
    std::uint64_t m_seed;
};

} // namespace waferscope::core::cyclelevel
