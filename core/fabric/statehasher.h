#pragma once

// Private to the fabric's .cpp files: the hash of Fabric::digest().
#include <cstddef>
#include <cstdint>
#include <vector>

namespace waferscope::core::fabric {

// FNV-1a over raw bytes, then a final avalanche (result()): enough to tell two states apart.
struct StateHasher {
    std::uint64_t value = 1469598103934665603ull;
    void bytes(const void* data, std::size_t size)
    {
        const auto* p = static_cast<const unsigned char*>(data);
        for (std::size_t i = 0; i < size; ++i)
            value = (value ^ p[i]) * 1099511628211ull;
    }
    template <typename T, typename Allocator>
    void vector(const std::vector<T, Allocator>& values)
    {
        bytes(values.data(), values.size() * sizeof(T));
    }
    template <typename T>
    void scalar(const T& item)
    {
        bytes(&item, sizeof(T));
    }
    std::uint64_t result() const { return value ^ (value >> 29); }
};

} // namespace waferscope::core::fabric
