#include "core/cyclelevel/kernels/prefillgrid.h"

#include <stdexcept>
#include <string>

namespace waferscope::core::cyclelevel {

PrefillGrid::PrefillGrid(int grid, std::int64_t tokens, std::int64_t headDim)
    : m_grid(grid)
{
    if (grid < 1 || tokens < 1 || headDim < 1)
        throw std::logic_error("prefill grid: the grid, tokens and head size must be positive (got "
            + std::to_string(grid) + ", " + std::to_string(tokens) + ", " + std::to_string(headDim) + ")");
    for (int b = 0; b <= grid; ++b) {
        m_bands.push_back(std::uint32_t(tokens * b / grid));
        m_blocks.push_back(std::uint32_t(headDim * b / grid));
    }
    // The interleaved ring: even indices outwards, then odd ones back.
    m_member.resize(std::size_t(grid));
    m_position.resize(std::size_t(grid));
    const int outward = (grid + 1) / 2;
    for (int position = 0; position < grid; ++position) {
        const int index = position < outward ? 2 * position : 2 * (grid - 1 - position) + 1;
        m_member[std::size_t(position)] = index;
        m_position[std::size_t(index)] = position;
    }
}

bool PrefillGrid::rowNeedsLater(int x, int y, int step) const
{
    for (int t = 1; t < m_grid - step; ++t)
        if (computes(ringMember(ringPosition(x) - t), y))
            return true;
    return false;
}

bool PrefillGrid::rowNeededBefore(int x, int y, int step) const
{
    for (int t = 1; t <= step; ++t)
        if (computes(ringMember(ringPosition(x) + t), y))
            return true;
    return false;
}

bool PrefillGrid::columnNeedsLater(int x, int y, int step) const
{
    for (int t = 1; t < m_grid - step; ++t)
        if (computes(x, ringMember(ringPosition(y) - t)))
            return true;
    return false;
}

} // namespace waferscope::core::cyclelevel
