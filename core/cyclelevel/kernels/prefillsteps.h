#pragma once

#include "core/fabric/pe.h"

#include <cstdint>

namespace waferscope::core::cyclelevel::steps {

// The compute steps of the prefill kernels (prefillkernel.h), by the numeric
// contract of referenceops.h (6): each value they produce is the reference's expression, except
// that the sums over the head dimension (scores), the keys (row sums) and the keys again (the
// weighted values) run in the order the tiles come. Tiles are row-major FP32 in the PE's f32
// array. Step fields: offsets a, b, c; d the packed tile dimensions (TileDims); flags in
// Step::color: kBf16 (computesteps.h) and those below.

constexpr std::uint8_t kFirstTile = 8; // the accumulator starts from zero rather than its contents
constexpr std::uint8_t kDiagonal = 16; // a diagonal tile: query i of the band sees keys 0..i of it
// Row maxima and row sums taken with what f32[c + i] already holds (max, +) instead of replacing it.
constexpr std::uint8_t kAccumulate = 32;

// rows x cols, over `inner` (the summed dimension of a product), packed into Step::d.
struct TileDims {
    std::uint32_t rows = 0;
    std::uint32_t cols = 0;
    std::uint32_t inner = 0;
    static constexpr std::uint32_t kMaxSide = 2047; // rows and cols
    static constexpr std::uint32_t kMaxInner = 1023;
    std::uint32_t packed() const { return rows | cols << 11 | inner << 22; }
    static TileDims unpack(std::uint32_t bits) { return { bits & 0x7ffu, (bits >> 11) & 0x7ffu, bits >> 22 }; }
};

// Engine cycles of a tile product (rows x cols outputs, `inner` terms each): an AXPY per
// (inner index, output row or column) along the longer side of the output tile.
std::uint32_t tileProductCycles(std::uint32_t rows, std::uint32_t cols, std::uint32_t inner, int simdWidth);

// Scores: S[c] (rows x cols) += Q[a] (rows x inner) K[b]^T (K: cols x inner); each score a float
// sum of q * k in the order of the head dimension.
void tileScores(fabric::PeState& pe, const fabric::Step& step);
// Scales the scores S[a] (rows x cols) in place by scalar (1 / sqrt(d)) and writes each query's
// largest visible score to f32[c + i] (-infinity if it sees none; kAccumulate: the larger of it
// and f32[c + i]).
void tileRowMax(fabric::PeState& pe, const fabric::Step& step);
// In place, with the row maxima m at f32[b]: e = exp(s - m) for the visible scores, 0 for the
// masked ones; f32[c + i] = the sum of query i's e in key order, from 0 (kAccumulate: from
// f32[c + i]).
void tileExponentials(fabric::PeState& pe, const fabric::Step& step);
// Partial outputs: O[c] (rows x cols) += E[a] (rows x inner) V[b] (inner x cols), each a float
// sum of e * v in key order; masked keys of a diagonal tile are left out (not added as zeros).
void tileWeightedValues(fabric::PeState& pe, const fabric::Step& step);
// O[a] (rows x cols) = S(O / l), l the row sums at f32[b]: the head's outputs.
void tileNormalise(fabric::PeState& pe, const fabric::Step& step);

// The prefill norm (prefillnormkernel.h), on a tile X[a] (rows tokens x cols values) and per-token
// figures (rows floats). Row sums: f32[c + i] += Σ_j x_ij (kSquares: x_ij * x_ij; kCentred:
// (x_ij - m_i) * (x_ij - m_i), m at f32[b]), from 0 with kFirstTile; in the order of j.
constexpr std::uint8_t kSquares = 64;
constexpr std::uint8_t kCentred = 128;
void tileRowSums(fabric::PeState& pe, const fabric::Step& step);
// Per token, n = scalar: f32[c + i] = f32[a + i] / n (the mean); with kSquares, 1 / sqrt(f32[a + i] / n
// + epsilon), epsilon the float whose bits are Step::b (the inverse deviation). d = rows.
void tileNormFigures(fabric::PeState& pe, const fabric::Step& step);
// Y[c] (rows x cols) = (x_ij - m_i) * v_i, m_i at f32[b + i] and v_i at f32[b + rows + i]; with
// kSquares (RMSNorm), x_ij * v_i, v_i at f32[b + rows + i]. Not rounded.
void tileCentreScale(fabric::PeState& pe, const fabric::Step& step);
// In place on Y[a] (rows x cols): S(y * w_j + bias_j), w (then, with kBias, the biases) 16-bit at f16[b].
void tileScaleBiasRound(fabric::PeState& pe, const fabric::Step& step);

// Rotary on a tile Y[a] (rows tokens x cols, whole heads of b values), token i at position c + i,
// theta = scalar: referenceops rotary() on each row.
void tileRotary(fabric::PeState& pe, const fabric::Step& step);

// The prefill embedding (prefillembeddingkernel.h): a band's ids (rows, each a uint32's bits) at
// f32[a], its tile (rows x cols) after them; the PE's vocabulary rows [c, c + scalar) of the
// table, cols 16-bit values a row at f16[b]: each id among them has its row written to the tile.
void tileLookup(fabric::PeState& pe, const fabric::Step& step);
// In place on Y[a] (rows x cols): S(y + p), the position rows 16-bit at f16[b].
void tileAddPositions(fabric::PeState& pe, const fabric::Step& step);

// The prefill GEMM (prefillgemmkernel.h). Y[c] (rows x cols) += X[a] (rows x inner) W^T, W the
// cols x inner 16-bit tile at f16[b] (kBf16: bfloat16); each output a float sum of x * w in the
// order of the inner dimension.
void tileLinear(fabric::PeState& pe, const fabric::Step& step);
// In place on Y[a] (rows x cols): S(y + bias_j), the cols biases 16-bit at f16[b] (with kBias,
// computesteps.h; else S(y)).
void tileBiasRound(fabric::PeState& pe, const fabric::Step& step);

} // namespace waferscope::core::cyclelevel::steps
