#include "core/kernels/geometry.h"

namespace waferscope::core {

std::uint32_t blockBegin(std::int64_t total, std::int64_t parts, std::int64_t part)
{
    return std::uint32_t(total * part / parts);
}

Lanes evenLanes(int y0, int count, std::uint32_t length)
{
    Lanes lanes;
    for (int i = 0; i < count; ++i)
        lanes.push_back({ y0 + i, blockBegin(length, count, i), blockBegin(length, count, i + 1) });
    return lanes;
}

} // namespace waferscope::core
