#include "core/cyclelevel/kernels/embeddingkernel.h"

#include "core/cyclelevel/kernels/computesteps.h"
#include "core/cyclelevel/kernels/kernelsupport.h"
#include "core/cyclelevel/referenceops.h"
#include "core/kernels/embedding.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;
using detail::chainHops;
using detail::encode;

// ---- EmbeddingKernel ----

EmbeddingKernel::EmbeddingKernel(EmbeddingSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
{
    const Frame& frame = m_spec.frame;
    const auto lanes = std::int64_t(m_spec.lanes.size());
    if (lanes > frame.w)
        throw std::logic_error(m_spec.name + ": " + std::to_string(lanes) + " lanes need as many columns");
    for (std::int64_t i = 0; i < lanes; ++i) {
        const int first = int(blockBegin(frame.w, lanes, i));
        const int end = int(blockBegin(frame.w, lanes, i + 1));
        std::vector<Pe> chain;
        for (int v = 0; v < frame.h; ++v) {
            for (int k = 0; k < end - first; ++k) {
                const int u = v % 2 == 0 ? first + k : end - 1 - k;
                chain.push_back({ frame.x(u), frame.y(v) });
            }
        }
        m_chains.push_back(std::move(chain));
    }
}

void EmbeddingKernel::route(RouteBook& book)
{
    const Frame& frame = m_spec.frame;
    StreamTree broadcast(m_spec.name + " token id");
    // Along row 0 from the root, and down every column.
    for (int u = 0; u < frame.w; ++u) {
        std::uint8_t tx = frame.h > 1 ? directionBit(South) : 0;
        if (u + 1 < frame.w)
            tx |= directionBit(frame.forward());
        if (u > 0)
            tx |= kRampBit;
        if (tx)
            broadcast.hop(frame.x(u), frame.y(0), u == 0 ? Fabric::kRampPort : frame.backward(), tx);
        for (int v = 1; v < frame.h; ++v)
            broadcast.hop(
                frame.x(u), frame.y(v), North, std::uint8_t((v + 1 < frame.h ? directionBit(South) : 0) | kRampBit));
    }
    if (!broadcast.empty())
        m_broadcast = book.place(broadcast);
    StreamTree chain[2] = { StreamTree(m_spec.name + " sum"), StreamTree(m_spec.name + " sum") };
    for (const std::vector<Pe>& pes : m_chains)
        chainHops(pes, chain);
    for (int i = 0; i < 2; ++i)
        if (!chain[i].empty())
            m_chain[i] = book.place(chain[i]);
}

void EmbeddingKernel::load(StaticColorFabric& fabric)
{
    const std::int64_t vocab = m_spec.token.rows();
    const std::int64_t positions = m_spec.position.present() ? m_spec.position.rows() : 0;
    m_out.resize(m_chains.size());
    m_meta.resize(m_chains.size());
    for (std::size_t lane = 0; lane < m_chains.size(); ++lane) {
        const Lane& range = m_spec.lanes[lane];
        const auto count = std::int64_t(m_chains[lane].size());
        for (std::int64_t k = 0; k < count; ++k) {
            const Pe at = m_chains[lane][std::size_t(k)];
            PeState& pe = fabric.pe(at.x, at.y);
            const std::uint32_t rowBegin = blockBegin(vocab, count, k);
            const std::uint32_t rowEnd = blockBegin(vocab, count, k + 1);
            const std::uint32_t positionBegin = blockBegin(positions, count, k);
            const std::uint32_t positionEnd = blockBegin(positions, count, k + 1);
            const std::uint32_t rows = pe.allocF16(std::size_t(rowEnd - rowBegin) * range.size());
            for (std::uint32_t r = rowBegin; r < rowEnd; ++r)
                for (std::uint32_t i = 0; i < range.size(); ++i)
                    pe.f16[rows + (r - rowBegin) * range.size() + i]
                        = encode(m_spec.token.at(r, range.begin + i), m_context);
            const std::uint32_t positionRows = pe.allocF16(std::size_t(positionEnd - positionBegin) * range.size());
            for (std::uint32_t r = positionBegin; r < positionEnd; ++r)
                for (std::uint32_t i = 0; i < range.size(); ++i)
                    pe.f16[positionRows + (r - positionBegin) * range.size() + i]
                        = encode(m_spec.position.at(r, range.begin + i), m_context);
            m_out[lane].push_back(pe.allocF32(range.size()));
            const std::uint32_t meta = pe.allocF32(9); // the 8 constants, then the token id
            const std::uint32_t constants[]
                = { meta + 8, rowBegin, rowEnd, rows, positionBegin, positionEnd, positionRows, 0 };
            for (int c = 0; c < 8; ++c)
                pe.f32[meta + std::uint32_t(c)] = std::bit_cast<float>(constants[c]);
            m_meta[lane].push_back(meta);
        }
    }
}

std::uint32_t EmbeddingKernel::resultOffset(std::size_t lane) const
{
    return m_out[lane].back();
}

void EmbeddingKernel::program(ProgramWriter& writer, const KernelColors& colors, std::int64_t position) const
{
    const int tokenColor = colors.in;
    const int outColor = colors.out;
    const int simd = m_context.simdWidth;
    const Pe top = root();
    for (std::size_t lane = 0; lane < m_chains.size(); ++lane) {
        const std::vector<Pe>& chain = m_chains[lane];
        const std::uint32_t size = m_spec.lanes[lane].size();
        for (std::size_t k = 0; k < chain.size(); ++k) {
            const Pe at = chain[k];
            const std::uint32_t meta = m_meta[lane][k];
            const std::uint32_t out = m_out[lane][k];
            PeState& pe = writer.pe(at.x, at.y);
            pe.f32[meta + 7] = std::bit_cast<float>(std::uint32_t(position)); // a constant of this token's program
            if (at.x == top.x && at.y == top.y)
                writer.armAndAwait(at.x, at.y, tokenColor, storeTask(meta + 8, 1, m_broadcast));
            else
                writer.armAndAwait(at.x, at.y, m_broadcast, storeTask(meta + 8, 1));
            writer.compute(at.x, at.y, steps::embeddingContribution, steps::elementwiseCycles(size, 2, simd), out, size,
                meta, 0, 0.0f, m_context.flags());
            if (chain.size() > 1) {
                if (k == 0)
                    writer.send(at.x, at.y, m_chain[0], out, size);
                else
                    writer.armAndAwait(at.x, at.y, m_chain[(k - 1) % 2],
                        addTask(out, size, k + 1 < chain.size() ? m_chain[k % 2] : kNoColor));
            }
            if (k + 1 < chain.size())
                continue;
            writer.compute(at.x, at.y, steps::roundInPlace, steps::elementwiseCycles(size, 1, simd), out, size, 0, 0,
                0.0f, m_context.flags());
            if (outColor >= 0)
                writer.send(at.x, at.y, outColor, out, size);
        }
    }
}

KernelCost EmbeddingKernel::closedForm(std::int64_t) const
{
    EmbeddingLookupShape shape { m_spec.frame.w, m_spec.frame.h, {}, m_context.simdWidth };
    for (const Lane& lane : m_spec.lanes)
        shape.laneSizes.push_back(lane.size());
    return costEmbeddingLookup(shape);
}

} // namespace waferscope::core::cyclelevel
