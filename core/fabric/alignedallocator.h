#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace waferscope::core::fabric {

// An allocator whose blocks start on a multiple of kAlign bytes, for arrays that threads stepping
// different row bands write every cycle: a band boundary then falls on a cache line (or page)
// boundary whenever a row's share of the array is a whole number of them.
template <typename T, std::size_t kAlign>
struct AlignedAllocator {
    using value_type = T;
    template <typename U>
    struct rebind {
        using other = AlignedAllocator<U, kAlign>;
    };
    static constexpr std::align_val_t kAlignment { kAlign };
    AlignedAllocator() = default;
    template <typename U>
    AlignedAllocator(const AlignedAllocator<U, kAlign>&) noexcept
    {
    }
    T* allocate(std::size_t count) { return static_cast<T*>(::operator new(count * sizeof(T), kAlignment)); }
    void deallocate(T* block, std::size_t) noexcept { ::operator delete(block, kAlignment); }
    template <typename U>
    bool operator==(const AlignedAllocator<U, kAlign>&) const noexcept
    {
        return true;
    }
};
template <typename T>
using CacheLineAllocator = AlignedAllocator<T, 64>;
// Pages: a hardware prefetcher's stream stops at a page boundary, so arrays whose rows are whole
// pages never have one core's prefetches run into the rows of another core's band.
template <typename T>
using PageAllocator = AlignedAllocator<T, 4096>;
using CounterVector = std::vector<std::uint32_t, CacheLineAllocator<std::uint32_t>>;

} // namespace waferscope::core::fabric
