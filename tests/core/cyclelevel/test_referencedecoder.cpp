// The reference decoder of the cycle-level run: 16-bit rounding on known bit patterns, the
// seeded weights' statistics, each op against its closed form, the shapes read from real
// configs, and generation with a KV cache against a plain recomputation of every position.
#include "testing.h"

#include "core/cyclelevel/decoder.h"
#include "core/cyclelevel/reference.h"
#include "core/cyclelevel/referenceops.h"
#include "core/cyclelevel/weights.h"
#include "core/model/modelloader.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <vector>

using namespace waferscope::core;
using namespace waferscope::core::cyclelevel;
using waferscope::test::sharedDir;
using waferscope::test::sourceDir;

namespace {

bool sameBits(float a, float b)
{
    return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A decoder small enough to recompute from scratch for every position.
DecoderShape tinyShape()
{
    DecoderShape shape;
    shape.name = "tiny";
    shape.storage = Storage::Bf16;
    shape.vocab = 97;
    shape.hidden = 64;
    shape.layers = 2;
    shape.heads = 4;
    shape.kvHeads = 2;
    shape.headDim = 16;
    shape.ffn = 128;
    shape.maxPositions = 32;
    shape.positions = DecoderShape::Positions::Rotary;
    shape.norm = DecoderShape::Norm::RmsNorm;
    shape.activation = DecoderShape::Activation::SwiGlu;
    shape.tiedHead = true;
    return shape;
}

DecoderShape tinyLearnedGelu()
{
    DecoderShape shape = tinyShape();
    shape.name = "tiny-gpt2";
    shape.storage = Storage::Fp16;
    shape.kvHeads = 4;
    shape.positions = DecoderShape::Positions::Learned;
    shape.norm = DecoderShape::Norm::LayerNorm;
    shape.activation = DecoderShape::Activation::Gelu;
    shape.qkvBias = shape.outBias = shape.ffnBias = shape.lmHeadBias = true;
    shape.tiedHead = false;
    return shape;
}

DecoderShape tinyMixture()
{
    DecoderShape shape = tinyShape();
    shape.name = "tiny-moe";
    shape.positions = DecoderShape::Positions::Alibi;
    shape.norm = DecoderShape::Norm::LayerNorm;
    shape.ffnBias = shape.qkvBias = true;
    shape.experts = 4;
    shape.topK = 2;
    return shape;
}

// The logits of the last of `sequence`, every position computed from scratch one token at a
// time with the single-token ops: no cache carried between calls, no batching.
std::vector<float> recomputedLogits(const DecoderWeights& weights, const std::vector<std::int32_t>& sequence)
{
    const DecoderShape& shape = weights.shape();
    const Storage storage = shape.storage;
    const auto hidden = std::size_t(shape.hidden);
    const auto tensor = [&](Tensor which, int layer, int expert = 0) { return weights.tensor(which, layer, expert); };
    std::vector<std::vector<float>> xs;
    for (std::size_t p = 0; p < sequence.size(); ++p) {
        std::vector<float> x(hidden);
        for (std::size_t i = 0; i < hidden; ++i) {
            x[i] = weights.value(Tensor::TokenEmbedding, 0, 0, sequence[p], std::int64_t(i));
            if (shape.positions == DecoderShape::Positions::Learned)
                x[i] = roundToStorage(
                    x[i] + weights.value(Tensor::PositionEmbedding, 0, 0, std::int64_t(p), std::int64_t(i)), storage);
        }
        xs.push_back(x);
    }
    for (int layer = 0; layer < int(shape.layers); ++layer) {
        const auto kvWidth = std::size_t(shape.kvWidth());
        std::vector<float> keys(sequence.size() * kvWidth);
        std::vector<float> values(sequence.size() * kvWidth);
        std::vector<std::vector<float>> queries;
        for (std::size_t p = 0; p < sequence.size(); ++p) {
            std::vector<float> a(hidden);
            norm(shape, tensor(Tensor::Norm1Weight, layer), tensor(Tensor::Norm1Bias, layer), xs[p], a);
            std::vector<float> q(std::size_t(shape.queryWidth()));
            const std::span<float> k(keys.data() + p * kvWidth, kvWidth);
            const std::span<float> v(values.data() + p * kvWidth, kvWidth);
            linear(tensor(Tensor::Wq, layer), tensor(Tensor::Bq, layer), a, storage, q);
            linear(tensor(Tensor::Wk, layer), tensor(Tensor::Bk, layer), a, storage, k);
            linear(tensor(Tensor::Wv, layer), tensor(Tensor::Bv, layer), a, storage, v);
            if (shape.positions == DecoderShape::Positions::Rotary) {
                rotary(q, shape.headDim, std::int64_t(p), shape.ropeTheta, storage);
                rotary(k, shape.headDim, std::int64_t(p), shape.ropeTheta, storage);
            }
            queries.push_back(q);
        }
        for (std::size_t p = 0; p < sequence.size(); ++p) {
            std::vector<float> o(std::size_t(shape.queryWidth()));
            attention(shape, queries[p], KvView { keys, values, shape.kvWidth() }, std::int64_t(p), o);
            std::vector<float> y(hidden);
            linear(tensor(Tensor::Wo, layer), tensor(Tensor::Bo, layer), o, storage, y);
            for (std::size_t i = 0; i < hidden; ++i)
                xs[p][i] = roundToStorage(xs[p][i] + y[i], storage);
        }
        const auto feedForward = [&](int expert, const std::vector<float>& b) {
            std::vector<float> up(std::size_t(shape.ffn));
            std::vector<float> gate(std::size_t(shape.ffn));
            linear(tensor(Tensor::WUp, layer, expert), tensor(Tensor::BUp, layer, expert), b, storage, up);
            if (shape.gated())
                linear(tensor(Tensor::WGate, layer, expert), tensor(Tensor::BGate, layer, expert), b, storage, gate);
            for (std::size_t i = 0; i < up.size(); ++i)
                up[i] = ffnHidden(shape.activation, up[i], gate[i], storage);
            std::vector<float> out(hidden);
            linear(tensor(Tensor::WDown, layer, expert), tensor(Tensor::BDown, layer, expert), up, storage, out);
            return out;
        };
        for (std::size_t p = 0; p < sequence.size(); ++p) {
            std::vector<float> b(hidden);
            norm(shape, tensor(Tensor::Norm3Weight, layer), tensor(Tensor::Norm3Bias, layer), xs[p], b);
            std::vector<float> out;
            if (shape.experts == 0) {
                out = feedForward(0, b);
            } else {
                std::vector<float> router(std::size_t(shape.experts));
                logits(tensor(Tensor::Router, layer), WeightTensor::absent(storage), b, router);
                const Routing routing = route(router, shape.topK);
                std::vector<float> sum(hidden, 0.0f);
                for (std::size_t k = 0; k < routing.experts.size(); ++k) {
                    const std::vector<float> y = feedForward(int(routing.experts[k]), b);
                    for (std::size_t i = 0; i < hidden; ++i)
                        sum[i] += routing.weights[k] * y[i];
                }
                for (const float value : sum)
                    out.push_back(roundToStorage(value, storage));
            }
            for (std::size_t i = 0; i < hidden; ++i)
                xs[p][i] = roundToStorage(xs[p][i] + out[i], storage);
        }
    }
    std::vector<float> f(hidden);
    norm(shape, tensor(Tensor::FinalNormWeight, 0), tensor(Tensor::FinalNormBias, 0), xs.back(), f);
    std::vector<float> result(std::size_t(shape.vocab));
    logits(tensor(Tensor::LmHead, 0), tensor(Tensor::LmHeadBias, 0), f, result);
    return result;
}

Expected<DecoderShape> shapeOfFile(const std::string& path)
{
    const Expected<ModelConfig> config = readParamsFile(path);
    if (!config)
        return config.error();
    return decoderShape(*config);
}

std::string corpusFile(const std::string& relative)
{
    const std::filesystem::path path = std::filesystem::path(sharedDir()) / "modelzoo-release-2.10.0" / relative;
    if (!std::filesystem::is_regular_file(path))
        WS_SKIP("Model Zoo 2.10.0 corpus not found at " + path.string());
    return path.string();
}

} // namespace

// ---- 16-bit storage -------------------------------------------------------------------------

WS_TEST(bfloat16RoundsToNearestEven)
{
    const float one = 1.0f;
    WS_CHECK(sameBits(roundToStorage(one + 0x1p-8f, Storage::Bf16), 1.0f)); // half an ulp: ties to even 1
    WS_CHECK(sameBits(roundToStorage(one + 3 * 0x1p-9f, Storage::Bf16), 1.0f + 0x1p-7f)); // 0.75 ulp: up
    WS_CHECK(sameBits(roundToStorage(one + 3 * 0x1p-8f, Storage::Bf16), 1.0f + 0x1p-6f)); // 1.5 ulp: ties to even
    WS_CHECK(sameBits(roundToStorage(-(one + 0x1p-8f), Storage::Bf16), -1.0f));
    WS_CHECK(sameBits(roundToStorage(one + 0x1p-8f + 0x1p-20f, Storage::Bf16), 1.0f + 0x1p-7f)); // above the tie
    WS_CHECK_EQ(fabric::floatToBfloat16(1.0f), std::uint16_t(0x3f80));
    WS_CHECK_EQ(fabric::floatToBfloat16(-2.0f), std::uint16_t(0xc000));
    // The largest float lies above the midpoint of the largest bf16 (0x7f7f) and infinity.
    WS_CHECK(std::isinf(roundToStorage(std::numeric_limits<float>::max(), Storage::Bf16)));
    WS_CHECK(sameBits(roundToStorage(0x1.fep127f, Storage::Bf16), 0x1.fep127f)); // 0x7f7f itself
    WS_CHECK(std::isinf(roundToStorage(std::numeric_limits<float>::infinity(), Storage::Bf16)));
    WS_CHECK(std::isnan(roundToStorage(std::numeric_limits<float>::quiet_NaN(), Storage::Bf16)));
    // A NaN with only low payload bits must not truncate to infinity.
    WS_CHECK(std::isnan(roundToStorage(std::bit_cast<float>(0x7f800001u), Storage::Bf16)));
    WS_CHECK(sameBits(roundToStorage(0x1p-130f, Storage::Bf16), 0x1p-130f)); // subnormals keep their bits
}

WS_TEST(float16RoundsToNearestEvenAndOverflows)
{
    const float one = 1.0f;
    WS_CHECK(sameBits(roundToStorage(one + 0x1p-11f, Storage::Fp16), 1.0f)); // tie: to even
    WS_CHECK(sameBits(roundToStorage(one + 3 * 0x1p-11f, Storage::Fp16), 1.0f + 0x1p-9f)); // tie: to even, up
    WS_CHECK(sameBits(roundToStorage(one + 3 * 0x1p-12f, Storage::Fp16), 1.0f + 0x1p-10f)); // 0.75 ulp: up
    WS_CHECK_EQ(roundToStorage(65504.0f, Storage::Fp16), 65504.0f); // the largest half
    WS_CHECK_EQ(roundToStorage(65519.0f, Storage::Fp16), 65504.0f); // below the midpoint
    WS_CHECK(std::isinf(roundToStorage(65520.0f, Storage::Fp16))); // the midpoint ties to 2^16: infinity
    WS_CHECK(sameBits(roundToStorage(0x1p-24f, Storage::Fp16), 0x1p-24f)); // the smallest subnormal
    WS_CHECK(sameBits(roundToStorage(0x1p-25f, Storage::Fp16), 0.0f)); // half of it: ties to even zero
    WS_CHECK(sameBits(roundToStorage(3 * 0x1p-26f, Storage::Fp16), 0x1p-24f));
    WS_CHECK(std::isnan(roundToStorage(std::numeric_limits<float>::quiet_NaN(), Storage::Fp16)));
}

// ---- Seeded weights ---------------------------------------------------------------------------

WS_TEST(weightsAreDeterministicBoundedAndSeedDependent)
{
    const DecoderShape shape = tinyLearnedGelu();
    const DecoderWeights weights(shape, 42);
    const DecoderWeights again(shape, 42);
    const DecoderWeights other(shape, 43);
    const float matrixBound = std::sqrt(3.0f / 64.0f) * (1.0f + 0x1p-10f); // scale, plus a rounding
    int differing = 0;
    int samples = 0;
    for (int row = 0; row < 64; ++row)
        for (int col = 0; col < 64; ++col) {
            const float value = weights.value(Tensor::Wq, 1, 0, row, col);
            WS_CHECK(sameBits(value, again.value(Tensor::Wq, 1, 0, row, col)));
            WS_CHECK(std::fabs(value) <= matrixBound);
            WS_CHECK_EQ(value, roundToStorage(value, Storage::Fp16)); // already in storage
            differing += value != other.value(Tensor::Wq, 1, 0, row, col) ? 1 : 0;
            differing += value != weights.value(Tensor::Wq, 0, 0, row, col) ? 1 : 0; // another layer
            samples += 2;
            const float embedding = weights.value(Tensor::TokenEmbedding, 0, 0, row, col);
            WS_CHECK(embedding >= -1.0f && embedding <= 1.0f);
        }
    WS_CHECK(differing > samples * 99 / 100);
    for (int col = 0; col < 64; ++col) {
        const float normWeight = weights.value(Tensor::Norm1Weight, 0, 0, 0, col);
        WS_CHECK(normWeight >= 0.9f && normWeight <= 1.1f);
        const float bias = weights.value(Tensor::Bq, 0, 0, 0, col);
        WS_CHECK(std::fabs(bias) <= 0.1f && bias != 0.0f);
    }
}

WS_TEST(tiedHeadIsTheEmbeddingAndAbsentTensorsReadZero)
{
    const DecoderShape tied = tinyShape();
    const DecoderWeights weights(tied, 7);
    for (int v = 0; v < 97; v += 5)
        for (int h = 0; h < 64; h += 3)
            WS_CHECK(
                sameBits(weights.value(Tensor::LmHead, 0, 0, v, h), weights.value(Tensor::TokenEmbedding, 0, 0, v, h)));
    WS_CHECK_EQ(weights.value(Tensor::Bq, 0, 0, 0, 3), 0.0f); // no qkv bias
    WS_CHECK_EQ(weights.value(Tensor::Norm1Bias, 0, 0, 0, 3), 0.0f); // RMSNorm
    WS_CHECK_EQ(weights.value(Tensor::PositionEmbedding, 0, 0, 2, 3), 0.0f); // rotary
    WS_CHECK_EQ(weights.value(Tensor::Router, 0, 0, 1, 3), 0.0f); // dense
    WS_CHECK(!weights.tensor(Tensor::Router, 0, 0).present());

    const DecoderWeights untied(tinyLearnedGelu(), 7);
    int same = 0;
    for (int h = 0; h < 64; ++h)
        same += untied.value(Tensor::LmHead, 0, 0, 5, h) == untied.value(Tensor::TokenEmbedding, 0, 0, 5, h) ? 1 : 0;
    WS_CHECK(same < 8);

    // Experts have weights of their own; tensors outside the experts ignore `expert`.
    const DecoderWeights mixture(tinyMixture(), 7);
    WS_CHECK(mixture.value(Tensor::WUp, 1, 2, 3, 4) != mixture.value(Tensor::WUp, 1, 3, 3, 4));
    WS_CHECK(sameBits(mixture.value(Tensor::Wq, 1, 2, 3, 4), mixture.value(Tensor::Wq, 1, 0, 3, 4)));
    WS_CHECK_EQ(mixture.tensor(Tensor::Router, 1, 0).rows(), std::int64_t(4));
}

WS_TEST(matrixValuesHaveVarianceOneOverInputs)
{
    DecoderShape shape = tinyShape();
    shape.hidden = 256;
    shape.ffn = 1024;
    const DecoderWeights weights(shape, 2024);
    const auto moments = [&](Tensor which, std::int64_t rows, std::int64_t cols) {
        double sum = 0.0;
        double squares = 0.0;
        for (std::int64_t row = 0; row < rows; ++row)
            for (std::int64_t col = 0; col < cols; ++col) {
                const double value = weights.value(which, 1, 0, row, col);
                sum += value;
                squares += value * value;
            }
        const double count = double(rows * cols);
        return std::pair { sum / count, squares / count - (sum / count) * (sum / count) };
    };
    const auto [meanQ, varianceQ] = moments(Tensor::Wq, 64, 256); // 256 inputs
    WS_CHECK_NEAR(varianceQ, 1.0 / 256.0, 0.1);
    WS_CHECK(std::fabs(meanQ) < 0.1 * std::sqrt(1.0 / 256.0));
    const auto [meanDown, varianceDown] = moments(Tensor::WDown, 16, 1024); // 1024 inputs
    WS_CHECK_NEAR(varianceDown, 1.0 / 1024.0, 0.1);
    WS_CHECK(std::fabs(meanDown) < 0.1 * std::sqrt(1.0 / 1024.0));
}

WS_TEST(promptTokensAreDeterministicAndInTheVocabulary)
{
    const DecoderShape shape = tinyShape();
    const std::vector<std::int32_t> prompt = promptTokens(shape, 5, 200);
    WS_CHECK(prompt == promptTokens(shape, 5, 200));
    WS_CHECK(prompt != promptTokens(shape, 6, 200));
    int distinct = 0;
    std::vector<bool> seen(97, false);
    for (const std::int32_t id : prompt) {
        WS_REQUIRE(id >= 0 && id < 97);
        distinct += seen[std::size_t(id)] ? 0 : 1;
        seen[std::size_t(id)] = true;
    }
    WS_CHECK(distinct > 80); // 200 draws from 97 ids miss about 12
}

// ---- Ops against closed forms -----------------------------------------------------------------

WS_TEST(layerNormAndRmsNormMatchTheirClosedForms)
{
    const std::vector<float> x { 1.0f, 2.0f, 3.0f, 4.0f };
    const std::vector<float> weight { 1.0f, 2.0f, 0.5f, 1.0f };
    const std::vector<float> bias { 0.0f, 0.25f, 0.0f, -1.0f };
    std::vector<float> out(4);
    layerNorm(x, weight, bias, 1e-5f, Storage::Fp16, out);
    const double inverse = 1.0 / std::sqrt(1.25 + 1e-5); // mean 2.5, variance 1.25
    for (std::size_t i = 0; i < 4; ++i)
        WS_CHECK_NEAR(out[i], (x[i] - 2.5) * inverse * weight[i] + bias[i], 1e-3);
    layerNorm(x, weight, {}, 1e-5f, Storage::Fp16, out); // without a bias
    WS_CHECK_NEAR(out[3], 1.5 * inverse, 1e-3);

    const std::vector<float> pair { 3.0f, 4.0f };
    const std::vector<float> scale { 1.0f, 2.0f };
    std::vector<float> normed(2);
    rmsNorm(pair, scale, 0.0f, Storage::Bf16, normed);
    const double rms = std::sqrt(12.5);
    WS_CHECK_NEAR(normed[0], 3.0 / rms, 4e-3);
    WS_CHECK_NEAR(normed[1], 8.0 / rms, 4e-3);
    WS_CHECK_EQ(normed[1], roundToStorage(normed[1], Storage::Bf16));
}

WS_TEST(linearIsTheRoundedHandSum)
{
    const std::vector<float> row { 0.5f, -0.25f, 2.0f };
    const std::vector<float> x { 1.0f, 2.0f, 3.0f };
    WS_CHECK_EQ(linearOutput(row, x, true, 0.125f, Storage::Fp16), 6.125f); // 0.5 - 0.5 + 6 + 0.125
    WS_CHECK_EQ(linearOutput(row, x, false, 0.125f, Storage::Fp16), 6.0f);
    // 1 + 2^-11 is exact in float; fp16 storage ties it to 1.
    const std::vector<float> ones { 1.0f, 0x1p-11f };
    WS_CHECK_EQ(linearOutput(ones, std::vector<float> { 1.0f, 1.0f }, false, 0.0f, Storage::Fp16), 1.0f);
    WS_CHECK_EQ(dot(ones, std::vector<float> { 1.0f, 1.0f }), 1.0f + 0x1p-11f);
}

WS_TEST(rotaryIsIdentityAtZeroAndRotatesPairs)
{
    std::vector<float> vector { 0.5f, -1.0f, 0.25f, 2.0f, 1.5f, 0.75f, -0.5f, 1.0f }; // two heads of 4
    const std::vector<float> original = vector;
    rotary(vector, 4, 0, 10000.0, Storage::Bf16);
    WS_CHECK(sameBits(vector, original));

    rotary(vector, 4, 7, 10000.0, Storage::Fp16);
    for (std::size_t head = 0; head < 8; head += 4)
        for (std::size_t i = 0; i < 2; ++i) {
            const double before = std::hypot(original[head + i], original[head + 2 + i]);
            const double after = std::hypot(vector[head + i], vector[head + 2 + i]);
            WS_CHECK_NEAR(after, before, 2e-3);
        }
    // Pair 0 turns by 7 rad, pair 1 by 7 / sqrt(10000) rad.
    const double angle0 = 7.0;
    WS_CHECK_NEAR(vector[0], 0.5 * std::cos(angle0) - 0.25 * std::sin(angle0), 2e-3);
    WS_CHECK_NEAR(vector[2], 0.25 * std::cos(angle0) + 0.5 * std::sin(angle0), 2e-3);
    const double angle1 = 7.0 / 100.0;
    WS_CHECK_NEAR(vector[1], -1.0 * std::cos(angle1) - 2.0 * std::sin(angle1), 2e-3);
    WS_CHECK_NEAR(vector[3], 2.0 * std::cos(angle1) + -1.0 * std::sin(angle1), 2e-3);
}

WS_TEST(attentionAveragesValuesByScore)
{
    DecoderShape shape = tinyShape();
    shape.storage = Storage::Fp16;
    shape.heads = 1;
    shape.kvHeads = 1;
    shape.headDim = 2;
    const std::vector<float> query { 1.0f, 0.5f };
    std::vector<float> out(2);

    const std::vector<float> oneKey { 0.3f, -0.7f };
    const std::vector<float> oneValue { 1.5f, -2.25f };
    attention(shape, query, KvView { oneKey, oneValue, 2 }, 0, out);
    WS_CHECK(sameBits(out, oneValue)); // one key: its value

    const std::vector<float> equalKeys { 0.3f, -0.7f, 0.3f, -0.7f };
    const std::vector<float> twoValues { 1.0f, -2.0f, 3.0f, 4.0f };
    attention(shape, query, KvView { equalKeys, twoValues, 2 }, 1, out);
    WS_CHECK_EQ(out[0], 2.0f);
    WS_CHECK_EQ(out[1], 1.0f);
    attention(shape, query, KvView { equalKeys, twoValues, 2 }, 0, out); // causal: position 0 sees key 0
    WS_CHECK_EQ(out[0], 1.0f);

    // Softmax weights of distinct scores: q.k0 = 1, q.k1 = 0, scaled by 1/sqrt(2).
    const std::vector<float> distinctKeys { 1.0f, 0.0f, 0.0f, 0.0f };
    attention(shape, query, KvView { distinctKeys, twoValues, 2 }, 1, out);
    const double first = std::exp(1.0 / std::sqrt(2.0));
    WS_CHECK_NEAR(out[0], (first * 1.0 + 3.0) / (first + 1.0), 2e-3);

    // ALiBi: equal scores, key 0 one position back loses slope (2^-8 for one head).
    shape.positions = DecoderShape::Positions::Alibi;
    attention(shape, query, KvView { equalKeys, twoValues, 2 }, 1, out);
    const double back = std::exp(-std::pow(2.0, -8.0));
    WS_CHECK_NEAR(out[0], (back * 1.0 + 3.0) / (back + 1.0), 2e-3);
}

WS_TEST(groupedQueryHeadsReadTheirKvHead)
{
    DecoderShape shape = tinyShape();
    shape.heads = 4;
    shape.kvHeads = 2;
    shape.headDim = 2;
    const std::vector<float> query(8, 1.0f);
    const std::vector<float> keys { 1.0f, 0.0f, 0.0f, 1.0f }; // one position, two kv heads
    const std::vector<float> values { 1.0f, 2.0f, 10.0f, 20.0f };
    std::vector<float> out(8);
    attention(shape, query, KvView { keys, values, 4 }, 0, out);
    const std::vector<float> expected { 1.0f, 2.0f, 1.0f, 2.0f, 10.0f, 20.0f, 10.0f, 20.0f };
    WS_CHECK(sameBits(out, expected));
}

WS_TEST(alibiSlopesFollowThePaper)
{
    for (int head = 0; head < 8; ++head)
        WS_CHECK_EQ(alibiSlope(head, 8), float(std::pow(2.0, -(head + 1))));
    // 12 heads: the 8 slopes of 8 heads, then every other slope of 16 heads: 2^-0.5, 2^-1.5, ...
    WS_CHECK_EQ(alibiSlope(7, 12), float(std::pow(2.0, -8.0)));
    WS_CHECK_EQ(alibiSlope(8, 12), float(std::pow(2.0, -0.5)));
    WS_CHECK_EQ(alibiSlope(11, 12), float(std::pow(2.0, -3.5)));
}

WS_TEST(topKRoutingPicksAndRenormalises)
{
    const std::vector<float> logits { 0.0f, float(std::log(2.0)), float(std::log(4.0)), 0.0f }; // p = 1:2:4:1
    const Routing two = route(logits, 2);
    WS_REQUIRE(two.experts.size() == 2);
    WS_CHECK_EQ(two.experts[0], std::int64_t(1));
    WS_CHECK_EQ(two.experts[1], std::int64_t(2));
    WS_CHECK_NEAR(two.weights[0], 1.0 / 3.0, 1e-6);
    WS_CHECK_NEAR(two.weights[1], 2.0 / 3.0, 1e-6);
    const Routing one = route(logits, 1);
    WS_REQUIRE(one.experts.size() == 1);
    WS_CHECK_EQ(one.experts[0], std::int64_t(2));
    WS_CHECK_EQ(one.weights[0], 1.0f);
    const Routing ties = route(std::vector<float> { 0.0f, 1.0f, 1.0f, 1.0f }, 2); // ties: lower index
    WS_REQUIRE(ties.experts.size() == 2);
    WS_CHECK_EQ(ties.experts[0], std::int64_t(1));
    WS_CHECK_EQ(ties.experts[1], std::int64_t(2));
    WS_CHECK_EQ(ties.weights[0], 0.5f);
}

WS_TEST(activationsMatchTheirFormulas)
{
    for (const double x : { -4.0, -1.5, -0.5, -0.01, 0.0, 0.3, 1.0, 2.5, 6.0 }) {
        const double expectedGelu
            = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / 3.141592653589793) * (x + 0.044715 * x * x * x)));
        WS_CHECK(std::fabs(gelu(float(x)) - expectedGelu) <= 1e-6 * std::fabs(x) + 1e-7);
        WS_CHECK(std::fabs(silu(float(x)) - x / (1.0 + std::exp(-x))) <= 1e-6 * std::fabs(x) + 1e-7);
        WS_CHECK_EQ(relu(float(x)), float(std::max(x, 0.0)));
    }
    WS_CHECK_EQ(ffnHidden(DecoderShape::Activation::SwiGlu, 3.0f, 2.0f, Storage::Bf16),
        roundToStorage(silu(2.0f) * 3.0f, Storage::Bf16));
    WS_CHECK_EQ(ffnHidden(DecoderShape::Activation::Relu, -3.0f, 2.0f, Storage::Bf16), 0.0f);
    WS_CHECK_EQ(argmax(std::vector<float> { 1.0f, 3.0f, 3.0f, 2.0f }), std::int64_t(1));
    WS_CHECK_EQ(topTwoGap(std::vector<float> { 1.0f, 3.0f, 2.5f }), 0.5);
}

// ---- Shapes of real configs -------------------------------------------------------------------

WS_TEST(gpt2SmallSampleIsALearnedLayerNormGeluDecoder)
{
    const Expected<DecoderShape> shape = shapeOfFile(sourceDir() + "/samples/gpt2_small.yaml");
    WS_REQUIRE(shape.hasValue());
    WS_CHECK_EQ(shape->vocab, std::int64_t(50257));
    WS_CHECK_EQ(shape->hidden, std::int64_t(768));
    WS_CHECK_EQ(shape->layers, std::int64_t(12));
    WS_CHECK_EQ(shape->heads, std::int64_t(12));
    WS_CHECK_EQ(shape->kvHeads, std::int64_t(12));
    WS_CHECK_EQ(shape->headDim, std::int64_t(64));
    WS_CHECK_EQ(shape->ffn, std::int64_t(3072));
    WS_CHECK_EQ(shape->maxPositions, std::int64_t(1024));
    WS_CHECK(shape->positions == DecoderShape::Positions::Learned);
    WS_CHECK(shape->norm == DecoderShape::Norm::LayerNorm && shape->normBias);
    WS_CHECK(shape->activation == DecoderShape::Activation::Gelu);
    WS_CHECK(shape->storage == Storage::Bf16); // the sample's fp16_type is bfloat16
    WS_CHECK(shape->qkvBias && shape->outBias && shape->ffnBias && !shape->lmHeadBias && shape->tiedHead);
    WS_CHECK_EQ(shape->experts, std::int64_t(0));
}

WS_TEST(llama3p2OneBillionIsARotaryRmsSwiGluDecoder)
{
    const Expected<DecoderShape> shape = shapeOfFile(corpusFile("nlp/llama/configs/params_llama3p2_1b_msl_8k.yaml"));
    WS_REQUIRE(shape.hasValue());
    WS_CHECK_EQ(shape->hidden, std::int64_t(2048));
    WS_CHECK_EQ(shape->layers, std::int64_t(16));
    WS_CHECK_EQ(shape->heads, std::int64_t(32));
    WS_CHECK_EQ(shape->kvHeads, std::int64_t(8));
    WS_CHECK_EQ(shape->headDim, std::int64_t(64));
    WS_CHECK_EQ(shape->ffn, std::int64_t(8192));
    WS_CHECK_EQ(shape->vocab, std::int64_t(128256));
    WS_CHECK_EQ(shape->maxPositions, std::int64_t(8192));
    WS_CHECK(shape->positions == DecoderShape::Positions::Rotary);
    WS_CHECK_EQ(shape->ropeTheta, 500000.0);
    WS_CHECK(shape->norm == DecoderShape::Norm::RmsNorm);
    WS_CHECK(shape->activation == DecoderShape::Activation::SwiGlu);
    WS_CHECK(shape->tiedHead);
    WS_CHECK(!shape->qkvBias && !shape->outBias && !shape->ffnBias && !shape->lmHeadBias);
    WS_CHECK(shape->storage == Storage::Bf16); // fp16_type cbfloat16
}

WS_TEST(moe111MIsAnAlibiMixtureOfFourExperts)
{
    const Expected<DecoderShape> shape = shapeOfFile(corpusFile("nlp/mixtral/configs/params_moe_111M_base.yaml"));
    WS_REQUIRE(shape.hasValue());
    WS_CHECK_EQ(shape->experts, std::int64_t(4));
    WS_CHECK_EQ(shape->topK, std::int64_t(1));
    WS_CHECK_EQ(shape->hidden, std::int64_t(768));
    WS_CHECK_EQ(shape->layers, std::int64_t(10));
    WS_CHECK_EQ(shape->heads, std::int64_t(12));
    WS_CHECK_EQ(shape->ffn, std::int64_t(2048));
    WS_CHECK(shape->positions == DecoderShape::Positions::Alibi);
    WS_CHECK(shape->activation == DecoderShape::Activation::SwiGlu);
    WS_CHECK(shape->storage == Storage::Bf16);
    WS_CHECK(shape->ffnBias && shape->qkvBias);
}

WS_TEST(biaslessLayerNormMapsToLayerNormWithoutBias)
{
    const Expected<DecoderShape> shape = shapeOfFile(waferscope::test::dataDir() + "/families/mpt_small.yaml");
    WS_REQUIRE(shape.hasValue());
    WS_CHECK(shape->norm == DecoderShape::Norm::LayerNorm && !shape->normBias);
    WS_CHECK(shape->positions == DecoderShape::Positions::Alibi);
    const DecoderWeights weights(*shape, 1);
    WS_CHECK_EQ(weights.value(Tensor::Norm1Bias, 0, 0, 0, 5), 0.0f);
}

WS_TEST(encodersAndParallelAttentionAreRefusedWithTheReason)
{
    const Expected<DecoderShape> bert = shapeOfFile(waferscope::test::dataDir() + "/models/bert_large.yaml");
    WS_REQUIRE(!bert.hasValue());
    WS_CHECK(bert.error().kind == Diagnostic::Kind::CannotMap);
    WS_CHECK_CONTAINS(bert.error().message, "supports decoder language models");
    WS_CHECK_CONTAINS(bert.error().message, "bert");

    ModelConfig config = readParamsFile(sourceDir() + "/samples/gpt2_small.yaml").value();
    config.parallelAttention = true;
    const Expected<DecoderShape> parallel = decoderShape(config);
    WS_REQUIRE(!parallel.hasValue());
    WS_CHECK_EQ(parallel.error().message,
        std::string("the cycle-level run supports pre-norm decoders; ") + config.name
            + " uses parallel attention (attention and feed-forward read one normed input)");
    config.parallelAttention = false;
    config.slidingWindow = 4096;
    const Expected<DecoderShape> sliding = decoderShape(config);
    WS_REQUIRE(!sliding.hasValue());
    WS_CHECK_CONTAINS(sliding.error().message, "sliding attention window");
    config.slidingWindow = 0;
    config.numExperts = 8;
    config.topK = 2;
    config.numSharedExperts = 1;
    const Expected<DecoderShape> shared = decoderShape(config);
    WS_REQUIRE(!shared.hasValue());
    WS_CHECK_CONTAINS(shared.error().message, "shared experts");
}

WS_TEST(everyCorpusDecoderMapsOrSaysWhyNot)
{
    const std::filesystem::path root = std::filesystem::path(sharedDir()) / "modelzoo-release-2.10.0" / "nlp";
    if (!std::filesystem::is_directory(root))
        WS_SKIP("Model Zoo 2.10.0 corpus not found at " + root.string());
    int mapped = 0;
    int refused = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
        if (!entry.is_regular_file() || entry.path().extension() != ".yaml")
            continue;
        const Expected<ModelConfig> config = readParamsFile(entry.path().string());
        if (!config || !isDecoderLanguageModel(config->family))
            continue;
        const Expected<DecoderShape> shape = decoderShape(*config);
        if (shape) {
            ++mapped;
            WS_CHECK(shape->headDim * shape->heads > 0 && shape->heads % shape->kvHeads == 0);
        } else {
            ++refused;
            WS_CHECK(shape.error().kind == Diagnostic::Kind::CannotMap);
            WS_CHECK_CONTAINS(shape.error().message, "the cycle-level run supports");
        }
    }
    WS_CHECK(mapped >= 40); // GPT-3, Llama, Mistral, Mixtral, BTLM, Jais, StarCoder, ...
    // GPT-J x 3 and Falcon x 3 (parallel attention), Gemma 2 x 3 (sandwich norms), BLOOM (embedding
    // norm), Mistral 128k and Llama 3.1 SWA (sliding windows), the MoE with a shared expert, and six
    // sparse GPT-3s.
    WS_CHECK_EQ(refused, 19);
}

// ---- Generation -------------------------------------------------------------------------------

WS_TEST(generationWithACacheEqualsRecomputingEveryPosition)
{
    for (const DecoderShape& shape : { tinyShape(), tinyLearnedGelu(), tinyMixture() }) {
        const DecoderWeights weights(shape, 11);
        const std::vector<std::int32_t> prompt = promptTokens(shape, 3, 6);
        const Expected<GenerationResult> result = referenceGenerate(shape, weights, prompt, 5);
        WS_REQUIRE(result.hasValue());
        WS_CHECK(result->prompt == prompt);
        WS_REQUIRE(result->tokens.size() == 5 && result->logits.size() == 5 && result->top2Gap.size() == 5);
        std::vector<std::int32_t> sequence = prompt;
        for (std::size_t i = 0; i < 5; ++i) {
            const std::vector<float> recomputed = recomputedLogits(weights, sequence);
            WS_CHECK(sameBits(result->logits[i], recomputed));
            WS_CHECK_EQ(result->tokens[i], std::int32_t(argmax(recomputed)));
            WS_CHECK(result->tokens[i] >= 0 && result->tokens[i] < shape.vocab);
            WS_CHECK(result->top2Gap[i] >= 0.0);
            sequence.push_back(result->tokens[i]);
        }
        const Expected<GenerationResult> again = referenceGenerate(shape, weights, prompt, 5);
        WS_REQUIRE(again.hasValue());
        WS_CHECK(again->tokens == result->tokens);
        for (std::size_t i = 0; i < 5; ++i)
            WS_CHECK(sameBits(again->logits[i], result->logits[i]));
    }
}

WS_TEST(aLongPromptBatchesAcrossTokenBlocks)
{
    // 19 prompt tokens: two full blocks of 8 and a padded one in the batched linear.
    const DecoderShape shape = tinyMixture();
    const DecoderWeights weights(shape, 99);
    const std::vector<std::int32_t> prompt = promptTokens(shape, 8, 19);
    const Expected<GenerationResult> result = referenceGenerate(shape, weights, prompt, 2);
    WS_REQUIRE(result.hasValue());
    WS_CHECK(sameBits(result->logits[0], recomputedLogits(weights, prompt)));
}

WS_TEST(generationRefusesPromptsItCannotRun)
{
    const DecoderShape shape = tinyShape();
    const DecoderWeights weights(shape, 1);
    WS_CHECK_CONTAINS(referenceGenerate(shape, weights, {}, 1).error().message, "empty");
    WS_CHECK_CONTAINS(referenceGenerate(shape, weights, { 3, 97 }, 1).error().message, "outside the vocabulary");
    WS_CHECK_CONTAINS(referenceGenerate(shape, weights, { 3 }, 0).error().message, "at least 1");
    const std::vector<std::int32_t> full = promptTokens(shape, 1, 30);
    WS_CHECK(referenceGenerate(shape, weights, full, 3).hasValue()); // 32 positions
    WS_CHECK_CONTAINS(referenceGenerate(shape, weights, full, 4).error().message, "33 positions");
    WS_CHECK(referenceGenerate(tinyLearnedGelu(), weights, full, 1).error().kind == Diagnostic::Kind::Internal);
}
