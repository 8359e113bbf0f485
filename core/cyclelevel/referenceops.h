#pragma once

#include "core/cyclelevel/decoder.h"
#include "core/cyclelevel/weights.h"

#include <cstdint>
#include <span>
#include <vector>

namespace waferscope::core::cyclelevel {

// The numeric contract of a decode on the cycle-level wafer; its kernels follow it to the bit
// except for the order of the sums (Σ), which the fabric reduces in its own order. S() is
// roundToStorage() to the shape's 16-bit format. Everything else is IEEE float arithmetic,
// evaluated left to right as written and never fused (no FMA); exp, tanh and sqrt are std:: in
// float; n and d enter as float; Σ is a float sum from 0.0f, index 0 upwards.
//
//  1. Embedding: learned positions x = S(tok[t] + pos[p]); other positions x = tok[t].
//  2. LayerNorm over n values: mean = (Σ x) / n; var = (Σ (x - mean) * (x - mean)) / n;
//     inv = 1 / sqrt(var + eps); y = S((x - mean) * inv * w + b) (no "+ b" without a bias).
//     RMSNorm: inv = 1 / sqrt((Σ x * x) / n + eps); y = S(x * inv * w).
//  3. Linear: y_i = S(Σ_j W_ij x_j + b_i) (no "+ b_i" without a bias).
//  4. Rotary, on each head of q and k, pairs (i, i + d/2) for i < d/2 ("rotate half"):
//     angle = p * pow(theta, -2.0 * i / d) in double, c = float(cos angle), s = float(sin angle);
//     y_i = S(x_i * c - x_{i+d/2} * s), y_{i+d/2} = S(x_{i+d/2} * c + x_i * s).
//  5. The KV cache holds the S-rounded k and v, after rotary.
//  6. Attention of query head h, reading kv head h / (heads / kvHeads), at position p over the
//     keys j = 0..p: s_j = (Σ_i q_i k_ji) * (1 / sqrt(d)), with ALiBi s_j = that + slope_h *
//     float(j - p) (alibiSlope()); m = max_j s_j; e_j = exp(s_j - m); l = Σ_j e_j;
//     o_i = S((Σ_j e_j v_ji) / l).
//  7. Residual: x = S(x + y), y the block's S-rounded output.
//  8. Feed-forward: plain u = S(W_up b + b_up), h = S(act(u)); gated (SwiGLU: silu, GeGLU:
//     gelu) g = S(W_gate b + b_gate), u = S(W_up b + b_up), h = S(act(g) * u); then
//     out = S(W_down h + b_down). gelu(x) = 0.5f * x * (1.0f + tanh(c * (x + 0.044715f * x * x * x)))
//     with c = float(sqrt(2 / pi)) (GPT-2's tanh form, also for GeGLU); silu(x) = x / (1.0f + exp(-x));
//     relu(x) = x > 0 ? x : 0.
//  9. Mixture of experts: r_e = Σ_j Router_ej b_j, not rounded; q_e = exp(r_e - max r);
//     p_e = q_e / Σ q; the top k by p, ties to the lower index; w_e = p_e / Σ_{top k} p (in expert
//     order); out = S(Σ_{e in top k, in expert order} w_e * y_e), y_e the expert's S-rounded down
//     projection.
// 10. A block: a = norm1(x); q, k, v = linear(a); rotary; cache k, v; o = attention;
//     x = S(x + S(W_o o + b_o)); b = norm3(x); x = S(x + ffn(b)). After the last block
//     f = finalnorm(x); logit_v = Σ_h LmHead_vh f_h (+ bias_v), not rounded; the next token is
//     the argmax of the logits, ties to the lowest id.

// Σ_i a_i b_i in float, from index 0 upwards.
float dot(std::span<const float> a, std::span<const float> b);

void layerNorm(std::span<const float> x, std::span<const float> weight, std::span<const float> bias, float epsilon,
    Storage storage, std::span<float> out); // empty bias: none
void rmsNorm(
    std::span<const float> x, std::span<const float> weight, float epsilon, Storage storage, std::span<float> out);
// Norm of one token by the shape's norm with weights `weight` and `bias` (Norm1/Norm3/FinalNorm).
void norm(const DecoderShape& shape, const WeightTensor& weight, const WeightTensor& bias, std::span<const float> x,
    std::span<float> out);

// S(Σ_j weightRow_j x_j + bias), or without the bias when `hasBias` is false.
float linearOutput(
    std::span<const float> weightRow, std::span<const float> x, bool hasBias, float bias, Storage storage);
// One token through a seeded matrix: out_i = linearOutput(row i, x, bias present, bias_i).
void linear(const WeightTensor& weight, const WeightTensor& bias, std::span<const float> x, Storage storage,
    std::span<float> out);
// Σ_j W_ij x_j (+ b_i) in float, not rounded: router and LM head logits.
void logits(const WeightTensor& weight, const WeightTensor& bias, std::span<const float> x, std::span<float> out);

// Rotates every head of `vector` (heads x headDim values) in place for `position`.
void rotary(std::span<float> vector, std::int64_t headDim, std::int64_t position, double theta, Storage storage);

// ALiBi slope of head `head` of `heads`: 2^(-8(head + 1)/heads) for a power of two; otherwise the
// power-of-two slopes of the largest power of two below, then every other slope of twice it.
float alibiSlope(std::int64_t head, std::int64_t heads);

// One layer's cache: position j's kv heads at [j * width, (j + 1) * width) of keys and values.
struct KvView {
    std::span<const float> keys;
    std::span<const float> values;
    std::int64_t width = 0; // kvHeads x headDim
};

// Attention of one token at `position` (all query heads: heads x headDim values of `query`) over
// cache positions 0..position, by (6).
void attention(const DecoderShape& shape, std::span<const float> query, const KvView& cache, std::int64_t position,
    std::span<float> out);

float gelu(float x);
float silu(float x);
float relu(float x);
// The feed-forward's hidden value from its S-rounded up (and gate) outputs, by (8).
float ffnHidden(DecoderShape::Activation activation, float up, float gate, Storage storage);

// The experts a token goes to, in expert order, with their renormalised weights, by (9).
struct Routing {
    std::vector<std::int64_t> experts;
    std::vector<float> weights;
};
Routing route(std::span<const float> routerLogits, std::int64_t topK);

// Index of the largest value, the lowest on ties; and the gap to the second largest.
std::int64_t argmax(std::span<const float> values);
double topTwoGap(std::span<const float> values);

} // namespace waferscope::core::cyclelevel
