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

// One tensor of one layer and expert: the hot path of DecoderWeights, a few integer operations
// per value and nothing stored. Value (row, col) is S(offset + scale * u), u uniform in [-1, 1)
// on a 2^-23 grid drawn from a splitmix64 mix of the tensor's key and (row, col).
class WeightTensor {
public:
    WeightTensor(std::uint64_t key, float offset, float scale, std::int64_t rows, std::int64_t cols, Storage storage)
        : m_key(key)
        , m_offset(offset)
        , m_scale(scale)
        , m_rows(rows)
        , m_cols(cols)
        , m_storage(storage)
    {
    }

    // A tensor the shape does not have.
    static WeightTensor absent(Storage storage) { return WeightTensor(0, 0.0f, 0.0f, 0, 0, storage); }

    std::int64_t rows() const { return m_rows; }
    std::int64_t cols() const { return m_cols; }
    // False for a tensor the shape does not have (a bias it goes without): it reads as zeros.
    bool present() const { return m_rows > 0; }

    float at(std::int64_t row, std::int64_t col) const
    {
        if (!present())
            return 0.0f;
        return m_storage == Storage::Fp16 ? draw<Storage::Fp16>(row, col) : draw<Storage::Bf16>(row, col);
    }

    // Row `row`: cols() values.
    void row(std::int64_t row, std::span<float> out) const
    {
        if (!present()) {
            std::fill(out.begin(), out.end(), 0.0f);
        } else if (m_storage == Storage::Fp16) {
            for (std::int64_t col = 0; col < m_cols; ++col)
                out[std::size_t(col)] = draw<Storage::Fp16>(row, col);
        } else {
            for (std::int64_t col = 0; col < m_cols; ++col)
                out[std::size_t(col)] = draw<Storage::Bf16>(row, col);
        }
    }

    static constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;
    // The splitmix64 finaliser: a bijection of 64-bit words whose outputs pass BigCrush for
    // consecutive inputs.
    static std::uint64_t mix(std::uint64_t z)
    {
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }

private:
    template <Storage storage>
    float draw(std::int64_t row, std::int64_t col) const
    {
        const std::uint64_t index = (std::uint64_t(row) << 32) | std::uint64_t(col);
        const std::uint64_t bits = mix(m_key + (index + 1) * kGolden);
        const float uniform = float(std::int32_t(bits >> 40)) * 0x1p-23f - 1.0f; // exact: 24 bits
        return roundToStorage(m_offset + m_scale * uniform, storage);
    }

    std::uint64_t m_key; // from the seed, tensor, layer and expert
    float m_offset; // 1 for norm weights, else 0
    float m_scale; // sqrt(3 / inputs) for matrices, 1 for embeddings, 0.1 for vectors
    std::int64_t m_rows; // 0: absent
    std::int64_t m_cols;
    Storage m_storage;
};

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
