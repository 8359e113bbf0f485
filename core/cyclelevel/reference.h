#pragma once

#include "core/common/expected.h"
#include "core/cyclelevel/decoder.h"
#include "core/cyclelevel/weights.h"

#include <cstdint>
#include <vector>

namespace waferscope::core::cyclelevel {

// `count` token ids in [0, vocab), a pure function of the seed: the prompt both the reference and
// the cycle-level run decode from.
std::vector<std::int32_t> promptTokens(const DecoderShape& shape, std::uint64_t seed, int count);

struct GenerationResult {
    std::vector<std::int32_t> prompt;
    std::vector<std::int32_t> tokens; // generated, in order
    std::vector<std::vector<float>> logits; // logits[i]: the vocab logits tokens[i] is the argmax of
    std::vector<double> top2Gap; // logits[i]'s best minus its second best: how safe the argmax is
};

// Greedy generation by the contract of referenceops.h: a prefill of the prompt (every prompt
// position through every block, the KV cache filled; the first token is the argmax of the last
// prompt position's logits), then each generated token fed back, `tokens` in all. Each weight is
// drawn once per forward pass and shared by its tokens; parallel inside with oneTBB.
// A BadInput diagnostic for an empty prompt, an id outside the vocabulary, tokens < 1, or more
// than maxPositions positions (prompt + tokens - 1, the last token is not fed back).
Expected<GenerationResult> referenceGenerate(
    const DecoderShape& shape, const DecoderWeights& weights, const std::vector<std::int32_t>& prompt, int tokens);

} // namespace waferscope::core::cyclelevel
