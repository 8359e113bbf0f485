// Causal attention over a whole prompt where the projections left q, k and v: ring attention.
//
// Layout: the prefill GEMMs (prefillgemmkernel.h) leave each projection's outputs on a g x g
// block, output band y on block row y and one token band a PE, every band once along a row. With
// as many bands as heads, block row y holds head y whole: its queries, and its kv head's keys and
// values (the k and v projections compute them for each query head's row), one token band a PE.
// A head's attention then never leaves its row, and nothing has to be moved into place first.
//
// Scheme: ring attention (Liu et al., 2023) on MeshGEMM's interleaved rings (PrefillGrid, the
// block's shared PrefillRings): the queries stay, the key and value tiles go round the row, one
// ring position a step, every shift one or two hops. After g steps every PE has met every key
// band of its head and its tiles are back where they started. Causal: a PE computes only with the
// key bands at or before its own query band (its own band masked inside).
// Two passes keep the reference's softmax exactly (referenceops.h, (6)): the first goes round
// with the keys for each query's largest score; the second goes round with the keys and the
// values, recomputes the scores, and adds up exp(s - max) and the weighted values. The division
// by the sums and the rounding come at the end, at the PE, which leaves the head's outputs for
// its token band where its queries were: the output projection takes them in place.
// Sums: the scores over the head dimension in its order; the row sums and the weighted values
// over the keys band by band in ring order, from the PE's own band (in key order within a band),
// where the reference adds them in key order. The outputs agree to the storage format's rounding
// of two sums a few ulps apart.
//
// A ring step: the compute, then the shift of the keys (and the values) to the ring target, each
// a send, then the receive armed and awaited, into the buffer the step before sent from (a PE
// that sends nothing first waits for its earlier sends to drain). So a PE holds its queries, two
// buffers each of keys and values (the first the projection's output in place), a score tile and
// its band's output: band (hd + 4 hd + band + 1) + 3 band floats.
#include "core/cyclelevel/kernels/prefillringattentionkernel.h"

#include "core/cyclelevel/kernels/computesteps.h"
#include "core/cyclelevel/kernels/prefillsteps.h"
#include "core/kernels/prefillringattention.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;

PrefillRingAttentionKernel::PrefillRingAttentionKernel(PrefillRingAttentionSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
    , m_grid(std::max(1, m_spec.frame.w), std::max<std::int64_t>(1, m_spec.tokens), std::max(1, m_spec.headDim))
{
    const int g = m_spec.frame.w;
    const auto refuse = [&](const std::string& why) { throw std::logic_error(m_spec.name + ": " + why); };
    if (g < 1 || m_spec.frame.h < g)
        refuse("a " + std::to_string(g) + " x " + std::to_string(g) + " block needs a region of at least one PE and "
            + std::to_string(g) + " rows, the region has " + std::to_string(m_spec.frame.h));
    if (m_spec.tokens < 1)
        refuse("the prompt has no tokens");
    if (m_spec.headDim < 1 || std::uint32_t(m_spec.headDim) > steps::TileDims::kMaxInner)
        refuse("a head of " + std::to_string(m_spec.headDim) + " dimensions; a step takes 1 to "
            + std::to_string(steps::TileDims::kMaxInner));
    takeInputs();
}

// Each input one tile a PE: row y head y's dimensions, one token band a PE, the row's bands
// disjoint and covering the prompt, and a PE's q, k and v tiles on the same tokens.
void PrefillRingAttentionKernel::takeInputs()
{
    const int g = size();
    const auto refuse = [&](const std::string& why) { throw std::logic_error(m_spec.name + ": " + why); };
    m_tiles.assign(std::size_t(g) * std::size_t(g), Tile {});
    std::vector<std::vector<char>> seen(3, std::vector<char>(m_tiles.size(), 0));
    const std::vector<PrefillOutputTile>* inputs[] = { &m_spec.query, &m_spec.key, &m_spec.value };
    const char* names[] = { "query", "key", "value" };
    for (int operand = 0; operand < 3; ++operand) {
        for (const PrefillOutputTile& input : *inputs[operand]) {
            const int x = input.pe.x - m_spec.frame.x(0);
            const int y = input.pe.y - m_spec.frame.y(0);
            const std::string where = std::string(names[operand]) + " tile at PE (" + std::to_string(input.pe.x) + ", "
                + std::to_string(input.pe.y) + ")";
            if (m_spec.frame.westward || x < 0 || x >= g || y < 0 || y >= g)
                refuse("the " + where + " is outside the block");
            const auto index = std::size_t(y) * std::size_t(g) + std::size_t(x);
            if (seen[std::size_t(operand)][index]++)
                refuse("a second " + where);
            if (input.firstDim != std::uint32_t(y * m_spec.headDim) || input.dims != std::uint32_t(m_spec.headDim))
                refuse("the " + where + " holds dimensions [" + std::to_string(input.firstDim) + ", "
                    + std::to_string(input.firstDim + input.dims) + "); row " + std::to_string(y) + " holds head "
                    + std::to_string(y) + "'s [" + std::to_string(y * m_spec.headDim) + ", "
                    + std::to_string((y + 1) * m_spec.headDim) + ")");
            if (input.tokens > steps::TileDims::kMaxInner)
                refuse("the " + where + " holds " + std::to_string(input.tokens) + " tokens; a step takes up to "
                    + std::to_string(steps::TileDims::kMaxInner));
            Tile& own = m_tiles[index];
            if (operand == 0) {
                own.firstToken = input.firstToken;
                own.tokens = input.tokens;
                own.query = input.offset;
            } else if (input.firstToken != own.firstToken || input.tokens != own.tokens) {
                refuse("the " + where + " holds other tokens than the query tile there");
            }
            (operand == 1 ? own.key[0] : own.value[0]) = input.offset;
        }
    }
    for (int y = 0; y < g; ++y) {
        std::int64_t tokens = 0;
        for (int x = 0; x < g; ++x) {
            const auto index = std::size_t(y * g + x);
            const int present = seen[0][index] + seen[1][index] + seen[2][index];
            if (present != 0 && present != 3)
                refuse("PE (" + std::to_string(x) + ", " + std::to_string(y) + ") of the block lacks a query, key or "
                    + "value tile");
            tokens += m_tiles[index].tokens;
        }
        if (tokens != m_spec.tokens)
            refuse("row " + std::to_string(y) + "'s tiles hold " + std::to_string(tokens) + " tokens, the prompt "
                + std::to_string(m_spec.tokens));
    }
}

int PrefillRingAttentionKernel::keySource(int x, int step) const
{
    return m_grid.ringMember(m_grid.ringPosition(x) + step);
}

void PrefillRingAttentionKernel::needRings(PrefillRings& rings) const
{
    if (rings.size() != size())
        throw std::logic_error(m_spec.name + ": its block is " + std::to_string(size()) + " x " + std::to_string(size())
            + ", the shared rings' " + std::to_string(rings.size()));
    if (size() < 2)
        return;
    for (int y = 0; y < size(); ++y)
        for (int x = 0; x < size(); ++x)
            rings.needRow(x, y);
}

void PrefillRingAttentionKernel::useRings(const PrefillRings& rings)
{
    m_rowShift = rings.rowColors();
}

int PrefillRingAttentionKernel::rowColor(int x, bool incoming) const
{
    return m_rowShift[m_grid.ringEdge(x, incoming)];
}

void PrefillRingAttentionKernel::load(StaticColorFabric& fabric)
{
    const int g = size();
    std::uint32_t widest = 1;
    for (const Tile& own : m_tiles)
        widest = std::max(widest, own.tokens);
    const auto hd = std::uint32_t(m_spec.headDim);
    m_outputs.clear();
    m_keys.clear();
    m_values.clear();
    for (int y = 0; y < g; ++y) {
        for (int x = 0; x < g; ++x) {
            Tile& own = tile(x, y);
            PeState& pe = fabric.pe(at(x, y).x, at(x, y).y);
            if (own.tokens == 0) { // relays the others' tiles only
                own.key[0] = pe.allocF32(std::size_t(widest) * hd);
                own.value[0] = pe.allocF32(std::size_t(widest) * hd);
            }
            own.key[1] = pe.allocF32(std::size_t(widest) * hd);
            own.value[1] = pe.allocF32(std::size_t(widest) * hd);
            own.scores = pe.allocF32(std::size_t(widest) * widest);
            own.max = pe.allocF32(widest);
            own.tileMax = pe.allocF32(widest);
            own.sum = pe.allocF32(widest);
            own.out = pe.allocF32(std::size_t(widest) * hd);
            if (own.tokens == 0)
                continue;
            const std::uint32_t firstDim = std::uint32_t(y) * hd;
            m_outputs.push_back({ at(x, y), own.out, own.firstToken, own.tokens, firstDim, hd });
            // Two rounds bring the keys home to their first buffer, one the values to roundParity()'s.
            m_keys.push_back({ at(x, y), own.key[0], own.firstToken, own.tokens, firstDim, hd });
            m_values.push_back({ at(x, y), own.value[roundParity()], own.firstToken, own.tokens, firstDim, hd });
        }
    }
}

void PrefillRingAttentionKernel::program(ProgramWriter& writer, int) const
{
    const int g = size();
    const int simd = m_context.simdWidth;
    for (int y = 0; y < g; ++y) {
        for (int x = 0; x < g; ++x) {
            programPass(writer, x, y, false);
            programPass(writer, x, y, true);
            const Tile& own = tile(x, y);
            if (own.tokens == 0)
                continue;
            const steps::TileDims dims { own.tokens, std::uint32_t(m_spec.headDim), 0 };
            writer.compute(at(x, y).x, at(x, y).y, steps::tileNormalise,
                steps::elementwiseCycles(std::uint64_t(dims.rows) * dims.cols, 2, simd), own.out, own.sum, 0,
                dims.packed(), 0.0f, m_context.flags());
        }
    }
}

// One round of the row: the first pass the maxima, the second (`weighted`) the exponentials, their
// sums and the weighted values; each step's keys (and values) then go on to the ring target.
void PrefillRingAttentionKernel::programPass(ProgramWriter& writer, int x, int y, bool weighted) const
{
    const int g = size();
    const int simd = m_context.simdWidth;
    const Tile& own = tile(x, y);
    const Pe pe = at(x, y);
    const auto hd = std::uint32_t(m_spec.headDim);
    const float scale = 1.0f / std::sqrt(float(m_spec.headDim));
    // The keys arrive at the second pass where the first left them: after g shifts, buffer g mod 2.
    const int keyBase = weighted ? roundParity() : 0;
    for (int s = 0; s < g; ++s) {
        const Tile& keys = tile(keySource(x, s), y);
        const std::uint32_t key = own.key[(keyBase + s) % 2];
        const std::uint32_t value = own.value[s % 2];
        if (own.tokens > 0 && keys.tokens > 0 && keys.firstToken <= own.firstToken) {
            const bool first = s == 0; // the PE's own band, always visible
            const std::uint8_t diagonal = keys.firstToken == own.firstToken ? steps::kDiagonal : 0;
            const std::uint8_t accumulate = first ? 0 : steps::kAccumulate;
            const steps::TileDims dims { own.tokens, keys.tokens, hd };
            const std::uint32_t tile = own.tokens * keys.tokens;
            writer.compute(pe.x, pe.y, steps::tileScores, steps::tileProductCycles(dims.rows, dims.cols, hd, simd),
                own.query, key, own.scores, dims.packed(), 0.0f, steps::kFirstTile);
            writer.compute(pe.x, pe.y, steps::tileRowMax, steps::elementwiseCycles(tile, 2, simd), own.scores, 0,
                weighted ? own.tileMax : own.max, dims.packed(), scale,
                std::uint8_t(diagonal | (weighted ? 0 : accumulate)));
            if (weighted) {
                writer.compute(pe.x, pe.y, steps::tileExponentials, steps::elementwiseCycles(tile, 9, simd), own.scores,
                    own.max, own.sum, dims.packed(), 0.0f, std::uint8_t(diagonal | accumulate));
                const steps::TileDims product { own.tokens, hd, keys.tokens };
                writer.compute(pe.x, pe.y, steps::tileWeightedValues,
                    steps::tileProductCycles(product.rows, product.cols, product.inner, simd), own.scores, value,
                    own.out, product.packed(), 0.0f, std::uint8_t(diagonal | (first ? steps::kFirstTile : 0)));
            }
        }
        if (g < 2)
            continue;
        const std::uint32_t out = keys.tokens * hd;
        const std::uint32_t in = tile(keySource(x, s + 1), y).tokens * hd;
        const int outColor = rowColor(x, false);
        const int inColor = rowColor(x, true);
        const auto shiftOne = [&](std::uint32_t from, std::uint32_t to) {
            if (out > 0)
                writer.send(pe.x, pe.y, outColor, from, out);
            if (in == 0)
                return;
            if (out == 0)
                writer.awaitSend(pe.x, pe.y);
            writer.armAndAwait(pe.x, pe.y, inColor, storeTask(to, in));
        };
        shiftOne(key, own.key[(keyBase + s + 1) % 2]);
        if (weighted)
            shiftOne(value, own.value[(s + 1) % 2]);
    }
}

KernelCost PrefillRingAttentionKernel::closedForm() const
{
    PrefillRingAttentionShape shape { size(), m_spec.headDim, {}, m_context.simdWidth };
    for (const Tile& own : m_tiles)
        shape.bands.push_back({ own.firstToken, own.tokens });
    return costPrefillRingAttention(shape);
}

} // namespace waferscope::core::cyclelevel
