#pragma once

#include "core/cyclelevel/tokenmatrix.h"
#include "core/cyclelevel/weights.h"

#include <cstdint>
#include <span>
#include <vector>

namespace waferscope::core::cyclelevel {

// The reference decoder with its KV cache, by the contract of referenceops.h. forward() takes a
// batch of tokens (a prompt, or one generated token) at the next positions, drawing each weight
// once for the whole batch. Used from one thread at a time; it runs oneTBB loops inside. The
// weights must outlive it.
class ReferenceModel {
public:
    explicit ReferenceModel(const DecoderWeights& weights);

    // Positions already in the cache.
    std::int64_t length() const { return m_length; }

    // Runs `tokens` at positions length() .. length() + size - 1 through every block, appending
    // their keys and values to the cache; returns the logits of the last of them. Preconditions:
    // ids in [0, vocab), length() + size <= maxPositions.
    std::vector<float> forward(std::span<const std::int32_t> tokens);

    // One block over `x`, tokens at positions length() .., appending their keys and values to the
    // block's cache (forward() runs every block, then advances length()).
    void block(int layer, TokenMatrix& x);
    // A block's cache: position j's kv heads at [j kvWidth, (j + 1) kvWidth).
    const std::vector<float>& keys(int layer) const { return m_keys[std::size_t(layer)]; }
    const std::vector<float>& values(int layer) const { return m_values[std::size_t(layer)]; }

private:
    TokenMatrix embed(std::span<const std::int32_t> tokens) const;
    void attentionBlock(int layer, TokenMatrix& x);
    void feedForwardBlock(int layer, TokenMatrix& x) const;
    void expertFeedForward(int layer, int expert, const TokenMatrix& input, TokenMatrix& out) const;
    void mixtureOfExperts(int layer, const TokenMatrix& input, TokenMatrix& out) const;
    std::vector<float> lastTokenLogits(const TokenMatrix& x) const;
    WeightTensor tensor(Tensor which, int layer, int expert = 0) const
    {
        return m_weights.tensor(which, layer, expert);
    }

    const DecoderWeights& m_weights;
    const DecoderShape& m_shape; // m_weights.shape()
    std::vector<std::vector<float>> m_keys; // per layer: position j's kv heads at [j * kvWidth, (j + 1) * kvWidth)
    std::vector<std::vector<float>> m_values; // the same for values
    std::int64_t m_length = 0;
};

} // namespace waferscope::core::cyclelevel
