#include "core/cyclelevel/kernels/prefillsteps.h"

#include "core/cyclelevel/decoder.h"
#include "core/cyclelevel/kernels/computesteps.h"
#include "core/cyclelevel/referenceops.h"
#include "core/fabric/half.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace waferscope::core::cyclelevel::steps {

using fabric::PeState;
using fabric::Step;

namespace {

float decode16(std::uint16_t bits, const Step& step)
{
    return step.color & kBf16 ? fabric::bfloat16ToFloat(bits) : fabric::halfToFloat(bits);
}

// Keys of row i a tile lets through: all, or 0..i on the diagonal.
std::uint32_t visible(const Step& step, std::uint32_t row, std::uint32_t cols)
{
    return step.color & kDiagonal ? std::min(row + 1, cols) : cols;
}

} // namespace

std::uint32_t tileProductCycles(std::uint32_t rows, std::uint32_t cols, std::uint32_t inner, int simdWidth)
{
    const std::uint64_t alongCols = std::uint64_t(rows) * elementwiseCycles(cols, 1, simdWidth);
    const std::uint64_t alongRows = std::uint64_t(cols) * elementwiseCycles(rows, 1, simdWidth);
    return std::uint32_t(std::max<std::uint64_t>(1, std::uint64_t(inner) * std::min(alongCols, alongRows)));
}

void tileScores(PeState& pe, const Step& step)
{
    const TileDims dims = TileDims::unpack(step.d);
    const float* q = pe.f32.data() + step.a;
    const float* k = pe.f32.data() + step.b;
    float* s = pe.f32.data() + step.c;
    for (std::uint32_t i = 0; i < dims.rows; ++i) {
        for (std::uint32_t j = 0; j < dims.cols; ++j) {
            float sum = step.color & kFirstTile ? 0.0f : s[i * dims.cols + j];
            for (std::uint32_t l = 0; l < dims.inner; ++l)
                sum += q[i * dims.inner + l] * k[j * dims.inner + l];
            s[i * dims.cols + j] = sum;
        }
    }
    pe.fmacs += std::uint64_t(dims.rows) * dims.cols * dims.inner;
}

void tileRowMax(PeState& pe, const Step& step)
{
    const TileDims dims = TileDims::unpack(step.d);
    float* s = pe.f32.data() + step.a;
    for (std::uint32_t i = 0; i < dims.rows; ++i) {
        float top = -std::numeric_limits<float>::infinity();
        for (std::uint32_t j = 0; j < visible(step, i, dims.cols); ++j) {
            float& score = s[i * dims.cols + j];
            score = score * step.scalar;
            top = std::max(top, score);
        }
        pe.f32[step.c + i] = step.color & kAccumulate ? std::max(pe.f32[step.c + i], top) : top;
    }
}

void tileExponentials(PeState& pe, const Step& step)
{
    const TileDims dims = TileDims::unpack(step.d);
    float* s = pe.f32.data() + step.a;
    for (std::uint32_t i = 0; i < dims.rows; ++i) {
        const float top = pe.f32[step.b + i];
        const std::uint32_t seen = visible(step, i, dims.cols);
        float total = step.color & kAccumulate ? pe.f32[step.c + i] : 0.0f;
        for (std::uint32_t j = 0; j < dims.cols; ++j) {
            float& score = s[i * dims.cols + j];
            score = j < seen ? std::exp(score - top) : 0.0f;
            total += j < seen ? score : 0.0f;
        }
        pe.f32[step.c + i] = total;
    }
}

void tileWeightedValues(PeState& pe, const Step& step)
{
    const TileDims dims = TileDims::unpack(step.d);
    const float* e = pe.f32.data() + step.a;
    const float* v = pe.f32.data() + step.b;
    float* out = pe.f32.data() + step.c;
    for (std::uint32_t i = 0; i < dims.rows; ++i) {
        const std::uint32_t seen = visible(step, i, dims.inner);
        for (std::uint32_t j = 0; j < dims.cols; ++j) {
            float sum = step.color & kFirstTile ? 0.0f : out[i * dims.cols + j];
            for (std::uint32_t k = 0; k < seen; ++k)
                sum += e[i * dims.inner + k] * v[k * dims.cols + j];
            out[i * dims.cols + j] = sum;
        }
    }
    pe.fmacs += std::uint64_t(dims.rows) * dims.cols * dims.inner;
}

void tileNormalise(PeState& pe, const Step& step)
{
    const TileDims dims = TileDims::unpack(step.d);
    const Storage storage = step.color & kBf16 ? Storage::Bf16 : Storage::Fp16;
    float* out = pe.f32.data() + step.a;
    for (std::uint32_t i = 0; i < dims.rows; ++i)
        for (std::uint32_t j = 0; j < dims.cols; ++j)
            out[i * dims.cols + j] = roundToStorage(out[i * dims.cols + j] / pe.f32[step.b + i], storage);
}

void tileRowSums(PeState& pe, const Step& step)
{
    const TileDims dims = TileDims::unpack(step.d);
    const float* x = pe.f32.data() + step.a;
    for (std::uint32_t i = 0; i < dims.rows; ++i) {
        const float centre = step.color & kCentred ? pe.f32[step.b + i] : 0.0f;
        float sum = step.color & kFirstTile ? 0.0f : pe.f32[step.c + i];
        for (std::uint32_t j = 0; j < dims.cols; ++j) {
            const float value = x[i * dims.cols + j];
            if (step.color & kCentred) {
                const float centred = value - centre;
                sum += centred * centred;
            } else {
                sum += step.color & kSquares ? value * value : value;
            }
        }
        pe.f32[step.c + i] = sum;
    }
}

void tileNormFigures(PeState& pe, const Step& step)
{
    const float epsilon = std::bit_cast<float>(step.b);
    for (std::uint32_t i = 0; i < step.d; ++i)
        pe.f32[step.c + i] = step.color & kSquares ? 1.0f / std::sqrt(pe.f32[step.a + i] / step.scalar + epsilon)
                                                   : pe.f32[step.a + i] / step.scalar;
}

void tileCentreScale(PeState& pe, const Step& step)
{
    const TileDims dims = TileDims::unpack(step.d);
    const float* x = pe.f32.data() + step.a;
    float* y = pe.f32.data() + step.c;
    for (std::uint32_t i = 0; i < dims.rows; ++i) {
        const float inverse = pe.f32[step.b + dims.rows + i];
        for (std::uint32_t j = 0; j < dims.cols; ++j)
            y[i * dims.cols + j] = step.color & kSquares ? x[i * dims.cols + j] * inverse
                                                         : (x[i * dims.cols + j] - pe.f32[step.b + i]) * inverse;
    }
}

void tileScaleBiasRound(PeState& pe, const Step& step)
{
    const TileDims dims = TileDims::unpack(step.d);
    const Storage storage = step.color & kBf16 ? Storage::Bf16 : Storage::Fp16;
    float* y = pe.f32.data() + step.a;
    for (std::uint32_t i = 0; i < dims.rows; ++i) {
        for (std::uint32_t j = 0; j < dims.cols; ++j) {
            const float scaled = y[i * dims.cols + j] * decode16(pe.f16[step.b + j], step);
            y[i * dims.cols + j] = roundToStorage(
                step.color & kBias ? scaled + decode16(pe.f16[step.b + dims.cols + j], step) : scaled, storage);
        }
    }
}

void tileRotary(PeState& pe, const Step& step)
{
    const TileDims dims = TileDims::unpack(step.d);
    const Storage storage = step.color & kBf16 ? Storage::Bf16 : Storage::Fp16;
    for (std::uint32_t i = 0; i < dims.rows; ++i)
        cyclelevel::rotary(std::span<float>(pe.f32.data() + step.a + std::size_t(i) * dims.cols, dims.cols),
            std::int64_t(step.b), std::int64_t(step.c) + i, double(step.scalar), storage);
}

void tileLookup(PeState& pe, const Step& step)
{
    const TileDims dims = TileDims::unpack(step.d);
    const auto count = std::uint32_t(step.scalar);
    float* tile = pe.f32.data() + step.a + dims.rows;
    for (std::uint32_t i = 0; i < dims.rows; ++i) {
        const std::uint32_t id = std::bit_cast<std::uint32_t>(pe.f32[step.a + i]);
        if (id < step.c || id - step.c >= count)
            continue;
        for (std::uint32_t j = 0; j < dims.cols; ++j)
            tile[i * dims.cols + j] = decode16(pe.f16[step.b + (id - step.c) * dims.cols + j], step);
    }
}

void tileAddPositions(PeState& pe, const Step& step)
{
    const TileDims dims = TileDims::unpack(step.d);
    const Storage storage = step.color & kBf16 ? Storage::Bf16 : Storage::Fp16;
    float* y = pe.f32.data() + step.a;
    for (std::uint32_t i = 0; i < dims.rows * dims.cols; ++i)
        y[i] = roundToStorage(y[i] + decode16(pe.f16[step.b + i], step), storage);
}

void tileLinear(PeState& pe, const Step& step)
{
    const TileDims dims = TileDims::unpack(step.d);
    const float* x = pe.f32.data() + step.a;
    const std::uint16_t* w = pe.f16.data() + step.b;
    float* y = pe.f32.data() + step.c;
    for (std::uint32_t i = 0; i < dims.rows; ++i) {
        for (std::uint32_t j = 0; j < dims.cols; ++j) {
            float sum = step.color & kFirstTile ? 0.0f : y[i * dims.cols + j];
            for (std::uint32_t l = 0; l < dims.inner; ++l)
                sum += x[i * dims.inner + l] * decode16(w[j * dims.inner + l], step);
            y[i * dims.cols + j] = sum;
        }
    }
    pe.fmacs += std::uint64_t(dims.rows) * dims.cols * dims.inner;
}

void tileBiasRound(PeState& pe, const Step& step)
{
    const TileDims dims = TileDims::unpack(step.d);
    const Storage storage = step.color & kBf16 ? Storage::Bf16 : Storage::Fp16;
    float* y = pe.f32.data() + step.a;
    for (std::uint32_t i = 0; i < dims.rows; ++i) {
        for (std::uint32_t j = 0; j < dims.cols; ++j) {
            const float bias = step.color & kBias ? decode16(pe.f16[step.b + j], step) : 0.0f;
            y[i * dims.cols + j]
                = roundToStorage(step.color & kBias ? y[i * dims.cols + j] + bias : y[i * dims.cols + j], storage);
        }
    }
}

} // namespace waferscope::core::cyclelevel::steps
