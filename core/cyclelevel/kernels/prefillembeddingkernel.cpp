// The embedding of a whole prompt on a g x g block (PrefillGrid's tiling: PE (x, y) one token
// band of hidden block x, every band once along each row and column).
//
// The token table stays: PE (x, y) holds hidden block x of the vocabulary rows of share y (the
// table split by rows over the block's rows). Each token band's tile, headed by the band's ids
// (from the host, in lanes along the block's rows), goes round its column's ring, one position up
// a step; at each PE it takes the rows of the ids whose rows the PE holds. After g - 1 shifts
// the tile has met every share and is whole: the token's row, x = tok[t] (referenceops (1)), or
// with learned positions S(tok[t] + pos[p]), the position rows of the band that ends there held
// by that PE. The tiles end g - 1 ring positions up, as a plain GEMM with band offset g - 1 takes
// them.
#include "core/cyclelevel/kernels/prefillembeddingkernel.h"

#include "core/cyclelevel/kernels/computesteps.h"
#include "core/cyclelevel/kernels/kernelsupport.h"
#include "core/cyclelevel/kernels/prefillsteps.h"
#include "core/kernels/prefillembedding.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;
using detail::keepTask;

PrefillEmbeddingKernel::PrefillEmbeddingKernel(PrefillEmbeddingSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
    , m_grid(std::max(1, m_spec.frame.w), std::max<std::int64_t>(1, m_spec.tokens),
          std::max<std::int64_t>(1, m_spec.token.cols()))
{
    const int g = m_spec.frame.w;
    const auto refuse = [&](const std::string& why) { throw std::logic_error(m_spec.name + ": " + why); };
    if (g < 1 || m_spec.frame.h < g || m_spec.frame.westward)
        refuse("needs an eastward " + std::to_string(g) + " x " + std::to_string(g) + " block");
    if (m_spec.tokens < 1)
        refuse("the prompt has no tokens");
    if (!m_spec.token.present())
        refuse("the embedding needs a token table");
    if (m_spec.position.present() && m_spec.position.rows() < m_spec.tokens)
        refuse("a prompt of " + std::to_string(m_spec.tokens) + " tokens, positions for "
            + std::to_string(m_spec.position.rows()));
    if ((m_spec.tokens + g - 1) / g > steps::TileDims::kMaxSide
        || (m_spec.token.cols() + g - 1) / g > steps::TileDims::kMaxSide)
        refuse("tiles larger than a step takes");
    std::uint32_t next = 0;
    for (int y = 0; y < g; ++y) {
        std::uint32_t length = 0;
        for (int x = 0; x < g; ++x)
            length += rows(x, y, 0);
        if (length > 0)
            m_lanes.push_back({ m_spec.frame.y(y), next, next + length });
        next += length;
    }
}

const std::vector<std::int32_t>& PrefillEmbeddingKernel::promptIds() const
{
    if (std::int64_t(m_ids.size()) != m_spec.tokens)
        throw std::logic_error(m_spec.name + ": no prompt taken (takePrompt)");
    return m_ids;
}

std::int64_t PrefillEmbeddingKernel::vocabBegin(int y) const
{
    return m_spec.token.rows() * y / m_grid.size();
}

std::vector<Pe> PrefillEmbeddingKernel::taps(std::size_t lane) const
{
    std::vector<Pe> pes;
    for (int x = 0; x < m_grid.size(); ++x)
        pes.push_back({ m_spec.frame.x(x), m_lanes[lane].y });
    return pes;
}

void PrefillEmbeddingKernel::takePrompt(std::span<const std::int32_t> ids)
{
    if (std::int64_t(ids.size()) != m_spec.tokens)
        throw std::logic_error(
            m_spec.name + ": " + std::to_string(m_spec.tokens) + " ids expected, got " + std::to_string(ids.size()));
    for (std::size_t t = 0; t < ids.size(); ++t)
        if (ids[t] < 0 || ids[t] >= m_spec.token.rows())
            throw std::logic_error(m_spec.name + ": token " + std::to_string(t) + " of the prompt is id "
                + std::to_string(ids[t]) + ", outside the vocabulary of " + std::to_string(m_spec.token.rows()));
    m_ids.assign(ids.begin(), ids.end());
}

std::vector<float> PrefillEmbeddingKernel::feed() const
{
    const std::vector<std::int32_t>& ids = promptIds();
    std::vector<float> out;
    for (const Lane& lane : m_lanes) {
        const int y = lane.y - m_spec.frame.y0;
        for (int x = 0; x < m_grid.size(); ++x) {
            const int band = m_grid.blockAt(x, y, 0);
            for (std::uint32_t t = 0; t < m_grid.bandSize(band); ++t)
                out.push_back(std::bit_cast<float>(std::uint32_t(ids[m_grid.bandBegin(band) + t])));
        }
    }
    return out;
}

void PrefillEmbeddingKernel::needRings(PrefillRings& rings) const
{
    const int g = m_grid.size();
    for (int s = 0; s + 1 < g; ++s)
        for (int y = 0; y < g; ++y)
            for (int x = 0; x < g; ++x)
                if (rows(x, y, s) > 0)
                    rings.needColumn(x, y);
}

void PrefillEmbeddingKernel::useRings(const PrefillRings& rings)
{
    m_columnShift = rings.columnColors();
}

int PrefillEmbeddingKernel::columnColor(int y, bool incoming) const
{
    return m_columnShift[m_grid.ringEdge(y, incoming)];
}

void PrefillEmbeddingKernel::load(StaticColorFabric& fabric)
{
    const int g = m_grid.size();
    std::uint32_t widest = 1;
    for (int b = 0; b < g; ++b)
        widest = std::max(widest, m_grid.bandSize(b));
    m_buffers.clear();
    m_outputs.clear();
    std::vector<float> row(std::size_t(m_spec.token.cols()));
    for (int y = 0; y < g; ++y) {
        for (int x = 0; x < g; ++x) {
            PeState& pe = fabric.pe(at(x, y).x, at(x, y).y);
            Buffers own;
            const std::uint32_t width = cols(x);
            const std::int64_t first = vocabBegin(y);
            const std::int64_t count = vocabBegin(y + 1) - first;
            own.table = pe.allocF16(std::max<std::int64_t>(1, count * width));
            for (std::int64_t v = 0; v < count; ++v) {
                m_spec.token.row(first + v, row);
                for (std::uint32_t i = 0; i < width; ++i)
                    pe.f16[own.table + std::uint32_t(v) * width + i]
                        = detail::encode(row[m_grid.blockBegin(x) + i], m_context);
            }
            const int band = m_grid.blockAt(x, y, g - 1);
            if (m_spec.position.present()) {
                own.positions = pe.allocF16(std::max<std::uint32_t>(1, m_grid.bandSize(band) * width));
                for (std::uint32_t t = 0; t < m_grid.bandSize(band); ++t) {
                    m_spec.position.row(m_grid.bandBegin(band) + t, row);
                    for (std::uint32_t i = 0; i < width; ++i)
                        pe.f16[own.positions + t * width + i]
                            = detail::encode(row[m_grid.blockBegin(x) + i], m_context);
                }
            }
            for (int parity = 0; parity < 2; ++parity)
                own.moving[parity] = pe.allocF32(widest * (1 + width));
            m_buffers.push_back(own);
            if (m_grid.bandSize(band) > 0 && width > 0)
                m_outputs.push_back({ at(x, y), own.moving[(g - 1) % 2] + m_grid.bandSize(band), m_grid.bandBegin(band),
                    m_grid.bandSize(band), m_grid.blockBegin(x), width });
        }
    }
}

void PrefillEmbeddingKernel::program(ProgramWriter& writer, int inputColor) const
{
    const std::vector<std::int32_t>& ids = promptIds();
    const int g = m_grid.size();
    const int simd = m_context.simdWidth;
    for (int y = 0; y < g; ++y) {
        for (int x = 0; x < g; ++x) {
            const Pe pe = at(x, y);
            const Buffers& own = m_buffers[std::size_t(y * g + x)];
            const std::uint32_t width = cols(x);
            const std::int64_t first = vocabBegin(y);
            const std::int64_t count = vocabBegin(y + 1) - first;
            // The band's ids, kept from the row's lane.
            const auto lane = std::find_if(m_lanes.begin(), m_lanes.end(), [&](const Lane& l) { return l.y == pe.y; });
            if (lane != m_lanes.end()) { // every PE of the row takes the lane, an empty band too
                std::uint32_t skip = 0;
                for (int before = 0; before < x; ++before)
                    skip += rows(before, y, 0);
                writer.armAndAwait(pe.x, pe.y, inputColor, keepTask(own.moving[0], lane->size(), skip, rows(x, y, 0)));
            }
            for (int s = 0; s < g; ++s) {
                const int band = m_grid.blockAt(x, y, s);
                const std::uint32_t n = m_grid.bandSize(band);
                std::uint32_t found = 0; // the band's ids whose rows this PE holds
                for (std::uint32_t t = 0; t < n; ++t)
                    found
                        += ids[m_grid.bandBegin(band) + t] - first < count && ids[m_grid.bandBegin(band) + t] >= first;
                if (n > 0 && width > 0)
                    writer.compute(pe.x, pe.y, steps::tileLookup,
                        std::max<std::uint32_t>(1, n + steps::elementwiseCycles(std::uint64_t(found) * width, 1, simd)),
                        own.moving[s % 2], own.table, std::uint32_t(first), steps::TileDims { n, width, 0 }.packed(),
                        float(count), m_context.flags());
                if (s + 1 == g)
                    break;
                const std::uint32_t out = n * (1 + width);
                const std::uint32_t in = rows(x, m_grid.ringSource(y), s) * (1 + width);
                if (out > 0)
                    writer.send(pe.x, pe.y, columnColor(y, false), own.moving[s % 2], out);
                if (in == 0)
                    continue;
                if (out == 0)
                    writer.awaitSend(pe.x, pe.y);
                writer.armAndAwait(pe.x, pe.y, columnColor(y, true), storeTask(own.moving[(s + 1) % 2], in));
            }
            const std::uint32_t n = rows(x, y, g - 1);
            if (m_spec.position.present() && n > 0 && width > 0)
                writer.compute(pe.x, pe.y, steps::tileAddPositions, steps::elementwiseCycles(n * width, 1, simd),
                    own.moving[(g - 1) % 2] + n, own.positions, 0, steps::TileDims { n, width, 0 }.packed(), 0.0f,
                    m_context.flags());
        }
    }
}

KernelCost PrefillEmbeddingKernel::closedForm() const
{
    return costPrefillEmbedding({ m_grid.size(), promptIds(), m_spec.token.rows(), m_spec.token.cols(),
        m_spec.position.present(), m_context.simdWidth });
}

} // namespace waferscope::core::cyclelevel
