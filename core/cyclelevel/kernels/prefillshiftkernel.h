#pragma once

#include "core/cyclelevel/kernels/prefillgrid.h"
#include "core/cyclelevel/kernels/prefillkernel.h"
#include "core/cyclelevel/kernels/prefillrings.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// Moves every tile `steps` ring positions up the columns (ring position k + 1 to k, the block's
// shared rings). A tile of token band b on PE (x, y) lies as a plain GEMM with band offset c
// takes it (b = blockAt(x, y, 0) + c); one position up, it lies as one with offset c + 1 does.
struct PrefillShiftSpec {
    std::string name;
    Frame frame; // the block: its first g columns and rows, g = frame.w
    int steps = 1;
    std::vector<PrefillOutputTile> tiles;
};

class PrefillShiftKernel final : public PrefillKernel {
public:
    // Refuses (std::logic_error, naming the kernel) a tile outside the block or two at a PE.
    PrefillShiftKernel(PrefillShiftSpec spec, const KernelContext& context);
    const std::string& name() const override { return m_spec.name; }
    void needRings(PrefillRings& rings) const override;
    void useRings(const PrefillRings& rings) override;
    void load(fabric::StaticColorFabric& fabric) override;
    void program(ProgramWriter& writer, int inputColor) const override;
    const std::vector<PrefillOutputTile>& outputTiles() const override { return m_outputs; }
    KernelCost closedForm() const override;

private:
    // The tile PE (x, y) holds after `moved` shifts: -1 for none.
    int heldAt(int x, int y, int moved) const;
    std::uint32_t sizeOf(int tile) const
    {
        return tile < 0 ? 0 : m_spec.tiles[std::size_t(tile)].tokens * m_spec.tiles[std::size_t(tile)].dims;
    }
    int size() const { return m_spec.frame.w; }
    Pe at(int x, int y) const { return { m_spec.frame.x(x), m_spec.frame.y(y) }; }
    std::uint32_t bufferAt(int x, int y, int moved) const;

    PrefillShiftSpec m_spec;
    KernelContext m_context;
    PrefillGrid m_grid;
    std::vector<int> m_start; // per (y, x): the tile it starts with, or -1
    std::vector<std::uint32_t> m_buffers; // per (y, x): two buffers of the widest tile
    std::vector<int> m_columnShift;
    std::vector<PrefillOutputTile> m_outputs;
};

} // namespace waferscope::core::cyclelevel
