#include "core/cyclelevel/kernels/attentionkernel.h"

#include "core/cyclelevel/kernels/computesteps.h"
#include "core/cyclelevel/kernels/kernelsupport.h"
#include "core/cyclelevel/referenceops.h"
#include "core/fabric/half.h"
#include "core/kernels/attention.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;
using detail::chainHops;
using detail::encode;

// ---- AttentionKernel ----

AttentionKernel::AttentionKernel(AttentionSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
{
    if (m_spec.rowsPerHead < 1 || m_spec.rowsPerHead > m_spec.headDim)
        throw std::logic_error(m_spec.name + ": " + std::to_string(m_spec.rowsPerHead) + " rows per head for heads of "
            + std::to_string(m_spec.headDim));
    if (rows() > m_spec.frame.h)
        throw std::logic_error(m_spec.name + ": " + std::to_string(m_spec.heads) + " heads of "
            + std::to_string(m_spec.rowsPerHead) + " rows need " + std::to_string(rows()) + " rows, the region has "
            + std::to_string(m_spec.frame.h));
    m_slots = (m_spec.capacity + m_spec.frame.w - 1) / m_spec.frame.w;
    if (m_spec.headDim >= 65536 || m_slots >= 65536)
        throw std::logic_error(m_spec.name + ": head or cache too large for one PE");
}

std::uint32_t AttentionKernel::partBegin(int r) const
{
    return std::uint32_t(std::int64_t(m_spec.headDim) * r / m_spec.rowsPerHead);
}

std::vector<Pe> AttentionKernel::taps(std::size_t lane) const
{
    std::vector<Pe> pes;
    for (int u = 0; u < m_spec.frame.w; ++u)
        pes.push_back({ m_spec.frame.x(u), m_spec.frame.y(int(lane)) });
    return pes;
}

Lanes AttentionKernel::outputLanes() const
{
    Lanes lanes;
    const auto d = std::uint32_t(m_spec.headDim);
    for (int h = 0; h < m_spec.heads; ++h)
        for (int r = 0; r < m_spec.rowsPerHead; ++r)
            lanes.push_back({ m_spec.frame.y(h * m_spec.rowsPerHead + r), std::uint32_t(h) * d + partBegin(r),
                std::uint32_t(h) * d + partBegin(r + 1) });
    return lanes;
}

void AttentionKernel::route(RouteBook& book)
{
    const Frame& frame = m_spec.frame;
    const int rowsPerHead = m_spec.rowsPerHead;
    if (rowsPerHead > 1) {
        // Each column of a head: partial scores down its rows, the sums back up.
        StreamTree chain[2] = { StreamTree(m_spec.name + " score sums"), StreamTree(m_spec.name + " score sums") };
        StreamTree back(m_spec.name + " score broadcast");
        std::vector<bool> deliver(std::size_t(rowsPerHead), true);
        deliver[0] = false;
        for (int h = 0; h < m_spec.heads; ++h)
            for (int u = 0; u < frame.w; ++u) {
                std::vector<Pe> column;
                for (int r = 0; r < rowsPerHead; ++r)
                    column.push_back({ frame.x(u), frame.y(h * rowsPerHead + r) });
                chainHops(column, chain);
                back.run(frame.x(u), frame.y(h * rowsPerHead + rowsPerHead - 1), North, rowsPerHead, Fabric::kRampPort,
                    deliver);
            }
        m_columnChain[0] = book.place(chain[0]);
        if (!chain[1].empty())
            m_columnChain[1] = book.place(chain[1]);
        m_columnBack = book.place(back);
    }
    if (frame.w < 2)
        return;
    StreamTree chain[2] = { StreamTree(m_spec.name + " reduction"), StreamTree(m_spec.name + " reduction") };
    StreamTree back(m_spec.name + " max broadcast");
    std::vector<bool> deliver(std::size_t(frame.w), true);
    deliver[0] = false;
    for (int row = 0; row < rows(); ++row) {
        chainHops(taps(std::size_t(row)), chain);
        back.run(frame.x(frame.w - 1), frame.y(row), frame.backward(), frame.w, Fabric::kRampPort, deliver);
    }
    m_chain[0] = book.place(chain[0]);
    if (!chain[1].empty())
        m_chain[1] = book.place(chain[1]);
    m_back = book.place(back);
}

void AttentionKernel::load(StaticColorFabric& fabric)
{
    const Frame& frame = m_spec.frame;
    for (int row = 0; row < rows(); ++row) {
        const int h = row / m_spec.rowsPerHead;
        const std::uint32_t d = partSize(row % m_spec.rowsPerHead);
        const steps::AttentionLayout layout { 0, d, std::uint32_t(m_slots) };
        for (int u = 0; u < frame.w; ++u) {
            PeState& pe = fabric.pe(frame.x(u), frame.y(row));
            const std::uint32_t workspace = pe.allocF32(layout.size());
            m_workspace.push_back(workspace);
            const steps::AttentionLayout at { workspace, layout.headDim, layout.capacity };
            pe.f32[at.alibi()] = m_spec.alibi ? alibiSlope(h, m_spec.heads) : 0.0f;
            pe.f32[at.alibi() + 1] = std::bit_cast<float>(std::uint32_t(u));
            pe.f32[at.alibi() + 2] = std::bit_cast<float>(std::uint32_t(frame.w));
            m_cache.push_back(pe.allocF16(std::size_t(2) * std::size_t(m_slots) * std::size_t(d)));
            if (u + 1 == frame.w)
                m_result.push_back(pe.allocF32(std::size_t(d)));
        }
    }
}

void AttentionKernel::programCacheFill(ProgramWriter& writer, int row, int u, std::optional<std::int64_t> position,
    int color, std::uint32_t laneSize, std::uint32_t skip) const
{
    const int w = m_spec.frame.w;
    if (m_spec.rowsPerHead != 1 || u < 0 || u >= w
        || (position && (*position < 0 || *position >= m_spec.capacity || *position % w != u)))
        throw std::logic_error(m_spec.name + ": a cache fill takes a position of the column's, a row a head");
    const std::size_t at = std::size_t(row) * std::size_t(w) + std::size_t(u);
    const std::uint32_t d = partSize(0);
    const steps::AttentionLayout layout { m_workspace[at], d, std::uint32_t(m_slots) };
    const int x = m_spec.frame.x(u);
    const int y = m_spec.frame.y(row);
    writer.armAndAwait(x, y, color, detail::keepTask(layout.k(), laneSize, position ? skip : 0, position ? 2 * d : 0));
    if (position)
        writer.compute(x, y, steps::appendKv, steps::elementwiseCycles(2 * d, 1, m_context.simdWidth), layout.base,
            layout.packed(), m_cache[at], std::uint32_t(*position / w), 0.0f, m_context.flags());
}

std::vector<float> AttentionKernel::cached(
    const StaticColorFabric& fabric, int row, std::int64_t position, bool value) const
{
    const int w = m_spec.frame.w;
    const auto u = int(position % w);
    const std::size_t at = std::size_t(row) * std::size_t(w) + std::size_t(u);
    const std::uint32_t d = partSize(row % m_spec.rowsPerHead);
    const PeState& pe = fabric.pe(m_spec.frame.x(u), m_spec.frame.y(row));
    const std::uint32_t begin
        = m_cache[at] + (value ? std::uint32_t(m_slots) * d : 0) + std::uint32_t(position / w) * d;
    std::vector<float> out;
    for (std::uint32_t i = 0; i < d; ++i)
        out.push_back(
            m_context.storage == Storage::Bf16 ? bfloat16ToFloat(pe.f16[begin + i]) : halfToFloat(pe.f16[begin + i]));
    return out;
}

void AttentionKernel::program(ProgramWriter& writer, const KernelColors& colors, std::int64_t position) const
{
    const int qColor = colors.in;
    const int kColor = colors.keys;
    const int vColor = colors.values;
    const int outColor = colors.out;
    const Frame& frame = m_spec.frame;
    const int w = frame.w;
    const int rowsPerHead = m_spec.rowsPerHead;
    const int simd = m_context.simdWidth;
    const float scale = 1.0f / std::sqrt(float(m_spec.headDim));
    if (position >= m_spec.capacity)
        throw std::logic_error(m_spec.name + ": position beyond the cache");
    for (int row = 0; row < rows(); ++row) {
        const int r = row % rowsPerHead;
        const std::uint32_t d = partSize(r);
        // ALiBi's bias joins a position's score once: on the head's first row.
        const std::uint8_t flags = std::uint8_t(m_context.flags() | (m_spec.alibi && r == 0 ? steps::kAlibi : 0));
        for (int u = 0; u < w; ++u) {
            const int x = frame.x(u);
            const int y = frame.y(row);
            const std::size_t at = std::size_t(row) * std::size_t(w) + std::size_t(u);
            const steps::AttentionLayout layout { m_workspace[at], d, std::uint32_t(m_slots) };
            const std::uint32_t cache = m_cache[at];
            writer.pe(x, y).f32[layout.alibi() + 3] = std::bit_cast<float>(std::uint32_t(position)); // this token's
            writer.arm(x, y, qColor, storeTask(layout.q(), d));
            writer.arm(x, y, kColor, storeTask(layout.k(), d));
            writer.arm(x, y, vColor, storeTask(layout.v(), d));
            writer.await(x, y, qColor);
            writer.await(x, y, kColor);
            writer.await(x, y, vColor);
            if (position % w == u)
                writer.compute(x, y, steps::appendKv, steps::elementwiseCycles(2 * d, 1, simd), layout.base,
                    layout.packed(), cache, std::uint32_t(position / w), 0.0f, flags);
            const std::uint32_t held = position >= u ? std::uint32_t((position - u) / w + 1) : 0;
            const std::uint32_t dotCycles = held * steps::elementwiseCycles(d, 1, simd);
            writer.compute(x, y, steps::scores, std::max<std::uint32_t>(1, dotCycles + held), layout.base,
                layout.packed(), cache, held, scale, flags);
            if (rowsPerHead > 1) {
                // The head's rows sum their partial scores down the column, and the sums come back
                // up (a column that holds no position yet passes one unused slot, as the row chains
                // pass a max of minus infinity).
                const std::uint32_t sent = std::max<std::uint32_t>(1, held);
                if (r == 0)
                    writer.send(x, y, m_columnChain[0], layout.scores(), sent);
                else
                    writer.armAndAwait(x, y, m_columnChain[(r - 1) % 2],
                        addTask(layout.scores(), sent, r + 1 < rowsPerHead ? m_columnChain[r % 2] : kNoColor));
                if (r + 1 == rowsPerHead)
                    writer.send(x, y, m_columnBack, layout.scores(), sent);
                else
                    writer.armAndAwait(x, y, m_columnBack, storeTask(layout.scores(), sent));
                writer.compute(x, y, steps::scoresMax, steps::elementwiseCycles(held, 1, simd), layout.base,
                    layout.packed(), 0, held, 0.0f, flags);
            }
            // The max along the row, then back to every PE.
            if (w > 1) {
                if (u == 0)
                    writer.send(x, y, m_chain[0], layout.max(), 1);
                else
                    writer.armAndAwait(
                        x, y, m_chain[(u - 1) % 2], maxTask(layout.max(), 1, u + 1 < w ? m_chain[u % 2] : kNoColor));
                if (u + 1 == w)
                    writer.send(x, y, m_back, layout.max(), 1);
                else
                    writer.armAndAwait(x, y, m_back, storeTask(layout.max(), 1));
            }
            writer.compute(x, y, steps::softmaxPartial,
                std::max<std::uint32_t>(1, held * (8 + steps::elementwiseCycles(d, 1, simd))), layout.base,
                layout.packed(), cache, held, 0.0f, flags);
            if (w > 1) {
                if (u == 0)
                    writer.send(x, y, m_chain[0], layout.partial(), d + 1);
                else
                    writer.armAndAwait(x, y, m_chain[(u - 1) % 2],
                        addTask(layout.partial(), d + 1, u + 1 < w ? m_chain[u % 2] : kNoColor));
            }
            if (u + 1 < w)
                continue;
            const std::uint32_t result = m_result[std::size_t(row)];
            writer.compute(x, y, steps::attentionOutput, steps::elementwiseCycles(d, 2, simd), layout.base,
                layout.packed(), 0, result, 0.0f, flags);
            if (outColor >= 0)
                writer.send(x, y, outColor, result, d);
        }
    }
}

KernelCost AttentionKernel::closedForm(std::int64_t position) const
{
    return costDecodeAttention({ m_spec.frame.w, m_spec.frame.h, m_spec.heads, m_spec.headDim, position,
        m_context.simdWidth, m_spec.rowsPerHead });
}

} // namespace waferscope::core::cyclelevel
