#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace waferscope::core::cyclelevel {

// Activations of a batch of tokens: one row of `width` values per token.
struct TokenMatrix {
    TokenMatrix() = default;
    TokenMatrix(std::int64_t tokenCount, std::int64_t rowWidth)
        : tokens(tokenCount)
        , width(rowWidth)
        , values(std::size_t(tokenCount * rowWidth), 0.0f)
    {
    }

    std::span<float> row(std::int64_t token) { return { values.data() + token * width, std::size_t(width) }; }
    std::span<const float> row(std::int64_t token) const
    {
        return { values.data() + token * width, std::size_t(width) };
    }

    std::int64_t tokens = 0;
    std::int64_t width = 0;
    std::vector<float> values;
};

} // namespace waferscope::core::cyclelevel
