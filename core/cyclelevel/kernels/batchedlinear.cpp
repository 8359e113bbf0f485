#include "core/cyclelevel/kernels/batchedlinear.h"

#include "core/cyclelevel/referenceops.h"

#include <algorithm>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace waferscope::core::cyclelevel {

namespace {

// Tokens summed side by side: a fixed-length inner loop the compiler keeps in vector registers.
constexpr std::int64_t kTokenBlock = 8;

// The batch transposed and padded with zero tokens to whole blocks: value (t, j) at j * padded + t.
struct TransposedBatch {
    explicit TransposedBatch(const TokenMatrix& x)
        : padded((x.tokens + kTokenBlock - 1) / kTokenBlock * kTokenBlock)
        , values(std::size_t(padded * x.width), 0.0f)
    {
        for (std::int64_t t = 0; t < x.tokens; ++t)
            for (std::int64_t j = 0; j < x.width; ++j)
                values[std::size_t(j * padded + t)] = x.values[std::size_t(t * x.width + j)];
    }

    std::int64_t padded;
    std::vector<float> values;
};

// sums[t] = Σ_j weightRow_j x(t, j), each token's sum in j order.
void accumulate(std::span<const float> weightRow, const TransposedBatch& batch, std::span<float> sums)
{
    std::fill(sums.begin(), sums.end(), 0.0f);
    const float* column = batch.values.data();
    for (const float weight : weightRow) {
        for (std::int64_t block = 0; block < batch.padded; block += kTokenBlock) {
            float* blockSums = sums.data() + block;
            const float* blockColumn = column + block;
            for (std::int64_t k = 0; k < kTokenBlock; ++k)
                blockSums[k] += weight * blockColumn[k];
        }
        column += batch.padded;
    }
}

// out(t, i) = finish(Σ_j W_ij x(t, j), i), parallel over rows i.
template <typename Finish>
void overRows(const WeightTensor& weight, const TokenMatrix& x, TokenMatrix& out, const Finish& finish)
{
    const std::int64_t rows = weight.rows();
    out = TokenMatrix(x.tokens, rows);
    if (x.tokens == 1) {
        tbb::parallel_for(
            tbb::blocked_range<std::int64_t>(0, rows, 64), [&](const tbb::blocked_range<std::int64_t>& range) {
                std::vector<float> row(std::size_t(weight.cols()));
                for (std::int64_t i = range.begin(); i < range.end(); ++i) {
                    weight.row(i, row);
                    out.values[std::size_t(i)] = finish(dot(row, x.values), i);
                }
            });
        return;
    }
    const TransposedBatch batch(x);
    tbb::parallel_for(
        tbb::blocked_range<std::int64_t>(0, rows, 16), [&](const tbb::blocked_range<std::int64_t>& range) {
            std::vector<float> row(std::size_t(weight.cols()));
            std::vector<float> sums(std::size_t(batch.padded));
            for (std::int64_t i = range.begin(); i < range.end(); ++i) {
                weight.row(i, row);
                accumulate(row, batch, sums);
                for (std::int64_t t = 0; t < x.tokens; ++t)
                    out.values[std::size_t(t * rows + i)] = finish(sums[std::size_t(t)], i);
            }
        });
}

} // namespace

void linearOverTokens(
    const WeightTensor& weight, const WeightTensor& bias, const TokenMatrix& x, Storage storage, TokenMatrix& out)
{
    const bool hasBias = bias.present();
    overRows(weight, x, out,
        [&](float sum, std::int64_t i) { return roundToStorage(hasBias ? sum + bias.at(0, i) : sum, storage); });
}

void logitsOverTokens(const WeightTensor& weight, const WeightTensor& bias, const TokenMatrix& x, TokenMatrix& out)
{
    const bool hasBias = bias.present();
    overRows(weight, x, out, [&](float sum, std::int64_t i) { return hasBias ? sum + bias.at(0, i) : sum; });
}

} // namespace waferscope::core::cyclelevel
