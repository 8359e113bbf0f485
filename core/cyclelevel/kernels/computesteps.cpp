#include "core/cyclelevel/kernels/computesteps.h"

#include "core/cyclelevel/decoder.h"
#include "core/cyclelevel/referenceops.h"
#include "core/fabric/half.h"

#include <bit>
#include <cmath>
#include <limits>

namespace waferscope::core::cyclelevel::steps {

using fabric::PeState;
using fabric::Step;

namespace {

Storage storage(const Step& step)
{
    return step.color & kBf16 ? Storage::Bf16 : Storage::Fp16;
}

float S(float value, const Step& step)
{
    return roundToStorage(value, storage(step));
}

float decode(std::uint16_t bits, const Step& step)
{
    return step.color & kBf16 ? fabric::bfloat16ToFloat(bits) : fabric::halfToFloat(bits);
}

std::uint16_t encode(float value, const Step& step)
{
    return step.color & kBf16 ? fabric::floatToBfloat16(value) : fabric::floatToHalf(value);
}

std::uint32_t bits(const PeState& pe, std::uint32_t offset)
{
    return std::bit_cast<std::uint32_t>(pe.f32[offset]);
}

} // namespace

std::uint32_t elementwiseCycles(std::uint64_t elements, int opsPerElement, int simdWidth)
{
    const std::uint64_t lanes = std::uint64_t(std::max(1, simdWidth));
    return std::uint32_t(std::max<std::uint64_t>(1, (elements * std::uint64_t(opsPerElement) + lanes - 1) / lanes));
}

void zero(PeState& pe, const Step& step)
{
    std::fill_n(pe.f32.begin() + step.a, step.b, 0.0f);
}

void partialSum(PeState& pe, const Step& step)
{
    float sum = 0.0f;
    for (std::uint32_t i = 0; i < step.b; ++i)
        sum += pe.f32[step.a + i];
    pe.f32[step.c] = sum;
}

void partialSquares(PeState& pe, const Step& step)
{
    float sum = 0.0f;
    for (std::uint32_t i = 0; i < step.b; ++i)
        sum += pe.f32[step.a + i] * pe.f32[step.a + i];
    pe.f32[step.c] = sum;
}

void partialCentredSquares(PeState& pe, const Step& step)
{
    const float centre = pe.f32[step.d];
    float sum = 0.0f;
    for (std::uint32_t i = 0; i < step.b; ++i) {
        const float centred = pe.f32[step.a + i] - centre;
        sum += centred * centred;
    }
    pe.f32[step.c] = sum;
}

void mean(PeState& pe, const Step& step)
{
    pe.f32[step.c] = pe.f32[step.a] / step.scalar;
}

void inverseDeviation(PeState& pe, const Step& step)
{
    const float epsilon = std::bit_cast<float>(step.d);
    pe.f32[step.c] = 1.0f / std::sqrt(pe.f32[step.a] / step.scalar + epsilon);
}

void layerNormApply(PeState& pe, const Step& step)
{
    const float centre = pe.f32[step.d];
    const float inverse = pe.f32[step.d + 1];
    for (std::uint32_t i = 0; i < step.b; ++i) {
        const float scaled = (pe.f32[step.a + i] - centre) * inverse * decode(pe.f16[step.c + i], step);
        pe.f32[step.a + i] = S(step.color & kBias ? scaled + decode(pe.f16[step.c + step.b + i], step) : scaled, step);
    }
}

void rmsNormApply(PeState& pe, const Step& step)
{
    const float inverse = pe.f32[step.d];
    for (std::uint32_t i = 0; i < step.b; ++i)
        pe.f32[step.a + i] = S(pe.f32[step.a + i] * inverse * decode(pe.f16[step.c + i], step), step);
}

void biasRound(PeState& pe, const Step& step)
{
    for (std::uint32_t i = 0; i < step.b; ++i) {
        const float sum = pe.f32[step.a + i];
        pe.f32[step.d + i] = S(step.color & kBias ? sum + decode(pe.f16[step.c + i], step) : sum, step);
    }
}

void biasOnly(PeState& pe, const Step& step)
{
    for (std::uint32_t i = 0; i < step.b; ++i) {
        const float sum = pe.f32[step.a + i];
        pe.f32[step.d + i] = step.color & kBias ? sum + decode(pe.f16[step.c + i], step) : sum;
    }
}

void residual(PeState& pe, const Step& step)
{
    for (std::uint32_t i = 0; i < step.b; ++i)
        pe.f32[step.d + i] = S(pe.f32[step.c + i] + pe.f32[step.a + i], step);
}

void activation(PeState& pe, const Step& step)
{
    const auto kind = DecoderShape::Activation(int(step.scalar));
    for (std::uint32_t i = 0; i < step.b; ++i)
        pe.f32[step.a + i] = ffnHidden(kind, pe.f32[step.a + i], 0.0f, storage(step));
}

void gated(PeState& pe, const Step& step)
{
    const auto kind = DecoderShape::Activation(int(step.scalar));
    for (std::uint32_t i = 0; i < step.b; ++i)
        pe.f32[step.d + i] = ffnHidden(kind, pe.f32[step.c + i], pe.f32[step.a + i], storage(step));
}

void rotary(PeState& pe, const Step& step)
{
    cyclelevel::rotary(std::span<float>(pe.f32.data() + step.a, step.b), std::int64_t(step.b), std::int64_t(step.c),
        double(step.scalar), storage(step));
}

void roundInPlace(PeState& pe, const Step& step)
{
    for (std::uint32_t i = 0; i < step.b; ++i)
        pe.f32[step.a + i] = S(pe.f32[step.a + i], step);
}

void appendKv(PeState& pe, const Step& step)
{
    const AttentionLayout layout = AttentionLayout::unpack(step.a, step.b);
    const std::uint32_t keys = step.c + step.d * layout.headDim;
    const std::uint32_t values = step.c + layout.capacity * layout.headDim + step.d * layout.headDim;
    for (std::uint32_t i = 0; i < layout.headDim; ++i) {
        pe.f16[keys + i] = encode(pe.f32[layout.k() + i], step);
        pe.f16[values + i] = encode(pe.f32[layout.v() + i], step);
    }
}

void scores(PeState& pe, const Step& step)
{
    const AttentionLayout layout = AttentionLayout::unpack(step.a, step.b);
    float top = -std::numeric_limits<float>::infinity();
    for (std::uint32_t slot = 0; slot < step.d; ++slot) {
        const std::uint32_t key = step.c + slot * layout.headDim;
        float sum = 0.0f;
        for (std::uint32_t i = 0; i < layout.headDim; ++i)
            sum += pe.f32[layout.q() + i] * decode(pe.f16[key + i], step);
        float score = sum * step.scalar;
        if (step.color & kAlibi) {
            const auto j = std::int64_t(bits(pe, layout.alibi() + 1) + slot * bits(pe, layout.alibi() + 2));
            score = score + pe.f32[layout.alibi()] * float(j - std::int64_t(bits(pe, layout.alibi() + 3)));
        }
        pe.f32[layout.scores() + slot] = score;
        top = std::max(top, score);
    }
    pe.f32[layout.max()] = top;
}

void scoresMax(PeState& pe, const Step& step)
{
    const AttentionLayout layout = AttentionLayout::unpack(step.a, step.b);
    float top = -std::numeric_limits<float>::infinity();
    for (std::uint32_t slot = 0; slot < step.d; ++slot)
        top = std::max(top, pe.f32[layout.scores() + slot]);
    pe.f32[layout.max()] = top;
}

void softmaxPartial(PeState& pe, const Step& step)
{
    const AttentionLayout layout = AttentionLayout::unpack(step.a, step.b);
    const float top = pe.f32[layout.max()];
    float* out = pe.f32.data() + layout.partial();
    std::fill_n(out, layout.headDim + 1, 0.0f);
    const std::uint32_t values = step.c + layout.capacity * layout.headDim;
    for (std::uint32_t slot = 0; slot < step.d; ++slot) {
        const float e = std::exp(pe.f32[layout.scores() + slot] - top);
        out[layout.headDim] += e;
        for (std::uint32_t i = 0; i < layout.headDim; ++i)
            out[i] += e * decode(pe.f16[values + slot * layout.headDim + i], step);
    }
}

void attentionOutput(PeState& pe, const Step& step)
{
    const AttentionLayout layout = AttentionLayout::unpack(step.a, step.b);
    const float* partial = pe.f32.data() + layout.partial();
    for (std::uint32_t i = 0; i < layout.headDim; ++i)
        pe.f32[step.d + i] = S(partial[i] / partial[layout.headDim], step);
}

void embeddingContribution(PeState& pe, const Step& step)
{
    const std::uint32_t token = bits(pe, bits(pe, step.c));
    const std::uint32_t rowBegin = bits(pe, step.c + 1);
    const std::uint32_t rowEnd = bits(pe, step.c + 2);
    const std::uint32_t rowBase = bits(pe, step.c + 3);
    const std::uint32_t positionBegin = bits(pe, step.c + 4);
    const std::uint32_t positionEnd = bits(pe, step.c + 5);
    const std::uint32_t positionBase = bits(pe, step.c + 6);
    const std::uint32_t position = bits(pe, step.c + 7);
    float* out = pe.f32.data() + step.a;
    std::fill_n(out, step.b, 0.0f);
    if (token >= rowBegin && token < rowEnd)
        for (std::uint32_t i = 0; i < step.b; ++i)
            out[i] = decode(pe.f16[rowBase + (token - rowBegin) * step.b + i], step);
    if (position >= positionBegin && position < positionEnd)
        for (std::uint32_t i = 0; i < step.b; ++i)
            out[i] = out[i] + decode(pe.f16[positionBase + (position - positionBegin) * step.b + i], step);
}

void localArgmax(PeState& pe, const Step& step)
{
    std::uint32_t best = 0;
    for (std::uint32_t i = 1; i < step.b; ++i)
        if (pe.f32[step.a + i] > pe.f32[step.a + best])
            best = i;
    pe.f32[step.c] = step.b > 0 ? pe.f32[step.a + best] : -std::numeric_limits<float>::infinity();
    pe.f32[step.c + 1] = std::bit_cast<float>(step.d + best);
}

void argmaxCombine(PeState& pe, const Step& step)
{
    const float value = pe.f32[step.a];
    const std::uint32_t id = bits(pe, step.a + 1);
    const float own = pe.f32[step.c];
    if (value > own || (value == own && id < bits(pe, step.c + 1))) {
        pe.f32[step.c] = value;
        pe.f32[step.c + 1] = std::bit_cast<float>(id);
    }
}

void route(PeState& pe, const Step& step)
{
    const Routing routing
        = cyclelevel::route(std::span<const float>(pe.f32.data() + step.a, step.b), std::int64_t(step.scalar));
    std::fill_n(pe.f32.begin() + step.d, step.b, 0.0f);
    for (std::size_t i = 0; i < routing.experts.size(); ++i)
        pe.f32[step.d + std::uint32_t(routing.experts[i])] = routing.weights[i];
}

void selectExpert(PeState& pe, const Step& step)
{
    pe.select = pe.f32[step.a + step.b] != 0.0f;
}

void fmacFromBuffer(PeState& pe, const Step& step)
{
    const auto outputs = std::uint32_t(step.scalar);
    float* y = pe.f32.data() + step.d;
    for (std::uint32_t j = 0; j < step.b; ++j) {
        const float x = pe.f32[step.a + j];
        const std::uint16_t* column = pe.f16.data() + step.c + std::size_t(j) * outputs;
        for (std::uint32_t i = 0; i < outputs; ++i)
            y[i] += decode(column[i], step) * x;
    }
    pe.fmacs += std::uint64_t(outputs) * step.b;
}

void scaleByWeight(PeState& pe, const Step& step)
{
    const float weight = pe.f32[step.c];
    for (std::uint32_t i = 0; i < step.b; ++i)
        pe.f32[step.d + i] = weight * pe.f32[step.a + i];
}

} // namespace waferscope::core::cyclelevel::steps
