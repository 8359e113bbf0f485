#include "core/cyclelevel/kernels/prefillcombinekernel.h"

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

PrefillCombineKernel::PrefillCombineKernel(PrefillCombineSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
{
    if (m_spec.first.size() != m_spec.second.size())
        throw std::logic_error(m_spec.name + ": " + std::to_string(m_spec.first.size()) + " tiles against "
            + std::to_string(m_spec.second.size()));
    for (const PrefillOutputTile& a : m_spec.first) {
        const bool paired = std::any_of(m_spec.second.begin(), m_spec.second.end(), [&](const PrefillOutputTile& b) {
            return b.pe.x == a.pe.x && b.pe.y == a.pe.y && b.firstToken == a.firstToken && b.tokens == a.tokens
                && b.firstDim == a.firstDim && b.dims == a.dims;
        });
        if (!paired)
            throw std::logic_error(m_spec.name + ": the tile at PE " + where(a) + " (tokens ["
                + std::to_string(a.firstToken) + ", " + std::to_string(a.firstToken + a.tokens) + ") x values ["
                + std::to_string(a.firstDim) + ", " + std::to_string(a.firstDim + a.dims)
                + ")) has no partner of the same tokens and values there");
    }
}

void PrefillCombineKernel::load(StaticColorFabric& fabric)
{
    m_outputs.clear();
    for (const PrefillOutputTile& a : m_spec.first) {
        PrefillOutputTile out = a;
        out.offset = fabric.pe(a.pe.x, a.pe.y).allocF32(std::max<std::uint32_t>(1, a.tokens * a.dims));
        m_outputs.push_back(out);
    }
}

void PrefillCombineKernel::program(ProgramWriter& writer, int) const
{
    for (std::size_t t = 0; t < m_spec.first.size(); ++t) {
        const PrefillOutputTile& a = m_spec.first[t];
        const auto b = std::find_if(m_spec.second.begin(), m_spec.second.end(),
            [&](const PrefillOutputTile& tile) { return tile.pe.x == a.pe.x && tile.pe.y == a.pe.y; });
        const std::uint32_t size = a.tokens * a.dims;
        if (size == 0)
            continue;
        if (m_spec.combination == PrefillCombination::Residual) // S(x + y): x at c, y at a
            writer.compute(a.pe.x, a.pe.y, steps::residual, steps::elementwiseCycles(size, 1, m_context.simdWidth),
                b->offset, size, a.offset, m_outputs[t].offset, 0.0f, m_context.flags());
        else // S(act(gate) * up): the gate at a, up at c
            writer.compute(a.pe.x, a.pe.y, steps::gated, steps::elementwiseCycles(size, 8, m_context.simdWidth),
                a.offset, size, b->offset, m_outputs[t].offset, float(int(m_spec.activation)), m_context.flags());
    }
}

KernelCost PrefillCombineKernel::closedForm() const
{
    PrefillCombineShape shape;
    shape.grid = std::max(1, m_spec.frame.w);
    for (const PrefillOutputTile& tile : m_spec.first)
        shape.sizes.push_back(std::int64_t(tile.tokens) * tile.dims);
    shape.opsPerValue = m_spec.combination == PrefillCombination::Residual ? 1 : 8;
    shape.simdWidth = m_context.simdWidth;
    return costPrefillCombine(shape);
}

} // namespace waferscope::core::cyclelevel
