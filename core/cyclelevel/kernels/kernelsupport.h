#pragma once

// Private to the region kernels (normcolumn.cpp, gemvkernel.cpp, attentionkernel.cpp, embeddingkernel.cpp)
// and the prefill kernels (prefillattentionkernel.cpp, prefillgemmkernel.cpp).
#include "core/cyclelevel/kernels/regionkernel.h"
#include "core/fabric/half.h"

#include <cstdlib>
#include <vector>

namespace waferscope::core::cyclelevel::detail {

using namespace fabric;

inline std::uint16_t encode(float value, const KernelContext& context)
{
    return context.storage == Storage::Bf16 ? floatToBfloat16(value) : floatToHalf(value);
}

// A chain along `pes` in order: PE p > 0 receives on chain[(p - 1) % 2] from p - 1, PE p sends on
// chain[p % 2] to p + 1. Adds the hops of both colors to `trees`.
inline void chainHops(const std::vector<Pe>& pes, StreamTree trees[2])
{
    for (std::size_t p = 0; p + 1 < pes.size(); ++p) {
        const Pe from = pes[p];
        const Pe to = pes[p + 1];
        const int direction = to.x > from.x ? East : to.x < from.x ? West : to.y > from.y ? South : North;
        trees[p % 2].hop(from.x, from.y, Fabric::kRampPort, directionBit(direction));
        trees[p % 2].hop(to.x, to.y, opposite(direction), kRampBit);
    }
}

// A straight path from `from` to `to` (same row or column), delivered only at `to`.
inline void straightPath(StreamTree& tree, Pe from, Pe to)
{
    const int direction = to.x > from.x ? East : to.x < from.x ? West : to.y > from.y ? South : North;
    const int length = std::abs(to.x - from.x) + std::abs(to.y - from.y) + 1;
    std::vector<bool> deliver(std::size_t(length), false);
    deliver.back() = true;
    tree.run(from.x, from.y, direction, length, Fabric::kRampPort, deliver);
}

// Takes a lane of `laneSize` wavelets whole and stores `size` of them, from the `skip`th, at `offset`.
inline DataTask keepTask(std::uint32_t offset, std::uint32_t laneSize, std::uint32_t skip, std::uint32_t size)
{
    DataTask task = storeTask(offset, laneSize);
    task.skip = skip;
    task.use = size;
    return task;
}

} // namespace waferscope::core::cyclelevel::detail
