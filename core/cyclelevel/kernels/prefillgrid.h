#pragma once

#include "core/kernels/geometry.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// Where part of a prefill kernel's output is after a run (an attention head's, a GEMM's): tokens x
// dims values, row-major, at f32 offset `offset` of PE `pe`.
struct PrefillOutputTile {
    Pe pe;
    std::uint32_t offset = 0;
    std::uint32_t firstToken = 0;
    std::uint32_t tokens = 0;
    std::uint32_t firstDim = 0;
    std::uint32_t dims = 0;
};

// The tiling and the shift schedule of one head's prefill attention on a g x g block of PEs
// (PrefillAttentionKernel). Block row y holds query band y, block column x key band x: the
// bands split the T tokens as evenly as they go (band b = tokens [T b / g, T (b + 1) / g)), and
// the head dimension splits into g blocks the same way. Both rings of the block (along each row
// and down each column) visit their g PEs in the interleaved order 0, 2, 4, ..., 5, 3, 1, so
// that every step of a ring is a shift of one or two hops between physical neighbours; at step s
// PE (x, y) holds the tiles of head-dimension block (ring(x) + ring(y) + s) mod g, and each
// shift passes a tile from ring position k + 1 to k.
// PrefillGemmKernel uses the same rings and splits without the masking: its bands split the
// tokens, its blocks the inputs, and blockAt() names the token band a PE holds at a step.
//
// Causal masking: tile (x, y) takes part only when x <= y (x == y: the diagonal, masked inside).
// A ring passes a tile on only while a PE further along its remaining visits takes part, and a
// partial output starts at the first PE that takes part: the masked PEs compute nothing, and
// relay only what a later PE of their ring needs.
class PrefillGrid;

// A kernel's input tiles in place (a kernel before's outputs), checked against what its PEs start
// with: PE (x, y) of the block (at(x, y) on the wafer) token band band(x, y) of block x, once;
// every PE whose band and block are not empty has its tile. Returns each PE's f32 offset, per
// (y, x), -1 where none; throws std::logic_error naming `kernel` and the PE.
std::vector<std::int64_t> tilesInPlace(const std::string& kernel, const std::vector<PrefillOutputTile>& tiles,
    const PrefillGrid& grid, const std::function<Pe(int, int)>& at, const std::function<int(int, int)>& band);

class PrefillGrid {
public:
    PrefillGrid(int grid, std::int64_t tokens, std::int64_t headDim);

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
    // The head-dimension block of the tiles PE (x, y) holds at step s.
    int blockAt(int x, int y, int step) const { return (ringPosition(x) + ringPosition(y) + step) % m_grid; }

    // Tile (x, y) has keys and queries and lies on or below the diagonal.
    bool computes(int x, int y) const { return x <= y && bandSize(x) > 0 && bandSize(y) > 0; }
    // PE (x, y) takes part in row y's softmax: the chain over columns 0..y.
    bool inSoftmax(int x, int y) const { return x <= y && bandSize(y) > 0; }

    // Along row y's ring: whether a PE the tile at column x meets after step s takes part;
    // whether one it met before step s did.
    bool rowNeedsLater(int x, int y, int step) const;
    bool rowNeededBefore(int x, int y, int step) const;
    // Down column x's ring, the same for the tile at row y.
    bool columnNeedsLater(int x, int y, int step) const;

    // The transfers of the schedule, PE (x, y) at step s (a step's tiles are sent after its
    // compute and arrive for step s + 1):
    // query tile (first phase) or partial output (second) along the row to ringTarget(x).
    bool sendsQuery(int x, int y, int step) const { return rowNeedsLater(x, y, step); }
    bool sendsPartial(int x, int y, int step) const
    {
        return (computes(x, y) || rowNeededBefore(x, y, step)) && rowNeedsLater(x, y, step);
    }
    // Key tile (first phase) or value tile (second) up the column to ringTarget(y).
    bool sendsColumnTile(int x, int y, int step) const { return columnNeedsLater(x, y, step); }
    // Whether the tiles PE (x, y) holds at step 0 are fed to it at all.
    bool fedQuery(int x, int y) const { return computes(x, y) || rowNeedsLater(x, y, 0); }
    bool fedColumnTile(int x, int y) const { return computes(x, y) || columnNeedsLater(x, y, 0); }
    // The partial output PE (x, y) computes at step s starts from zero / is complete there.
    bool partialStarts(int x, int y, int step) const { return !rowNeededBefore(x, y, step); }
    bool partialEnds(int x, int y, int step) const { return !rowNeedsLater(x, y, step); }

private:
    int m_grid;
    std::vector<std::uint32_t> m_bands; // g + 1 token boundaries
    std::vector<std::uint32_t> m_blocks; // g + 1 head-dimension boundaries
    std::vector<int> m_position; // per index: ring position
    std::vector<int> m_member; // per ring position: index
};

} // namespace waferscope::core::cyclelevel
