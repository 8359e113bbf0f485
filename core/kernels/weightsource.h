#pragma once

// Where a kernel's weights come from. A WeightTensor is generated where it is read, from (seed,
// tensor, index): nothing is stored until a kernel loads its share into SRAM, so a host holds no
// copy of a model's weights (a real-size run's memory relies on it).

#include "core/common/names.h"
#include "core/fabric/half.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace waferscope::core {

// The 16-bit format activations and weights are stored in between operations; arithmetic is
// in float (the PE's FP16 multiply with FP32 accumulation).
enum class Storage : std::uint8_t { Fp16, Bf16 };

// Rounds to the nearest value of `storage` (ties to even), as a float. Fp16 overflows to
// infinity; a NaN stays a NaN.
inline float roundToStorage(float value, Storage storage)
{
    return storage == Storage::Fp16 ? fabric::roundToHalf(value) : fabric::roundToBfloat16(value);
}

template <>
std::span<const EnumName<Storage>> nameTable<Storage>();
const char* toString(Storage storage);

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
    // Values held rather than drawn: rows x cols of a row-major array whose rows are `stride`
    // apart (the leading cols of each), already rounded to `storage`; training's weights, which
    // its optimizer changes. The array is shared, never copied.
    static WeightTensor stored(std::shared_ptr<const std::vector<float>> values, std::int64_t rows, std::int64_t cols,
        std::int64_t stride, Storage storage)
    {
        WeightTensor tensor(0, 0.0f, 0.0f, rows, cols, storage);
        tensor.m_values = std::move(values);
        tensor.m_stride = stride;
        return tensor;
    }
    // The same tensor under an unstructured mask, as a sparse model's weights: each value is zero
    // with probability `share` (a hash of its (row, col) of its own), the others unchanged.
    WeightTensor sparse(double share) const
    {
        WeightTensor masked = *this;
        const double clamped = std::clamp(share, 0.0, 1.0);
        masked.m_zeroBelow = clamped >= 1.0 ? ~std::uint64_t(0) : std::uint64_t(clamped * 0x1p64);
        return masked;
    }

    std::int64_t rows() const { return m_rows; }
    std::int64_t cols() const { return m_cols; }
    // False for a tensor the shape does not have (a bias it goes without): it reads as zeros.
    bool present() const { return m_rows > 0; }

    float at(std::int64_t row, std::int64_t col) const
    {
        if (!present())
            return 0.0f;
        if (m_values)
            return (*m_values)[std::size_t(row * m_stride + col)];
        return m_storage == Storage::Fp16 ? draw<Storage::Fp16>(row, col) : draw<Storage::Bf16>(row, col);
    }

    // Row `row`: cols() values.
    void row(std::int64_t row, std::span<float> out) const
    {
        if (!present()) {
            std::fill(out.begin(), out.end(), 0.0f);
        } else if (m_values) {
            std::copy_n(m_values->begin() + std::ptrdiff_t(row * m_stride), m_cols, out.begin());
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
        if (m_zeroBelow != 0 && mix(~m_key + (index + 1) * kGolden) < m_zeroBelow)
            return 0.0f;
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
    std::uint64_t m_zeroBelow = 0; // sparse(): a value whose mask hash is below it is zero
    std::shared_ptr<const std::vector<float>> m_values; // stored(): the values, else drawn
    std::int64_t m_stride = 0;
};

} // namespace waferscope::core
