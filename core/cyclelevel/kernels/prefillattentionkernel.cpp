// Prefill attention on a 2D block of PEs per query head: S = Q K^T, a causal row softmax, O = E V.
//
// Scheme: Cannon's algorithm on MeshGEMM's interleaved rings (WaferLLM, OSDI 2025). Cannon
// shifts tiles along the rows and columns of a g x g grid, one block of the summed dimension a
// step, so a PE only ever exchanges tiles with its two ring neighbours and holds one tile of each
// operand a step (SUMMA would instead multicast every block over a whole row and column). On a
// torus the ring neighbours are adjacent; the wafer is a mesh without wrap-around links, where a
// plain Cannon ring's closing shift, from column 0 to column g - 1, crosses g - 1 links and sets
// the pace of every step as g grows. MeshGEMM's interleaving visits the columns (and rows) in the
// order 0, 2, 4, ..., 5, 3, 1: every shift is then one or two hops, whatever g, at the price of a
// color more a ring (a two-hop shift passes a router that also sends and receives).
//
// Phase 1, S = Q K^T, output stationary: PE (x, y) accumulates the score tile (query band y,
// key band x) while the query tiles move along row y and the key tiles up column x, one
// head-dimension block a step (PrefillGrid::blockAt). The inputs arrive already skewed: each
// block row's query, key and value lanes carry its PEs' step-0 tiles, and every PE of the row
// takes each lane whole and keeps its own tile (so no PE starts shifting while a lane still
// passes its router on the way to a farther PE).
// Phase 2, each query row's softmax over the PEs (0..y, y): a max chain to the diagonal PE,
// which sends the maxima back; the exponentials; a sum chain, and the sums back (as the decode
// kernel does along its row). The exponentials E stay where their scores were, unnormalised: the
// reference divides at the end.
// Phase 3, O = E V, E stationary (Cannon's other form): Cannon's output-stationary form would
// first skew E along the rows, up to g - 1 hops a tile; instead the partial outputs move along
// the rows and the value tiles up the columns, on the rings of phase 1. A partial output is
// complete at the last PE that adds to it, which divides it by the row sums and rounds it.
//
// Causal masking: tiles above the diagonal (key band > query band) are skipped. Their PEs
// compute no scores, exponentials or weighted values, take no part in the softmax, and no
// partial output is formed or moved before its first PE on or below the diagonal. They still
// take their row's lanes and relay the ring tiles a later PE of their ring needs (PrefillGrid),
// a store and a send a wavelet. A diagonal tile is computed whole and masked inside.
//
// A ring step: compute with the tiles held, then the row shift, then the column shift, each a
// send, then the receive armed and awaited. The data tasks take the engine before the program
// does, so a receive armed before the send (which waits for the PE's previous send to drain)
// would hold the send back until the whole incoming tile is stored; in this order the exchanges
// of a step follow one another the same way at every PE.
// Every tile a PE holds has its own buffer, so a send never races a receive: a PE of block row
// y and column x holds at most 2 (n_y + n_x) d + n_y n_x + 2 n_y floats, n the band sizes.
//
// Numbers: referenceops.h's attention of query i over keys 0..i, except that the sums over the
// head dimension (scores), over the keys (row sums) and over the keys again (weighted values) run
// in the order the tiles come: a block at a time from a PE-dependent block, then along the chain.
#include "core/cyclelevel/kernels/prefillattentionkernel.h"

#include "core/cyclelevel/kernels/computesteps.h"
#include "core/cyclelevel/kernels/kernelsupport.h"
#include "core/cyclelevel/kernels/prefillsteps.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;
using detail::chainHops;
using detail::keepTask;
using detail::placeRingShifts;

PrefillAttentionKernel::PrefillAttentionKernel(PrefillAttentionSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
    , m_grid(m_spec.frame.w, m_spec.tokens, m_spec.headDim)
{
    const int g = m_grid.size();
    const auto refuse = [&](const std::string& why) { throw std::logic_error(m_spec.name + ": " + why); };
    if (m_spec.alibi)
        refuse("ALiBi is not supported by the prefill kernel (its scores take no position bias)");
    if (m_spec.heads < 1 || m_spec.kvHeads < 1 || m_spec.heads % m_spec.kvHeads != 0)
        refuse("heads (" + std::to_string(m_spec.heads) + ") must be a positive multiple of kv heads ("
            + std::to_string(m_spec.kvHeads) + ")");
    if (m_spec.heads * g > m_spec.frame.h)
        refuse(std::to_string(m_spec.heads) + " heads of " + std::to_string(g) + " x " + std::to_string(g)
            + " PEs need " + std::to_string(m_spec.heads * g) + " rows, the region has "
            + std::to_string(m_spec.frame.h));
    // A band is the summed dimension of the weighted values, a block that of the scores.
    const std::int64_t widest = std::max((m_spec.tokens + g - 1) / g, std::int64_t(m_spec.headDim + g - 1) / g);
    if (widest > std::int64_t(steps::TileDims::kMaxInner))
        refuse("a tile of " + std::to_string(widest) + " tokens or dimensions, more than a step takes ("
            + std::to_string(steps::TileDims::kMaxInner) + ")");

    // The lanes: per frame row, the fed tiles of its PEs in column order.
    std::uint32_t next[kPrefillOperands] = {};
    for (int h = 0; h < m_spec.heads; ++h) {
        for (int y = 0; y < g; ++y) {
            for (std::size_t op = 0; op < kPrefillOperands; ++op) {
                std::uint32_t length = 0;
                for (int x = 0; x < g; ++x)
                    length += feedSkip(PrefillOperand(op), x, y) >= 0 ? tileSize(PrefillOperand(op), x, y, 0) : 0;
                if (length == 0)
                    continue;
                m_lanes[op].push_back({ m_spec.frame.y(h * g + y), next[op], next[op] + length });
                next[op] += length;
            }
        }
    }
}

std::uint32_t PrefillAttentionKernel::tileSize(PrefillOperand operand, int x, int y, int step) const
{
    const std::uint32_t block = m_grid.blockSize(m_grid.blockAt(x, y, step));
    return (operand == PrefillOperand::Query ? m_grid.bandSize(y) : m_grid.bandSize(x)) * block;
}

std::int64_t PrefillAttentionKernel::feedSkip(PrefillOperand operand, int x, int y) const
{
    const bool fed = operand == PrefillOperand::Query ? m_grid.fedQuery(x, y) : m_grid.fedColumnTile(x, y);
    if (!fed || tileSize(operand, x, y, 0) == 0)
        return -1;
    std::int64_t skip = 0;
    for (int before = 0; before < x; ++before) {
        const bool earlier
            = operand == PrefillOperand::Query ? m_grid.fedQuery(before, y) : m_grid.fedColumnTile(before, y);
        skip += earlier ? tileSize(operand, before, y, 0) : 0;
    }
    return skip;
}

std::uint32_t PrefillAttentionKernel::queryWavelets(int x, int y, int step) const
{
    return m_grid.sendsQuery(x, y, step) ? tileSize(PrefillOperand::Query, x, y, step) : 0;
}

std::uint32_t PrefillAttentionKernel::keyWavelets(int x, int y, int step) const
{
    return m_grid.sendsColumnTile(x, y, step) ? tileSize(PrefillOperand::Key, x, y, step) : 0;
}

std::uint32_t PrefillAttentionKernel::partialWavelets(int x, int y, int step) const
{
    return m_grid.sendsPartial(x, y, step) ? tileSize(PrefillOperand::Query, x, y, step) : 0;
}

std::vector<Pe> PrefillAttentionKernel::taps(PrefillOperand operand, std::size_t lane) const
{
    const int g = m_grid.size();
    const int row = m_lanes[std::size_t(operand)][lane].y - m_spec.frame.y0;
    std::vector<Pe> pes;
    for (int x = 0; x < g; ++x)
        pes.push_back(at(row / g, x, row % g));
    return pes;
}

std::vector<float> PrefillAttentionKernel::feed(PrefillOperand operand, std::span<const float> matrices) const
{
    const int g = m_grid.size();
    const auto d = std::size_t(m_spec.headDim);
    const auto tokens = std::size_t(m_spec.tokens);
    const int group = m_spec.heads / m_spec.kvHeads;
    const auto count = std::size_t(operand == PrefillOperand::Query ? m_spec.heads : m_spec.kvHeads);
    if (matrices.size() != count * tokens * d)
        throw std::logic_error(m_spec.name + ": " + std::to_string(count) + " matrices of " + std::to_string(tokens)
            + " x " + std::to_string(d) + " expected, got " + std::to_string(matrices.size()) + " values");
    std::vector<float> out;
    const Lanes& lanes = m_lanes[std::size_t(operand)];
    for (std::size_t lane = 0; lane < lanes.size(); ++lane) {
        const int frameRow = lanes[lane].y - m_spec.frame.y0;
        const int head = frameRow / g;
        const int y = frameRow % g;
        const int source = operand == PrefillOperand::Query ? head : head / group;
        const float* matrix = matrices.data() + std::size_t(source) * tokens * d;
        for (int x = 0; x < g; ++x) {
            if (feedSkip(operand, x, y) < 0)
                continue;
            const int band = operand == PrefillOperand::Query ? y : x;
            const int block = m_grid.blockAt(x, y, 0);
            for (std::uint32_t t = 0; t < m_grid.bandSize(band); ++t)
                for (std::uint32_t i = 0; i < m_grid.blockSize(block); ++i)
                    out.push_back(matrix[(m_grid.bandBegin(band) + t) * d + m_grid.blockBegin(block) + i]);
        }
    }
    return out;
}

void PrefillAttentionKernel::route(RouteBook& book)
{
    const int g = m_grid.size();
    const auto anyStep = [g](const auto& sends) {
        for (int s = 0; s + 1 < g; ++s)
            if (sends(s))
                return true;
        return false;
    };
    placeRingShifts(
        book, m_spec.name, m_grid, m_spec.heads,
        [&](int from, int other) {
            return anyStep(
                [&](int s) { return queryWavelets(from, other, s) > 0 || partialWavelets(from, other, s) > 0; });
        },
        [&](int other, int from) { return anyStep([&](int s) { return keyWavelets(other, from, s) > 0; }); },
        [this](int h, int x, int y) { return at(h, x, y); }, m_rowShift, m_columnShift);
    // The softmax chains along each row to its diagonal PE, and back.
    StreamTree chain[2]
        = { StreamTree(m_spec.name + " softmax reduction"), StreamTree(m_spec.name + " softmax reduction") };
    StreamTree back(m_spec.name + " softmax broadcast");
    for (int h = 0; h < m_spec.heads; ++h) {
        for (int y = 1; y < g; ++y) {
            if (!m_grid.inSoftmax(0, y))
                continue;
            std::vector<Pe> pes;
            for (int x = 0; x <= y; ++x)
                pes.push_back(at(h, x, y));
            chainHops(pes, chain);
            std::vector<bool> deliver(std::size_t(y) + 1, true);
            deliver[0] = false;
            const Pe diagonal = at(h, y, y);
            back.run(diagonal.x, diagonal.y, m_spec.frame.backward(), y + 1, Fabric::kRampPort, deliver);
        }
    }
    if (!chain[0].empty())
        m_chain[0] = book.place(chain[0]);
    if (!chain[1].empty())
        m_chain[1] = book.place(chain[1]);
    if (!back.empty())
        m_back = book.place(back);
}

const PrefillAttentionKernel::Buffers& PrefillAttentionKernel::buffers(int head, int x, int y) const
{
    const int g = m_grid.size();
    return m_buffers[(std::size_t(head) * std::size_t(g) + std::size_t(y)) * std::size_t(g) + std::size_t(x)];
}

void PrefillAttentionKernel::load(StaticColorFabric& fabric)
{
    const int g = m_grid.size();
    m_buffers.clear();
    m_outputs.assign(std::size_t(m_spec.heads), {});
    for (int h = 0; h < m_spec.heads; ++h) {
        for (int y = 0; y < g; ++y) {
            for (int x = 0; x < g; ++x) {
                const Pe pe = at(h, x, y);
                PeState& state = fabric.pe(pe.x, pe.y);
                Buffers buffers;
                const std::uint32_t queries = m_grid.bandSize(y);
                if (m_grid.inSoftmax(x, y)) {
                    buffers.scores = state.allocF32(std::size_t(queries) * m_grid.bandSize(x));
                    buffers.max = state.allocF32(queries);
                    buffers.sum = state.allocF32(queries);
                }
                // A tile buffer for every step the PE holds that tile: fed, received or computed.
                const auto tileBuffer = [&](PrefillOperand operand, int s, bool held) -> std::int64_t {
                    const std::uint32_t size = tileSize(operand, x, y, s);
                    return held && size > 0 ? std::int64_t(state.allocF32(size)) : -1;
                };
                for (int s = 0; s < g; ++s) {
                    const int source = m_grid.ringSource(x);
                    const int below = m_grid.ringSource(y);
                    const bool queryHeld
                        = s == 0 ? feedSkip(PrefillOperand::Query, x, y) >= 0 : queryWavelets(source, y, s - 1) > 0;
                    const bool keyHeld
                        = s == 0 ? feedSkip(PrefillOperand::Key, x, y) >= 0 : keyWavelets(x, below, s - 1) > 0;
                    const bool partialHeld = m_grid.computes(x, y) || (s > 0 && partialWavelets(source, y, s - 1) > 0);
                    buffers.query.push_back(tileBuffer(PrefillOperand::Query, s, queryHeld));
                    buffers.key.push_back(tileBuffer(PrefillOperand::Key, s, keyHeld));
                    buffers.value.push_back(tileBuffer(PrefillOperand::Value, s, keyHeld));
                    buffers.partial.push_back(tileBuffer(PrefillOperand::Query, s, partialHeld));
                    if (m_grid.computes(x, y) && m_grid.partialEnds(x, y, s) && buffers.partial.back() >= 0) {
                        const int block = m_grid.blockAt(x, y, s);
                        m_outputs[std::size_t(h)].push_back({ pe, std::uint32_t(buffers.partial.back()),
                            m_grid.bandBegin(y), queries, m_grid.blockBegin(block), m_grid.blockSize(block) });
                    }
                }
                m_buffers.push_back(std::move(buffers));
            }
        }
    }
}

void PrefillAttentionKernel::program(ProgramWriter& writer, int queryColor, int keyColor, int valueColor) const
{
    const int g = m_grid.size();
    const int colors[kPrefillOperands] = { queryColor, keyColor, valueColor };
    for (int h = 0; h < m_spec.heads; ++h) {
        for (int y = 0; y < g; ++y) {
            for (int x = 0; x < g; ++x) {
                // The feed: every PE of a row takes each of the row's lanes whole and keeps its
                // own tile of it, so that no PE starts its ring sends while a lane still passes.
                const Pe pe = at(h, x, y);
                const Buffers& own = buffers(h, x, y);
                std::vector<int> armed;
                for (std::size_t op = 0; op < kPrefillOperands; ++op) {
                    const Lanes& lanes = m_lanes[op];
                    const auto lane
                        = std::find_if(lanes.begin(), lanes.end(), [&](const Lane& l) { return l.y == pe.y; });
                    if (lane == lanes.end())
                        continue;
                    const std::int64_t skip = feedSkip(PrefillOperand(op), x, y);
                    const std::int64_t target = op == 0 ? own.query[0] : op == 1 ? own.key[0] : own.value[0];
                    writer.arm(pe.x, pe.y, colors[op],
                        keepTask(std::uint32_t(std::max<std::int64_t>(0, target)), lane->size(),
                            std::uint32_t(std::max<std::int64_t>(0, skip)),
                            skip < 0 ? 0 : tileSize(PrefillOperand(op), x, y, 0)));
                    armed.push_back(colors[op]);
                }
                for (const int color : armed)
                    writer.await(pe.x, pe.y, color);
                programScores(writer, h, x, y);
                if (m_grid.inSoftmax(x, y))
                    programSoftmax(writer, h, x, y);
                programWeightedValues(writer, h, x, y);
            }
        }
    }
}

void PrefillAttentionKernel::exchange(ProgramWriter& writer, Pe pe, const Transfer& out, const Transfer& in) const
{
    if (out.wavelets > 0)
        writer.send(pe.x, pe.y, out.color, out.offset, out.wavelets);
    if (in.wavelets > 0)
        writer.armAndAwait(pe.x, pe.y, in.color, storeTask(in.offset, in.wavelets));
}

void PrefillAttentionKernel::programScores(ProgramWriter& writer, int head, int x, int y) const
{
    const int g = m_grid.size();
    const Pe pe = at(head, x, y);
    const Buffers& own = buffers(head, x, y);
    const int simd = m_context.simdWidth;
    bool started = false;
    for (int s = 0; s < g; ++s) {
        const std::uint32_t block = m_grid.blockSize(m_grid.blockAt(x, y, s));
        const auto query = std::uint32_t(std::max<std::int64_t>(0, own.query[std::size_t(s)]));
        const auto key = std::uint32_t(std::max<std::int64_t>(0, own.key[std::size_t(s)]));
        if (m_grid.computes(x, y) && block > 0) {
            const steps::TileDims dims { m_grid.bandSize(y), m_grid.bandSize(x), block };
            writer.compute(pe.x, pe.y, steps::tileScores, steps::tileProductCycles(dims.rows, dims.cols, block, simd),
                query, key, own.scores, dims.packed(), 0.0f, started ? 0 : steps::kFirstTile);
            started = true;
        }
        if (s + 1 == g)
            break;
        const auto next = std::size_t(s) + 1;
        exchange(writer, pe, { rowColor(x, false), query, queryWavelets(x, y, s) },
            { rowColor(x, true), std::uint32_t(std::max<std::int64_t>(0, own.query[next])),
                queryWavelets(m_grid.ringSource(x), y, s) });
        exchange(writer, pe, { columnColor(y, false), key, keyWavelets(x, y, s) },
            { columnColor(y, true), std::uint32_t(std::max<std::int64_t>(0, own.key[next])),
                keyWavelets(x, m_grid.ringSource(y), s) });
    }
}

void PrefillAttentionKernel::programSoftmax(ProgramWriter& writer, int head, int x, int y) const
{
    const Pe pe = at(head, x, y);
    const Buffers& own = buffers(head, x, y);
    const int simd = m_context.simdWidth;
    const std::uint32_t queries = m_grid.bandSize(y);
    const steps::TileDims dims { queries, m_grid.bandSize(x), 0 };
    const std::uint32_t tile = dims.rows * dims.cols;
    const std::uint8_t diagonal = x == y ? steps::kDiagonal : 0;
    const float scale = 1.0f / std::sqrt(float(m_spec.headDim));
    // A reduction along the row to the diagonal PE, which keeps the result and sends it back.
    const auto reduceAndReturn = [&](std::uint32_t offset, bool maximum) {
        if (y == 0)
            return;
        const int outColor = x < y ? m_chain[x % 2] : kNoColor;
        if (x == 0)
            writer.send(pe.x, pe.y, m_chain[0], offset, queries);
        else
            writer.armAndAwait(pe.x, pe.y, m_chain[(x - 1) % 2],
                maximum ? maxTask(offset, queries, outColor) : addTask(offset, queries, outColor));
        if (x == y)
            writer.send(pe.x, pe.y, m_back, offset, queries);
        else
            writer.armAndAwait(pe.x, pe.y, m_back, storeTask(offset, queries));
    };
    writer.compute(pe.x, pe.y, steps::tileRowMax, steps::elementwiseCycles(tile, 2, simd), own.scores, 0, own.max,
        dims.packed(), scale, diagonal);
    reduceAndReturn(own.max, true);
    writer.compute(pe.x, pe.y, steps::tileExponentials, steps::elementwiseCycles(tile, 9, simd), own.scores, own.max,
        own.sum, dims.packed(), 0.0f, diagonal);
    reduceAndReturn(own.sum, false);
}

void PrefillAttentionKernel::programWeightedValues(ProgramWriter& writer, int head, int x, int y) const
{
    const int g = m_grid.size();
    const Pe pe = at(head, x, y);
    const Buffers& own = buffers(head, x, y);
    const int simd = m_context.simdWidth;
    for (int s = 0; s < g; ++s) {
        const std::uint32_t block = m_grid.blockSize(m_grid.blockAt(x, y, s));
        const auto partial = std::uint32_t(std::max<std::int64_t>(0, own.partial[std::size_t(s)]));
        const auto value = std::uint32_t(std::max<std::int64_t>(0, own.value[std::size_t(s)]));
        if (m_grid.computes(x, y) && block > 0) {
            const steps::TileDims dims { m_grid.bandSize(y), block, m_grid.bandSize(x) };
            const std::uint8_t flags = std::uint8_t(
                (x == y ? steps::kDiagonal : 0) | (m_grid.partialStarts(x, y, s) ? steps::kFirstTile : 0));
            writer.compute(pe.x, pe.y, steps::tileWeightedValues,
                steps::tileProductCycles(dims.rows, dims.cols, dims.inner, simd), own.scores, value, partial,
                dims.packed(), 0.0f, flags);
        }
        if (s + 1 == g)
            break;
        const auto next = std::size_t(s) + 1;
        exchange(writer, pe, { rowColor(x, false), partial, partialWavelets(x, y, s) },
            { rowColor(x, true), std::uint32_t(std::max<std::int64_t>(0, own.partial[next])),
                partialWavelets(m_grid.ringSource(x), y, s) });
        exchange(writer, pe, { columnColor(y, false), value, valueWavelets(x, y, s) },
            { columnColor(y, true), std::uint32_t(std::max<std::int64_t>(0, own.value[next])),
                valueWavelets(x, m_grid.ringSource(y), s) });
    }
    // The partial outputs complete here, divided by the row sums and rounded.
    for (int s = 0; s < g; ++s) {
        const std::uint32_t block = m_grid.blockSize(m_grid.blockAt(x, y, s));
        if (!m_grid.computes(x, y) || block == 0 || !m_grid.partialEnds(x, y, s))
            continue;
        const steps::TileDims dims { m_grid.bandSize(y), block, 0 };
        writer.compute(pe.x, pe.y, steps::tileNormalise, steps::elementwiseCycles(dims.rows * dims.cols, 2, simd),
            std::uint32_t(own.partial[std::size_t(s)]), own.sum, 0, dims.packed(), 0.0f, m_context.flags());
    }
}

int PrefillAttentionKernel::rowColor(int x, bool incoming) const
{
    return m_rowShift[m_grid.ringEdge(x, incoming)];
}

int PrefillAttentionKernel::columnColor(int y, bool incoming) const
{
    return m_columnShift[m_grid.ringEdge(y, incoming)];
}

} // namespace waferscope::core::cyclelevel
