#include "core/kernels/geometry.h"

namespace waferscope::core {

Lanes lanesAt(int y0, const std::vector<DecodeLane>& lanes)
{
    Lanes out;
    std::uint32_t begin = 0;
    for (const DecodeLane& lane : lanes) {
        out.push_back({ y0 + lane.row, begin, begin + std::uint32_t(lane.size) });
        begin += std::uint32_t(lane.size);
    }
    return out;
}

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
