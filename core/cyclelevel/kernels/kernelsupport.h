#pragma once

// Private to the region kernels (normcolumn.cpp, gemvkernel.cpp, attentionkernel.cpp, embeddingkernel.cpp).
#include "core/cyclelevel/kernels/regionkernel.h"
#include "core/fabric/half.h"

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

} // namespace waferscope::core::cyclelevel::detail
