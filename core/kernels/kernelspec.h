#pragma once

// The vocabulary the region kernels share at both levels: the model-level engine's closed forms
// (core/engine/decodekernelcosts) and the cycle-level programs (core/cyclelevel/regionkernels)
// describe a region's kernel with these same types, so the two cannot drift apart.

#include "core/common/names.h"

#include <cstdint>

namespace waferscope::core {

// Input lanes a GEMV column turns down at most (a color each).
constexpr int kTurnColors = 6;

// Which kernel runs a region of a decoder's decode token. Names: "embedding", "norm+gemv" (a GEMV
// behind a norm in the region's first column), "gemv", "attention", "experts", "lm_head".
enum class RegionKernelKind : std::uint8_t { Embedding, NormGemv, Gemv, Attention, Experts, LmHead };
template <>
std::span<const EnumName<RegionKernelKind>> nameTable<RegionKernelKind>();
const char* toString(RegionKernelKind kind);

// What a GEMV region does with its sums at the PE that ends each output lane (S: rounding to the
// model's 16-bit type).
enum class Epilogue : std::uint8_t {
    Round, // S(y + b)
    Rotary, // S(y + b), then rotary of the lane (one head) at the token's position
    Residual, // S(x + S(y + b)), x the side input
    Activation, // act(S(y + b)) rounded (a plain feed-forward's hidden values)
    Gated, // S(act(S(y + b)) * up), up the side input (this region is the gate)
    Logits, // y + b, not rounded, then the lane's argmax, reduced over the lanes
    Route, // MoE router: y + b, not rounded; the routing weights of the top k sent on (one lane)
    Combine, // an MoE expert's down projection: its S(y + b) times its routing weight, summed over the
             // experts in order along a chain of their exits; the last adds the side input x: S(x + S(sum))
};

// A GEMV's activation (Gelu: the tanh form, gelu_new).
enum class Activation : std::uint8_t { Gelu, Relu, Silu, SwiGlu, GeGlu };
template <>
std::span<const EnumName<Activation>> nameTable<Activation>();
const char* toString(Activation activation);

// Which pass of a step a kernel runs: the forward pass (every kernel today, decode and prefill),
// or a training step's backward passes, the deltas to the inputs and the weights' gradients.
// A training pass streams its weights in from the wafer's edge (KernelSpec::streamed) rather
// than holding them in SRAM.
enum class Pass : std::uint8_t { Forward, BackwardDelta, BackwardGradient };
template <>
std::span<const EnumName<Pass>> nameTable<Pass>();

template <typename Json>
void to_json(Json&, RegionKernelKind) = delete;

} // namespace waferscope::core
