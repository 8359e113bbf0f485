#include "core/cyclelevel/kernels/prefillgrid.h"

#include <stdexcept>
#include <string>

namespace waferscope::core::cyclelevel {

PrefillGrid::PrefillGrid(int grid, std::int64_t tokens, std::int64_t blocked)
    : m_grid(grid)
{
    if (grid < 1 || tokens < 1 || blocked < 1)
        throw std::logic_error("prefill grid: the grid, tokens and blocked values must be positive (got "
            + std::to_string(grid) + ", " + std::to_string(tokens) + ", " + std::to_string(blocked) + ")");
    for (int b = 0; b <= grid; ++b) {
        m_bands.push_back(std::uint32_t(tokens * b / grid));
        m_blocks.push_back(std::uint32_t(blocked * b / grid));
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

std::vector<std::int64_t> tilesInPlace(const std::string& kernel, const std::vector<PrefillOutputTile>& tiles,
    const PrefillGrid& grid, const std::function<Pe(int, int)>& at, const std::function<int(int, int)>& band)
{
    const int g = grid.size();
    std::vector<std::int64_t> inPlace(std::size_t(g) * std::size_t(g), -1);
    const auto where = [](Pe pe) { return "(" + std::to_string(pe.x) + ", " + std::to_string(pe.y) + ")"; };
    const auto range = [](std::uint32_t begin, std::uint32_t size) {
        return "[" + std::to_string(begin) + ", " + std::to_string(begin + size) + ")";
    };
    for (const PrefillOutputTile& tile : tiles) {
        int found = -1;
        for (int i = 0; i < g * g && found < 0; ++i)
            if (at(i % g, i / g).x == tile.pe.x && at(i % g, i / g).y == tile.pe.y)
                found = i;
        if (found < 0)
            throw std::logic_error(kernel + ": an input tile at PE " + where(tile.pe) + " is outside the block");
        const int x = found % g;
        const int b = band(x, found / g);
        if (inPlace[std::size_t(found)] >= 0 || tile.firstToken != grid.bandBegin(b) || tile.tokens != grid.bandSize(b)
            || tile.firstDim != grid.blockBegin(x) || tile.dims != grid.blockSize(x))
            throw std::logic_error(kernel + ": the input tile at PE " + where(tile.pe) + " holds tokens "
                + range(tile.firstToken, tile.tokens) + " x values " + range(tile.firstDim, tile.dims)
                + "; the PE starts with tokens " + range(grid.bandBegin(b), grid.bandSize(b)) + " x values "
                + range(grid.blockBegin(x), grid.blockSize(x)) + ", once");
        inPlace[std::size_t(found)] = tile.offset;
    }
    for (int y = 0; y < g; ++y)
        for (int x = 0; x < g; ++x)
            if (grid.bandSize(band(x, y)) * grid.blockSize(x) > 0 && inPlace[std::size_t(y * g + x)] < 0)
                throw std::logic_error(kernel + ": PE " + where(at(x, y)) + " has no input tile in place");
    return inPlace;
}

} // namespace waferscope::core::cyclelevel
