#include "core/cyclelevel/kernels/prefillshiftkernel.h"

#include "core/cyclelevel/kernels/computesteps.h"
#include "core/kernels/prefillshift.h"

#include <algorithm>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;

namespace {

std::string where(const PrefillOutputTile& tile)
{
    return "(" + std::to_string(tile.pe.x) + ", " + std::to_string(tile.pe.y) + ")";
}

} // namespace

PrefillShiftKernel::PrefillShiftKernel(PrefillShiftSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
    , m_grid(std::max(1, m_spec.frame.w), 1, 1)
{
    const int g = size();
    if (g < 1 || m_spec.frame.h < g || m_spec.frame.westward || m_spec.steps < 0)
        throw std::logic_error(m_spec.name + ": needs an eastward g x g block and steps >= 0");
    m_start.assign(std::size_t(g) * std::size_t(g), -1);
    for (std::size_t t = 0; t < m_spec.tiles.size(); ++t) {
        const PrefillOutputTile& tile = m_spec.tiles[t];
        const int x = tile.pe.x - m_spec.frame.x(0);
        const int y = tile.pe.y - m_spec.frame.y(0);
        if (x < 0 || x >= g || y < 0 || y >= g)
            throw std::logic_error(m_spec.name + ": a tile at PE " + where(tile) + " is outside the block");
        int& start = m_start[std::size_t(y * g + x)];
        if (start >= 0)
            throw std::logic_error(m_spec.name + ": two tiles at PE " + where(tile));
        start = int(t);
    }
}

int PrefillShiftKernel::heldAt(int x, int y, int moved) const
{
    // Up the column: the tile a PE holds after `moved` shifts started `moved` ring positions below.
    return m_start[std::size_t(m_grid.ringMember(m_grid.ringPosition(y) + moved) * size() + x)];
}

std::uint32_t PrefillShiftKernel::bufferAt(int x, int y, int moved) const
{
    if (moved == 0)
        return m_spec.tiles[std::size_t(heldAt(x, y, 0))].offset;
    return m_buffers[std::size_t(2 * (y * size() + x) + moved % 2)];
}

void PrefillShiftKernel::needRings(PrefillRings& rings) const
{
    for (int s = 0; s < m_spec.steps && size() > 1; ++s)
        for (int y = 0; y < size(); ++y)
            for (int x = 0; x < size(); ++x)
                if (sizeOf(heldAt(x, y, s)) > 0)
                    rings.needColumn(x, y);
}

void PrefillShiftKernel::useRings(const PrefillRings& rings)
{
    m_columnShift = rings.columnColors();
}

void PrefillShiftKernel::load(StaticColorFabric& fabric)
{
    const int g = size();
    std::uint32_t widest = 1;
    for (const PrefillOutputTile& tile : m_spec.tiles)
        widest = std::max(widest, tile.tokens * tile.dims);
    m_buffers.clear();
    m_outputs.clear();
    const int steps = g > 1 ? m_spec.steps : 0;
    for (int y = 0; y < g; ++y)
        for (int x = 0; x < g; ++x) {
            PeState& pe = fabric.pe(at(x, y).x, at(x, y).y);
            m_buffers.push_back(pe.allocF32(widest));
            m_buffers.push_back(pe.allocF32(widest));
        }
    for (int y = 0; y < g; ++y)
        for (int x = 0; x < g; ++x) {
            const int tile = heldAt(x, y, steps);
            if (tile < 0)
                continue;
            PrefillOutputTile moved = m_spec.tiles[std::size_t(tile)];
            moved.pe = at(x, y);
            moved.offset = steps == 0 ? moved.offset : bufferAt(x, y, steps);
            m_outputs.push_back(moved);
        }
}

void PrefillShiftKernel::program(ProgramWriter& writer, int) const
{
    const int g = size();
    if (g < 2)
        return;
    for (int y = 0; y < g; ++y) {
        for (int x = 0; x < g; ++x) {
            const Pe pe = at(x, y);
            const int out = m_columnShift[m_grid.ringEdge(y, false)];
            const int in = m_columnShift[m_grid.ringEdge(y, true)];
            for (int s = 0; s < m_spec.steps; ++s) {
                const std::uint32_t sent = sizeOf(heldAt(x, y, s));
                const std::uint32_t received = sizeOf(heldAt(x, y, s + 1));
                if (sent > 0)
                    writer.send(pe.x, pe.y, out, bufferAt(x, y, s), sent);
                if (received == 0)
                    continue;
                if (sent == 0)
                    writer.awaitSend(pe.x, pe.y);
                writer.armAndAwait(
                    pe.x, pe.y, in, storeTask(m_buffers[std::size_t(2 * (y * g + x) + (s + 1) % 2)], received));
            }
        }
    }
}

KernelCost PrefillShiftKernel::closedForm() const
{
    PrefillShiftShape shape { size(), m_spec.steps, {} };
    for (int y = 0; y < size(); ++y)
        for (int x = 0; x < size(); ++x)
            shape.sizes.push_back(sizeOf(heldAt(x, y, 0)));
    return costPrefillShift(shape);
}

} // namespace waferscope::core::cyclelevel
