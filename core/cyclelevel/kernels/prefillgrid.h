#pragma once

#include "core/kernels/geometry.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// Where part of a prefill kernel's output is after a run (an attention head's, a GEMM's): tokens x
// dims values, row-major, at f32 offset `offset` of PE `pe` (dimsMajor: dims x tokens, as a
// weight-streaming GEMM accumulates them).
struct PrefillOutputTile {
    Pe pe;
    std::uint32_t offset = 0;
    std::uint32_t firstToken = 0;
    std::uint32_t tokens = 0;
    std::uint32_t firstDim = 0;
    std::uint32_t dims = 0;
    bool dimsMajor = false;
};

// The tiling and the shift schedule of the prefill kernels on a g x g block of PEs: the bands
// split the T tokens as evenly as they go (band b = tokens [T b / g, T (b + 1) / g)), and the
// blocks split a kernel's other dimension the same way (a GEMM's inputs, a norm's hidden values).
// Both rings of the block (along each row and up each column) visit their g PEs in the
// interleaved order 0, 2, 4, ..., 5, 3, 1 (MeshGEMM's), so that every step of a ring is a shift
// of one or two hops between physical neighbours; at step s PE (x, y) holds band or block
// (ring(x) + ring(y) + s) mod g (blockAt()), and each shift passes a tile from ring position
// k + 1 to k.
class PrefillGrid {
public:
    // A g x g block over `tokens` tokens and a blocked dimension of `blocked` values.
    PrefillGrid(int grid, std::int64_t tokens, std::int64_t blocked);

    int size() const { return m_grid; }
    std::uint32_t bandBegin(int band) const { return m_bands[std::size_t(band)]; }
    std::uint32_t bandSize(int band) const { return m_bands[std::size_t(band) + 1] - m_bands[std::size_t(band)]; }
    std::uint32_t blockBegin(int block) const { return m_blocks[std::size_t(block)]; }
    std::uint32_t blockSize(int block) const { return m_blocks[std::size_t(block) + 1] - m_blocks[std::size_t(block)]; }

    // The ring position of row or column index i, and the index at a ring position.
    int ringPosition(int index) const { return m_position[std::size_t(index)]; }
    int ringMember(int position) const { return m_member[std::size_t((position % m_grid + m_grid) % m_grid)]; }
    // Whom index i sends its ring tiles to (ring position - 1), and whom it receives them from.
    int ringTarget(int index) const { return ringMember(ringPosition(index) - 1); }
    int ringSource(int index) const { return ringMember(ringPosition(index) + 1); }
    // The ring edge (k: position k + 1 to k) index i sends its tiles on, or receives them on.
    std::size_t ringEdge(int index, bool incoming) const
    {
        return std::size_t((ringPosition(index) + (incoming ? 0 : m_grid - 1)) % m_grid);
    }
    // The band (or block) of the tiles PE (x, y) holds at step s.
    int blockAt(int x, int y, int step) const { return (ringPosition(x) + ringPosition(y) + step) % m_grid; }

private:
    int m_grid;
    std::vector<std::uint32_t> m_bands; // g + 1 token boundaries
    std::vector<std::uint32_t> m_blocks; // g + 1 block boundaries
    std::vector<int> m_position; // per index: ring position
    std::vector<int> m_member; // per ring position: index
};

// A kernel's input tiles in place (a kernel before's outputs), checked against what its PEs start
// with: PE (x, y) of the block (at(x, y) on the wafer) token band band(x, y) of block x, once;
// every PE whose band and block are not empty has its tile. Returns each PE's f32 offset, per
// (y, x), -1 where none; throws std::logic_error naming `kernel` and the PE.
std::vector<std::int64_t> tilesInPlace(const std::string& kernel, const std::vector<PrefillOutputTile>& tiles,
    const PrefillGrid& grid, const std::function<Pe(int, int)>& at, const std::function<int(int, int)>& band);

} // namespace waferscope::core::cyclelevel
