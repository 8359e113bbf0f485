// LayerNorm or RMSNorm of a whole prompt on a g x g block, the hidden vectors where a plain
// prefill GEMM takes them (PrefillGrid): PE (x, y) holds one token band of hidden block x, the
// bands skewed so that each row and each column holds every band once.
//
// A token's sums run over all g hidden blocks, which lie on g PEs in different rows and columns.
// The kernel moves them as the GEMM moves its input and partial outputs (prefillgemmkernel.cpp,
// on the block's shared rings): the input tiles go up the columns one ring position a step while
// each row's partial sums (a float per token) go along the row; after g steps a partial has met
// every hidden block of its band and ends at the PE that holds that band's last tile, complete.
// RMSNorm is one such pass (the squares). LayerNorm takes two, as the reference does (referenceops
// (2)): the sums, whose means then travel up the columns with their tiles, and the centred squares.
// Each PE then normalises the tile it holds: S((x - mean) * inv * w + b), or S(x * inv * w).
// The tiles end g - 1 ring positions further up for each pass: the normed tiles, and the input
// beside them (the block's residual), lie as a plain GEMM takes them with the band offset one
// less for each pass (outputOffset()).
// Sums: each over the hidden blocks in ring order from a block that depends on the PE, where the
// reference adds from index 0; the terms are the reference's.
#include "core/cyclelevel/kernels/prefillnormkernel.h"

#include "core/cyclelevel/kernels/computesteps.h"
#include "core/cyclelevel/kernels/kernelsupport.h"
#include "core/cyclelevel/kernels/prefillsteps.h"
#include "core/kernels/prefillnorm.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;

PrefillNormKernel::PrefillNormKernel(PrefillNormSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
    , m_grid(std::max(1, m_spec.frame.w), std::max<std::int64_t>(1, m_spec.tokens),
          std::max<std::int64_t>(1, m_spec.weight.cols()))
{
    const int g = m_spec.frame.w;
    const auto refuse = [&](const std::string& why) { throw std::logic_error(m_spec.name + ": " + why); };
    if (g < 1 || m_spec.frame.h < g || m_spec.frame.westward)
        refuse("a " + std::to_string(g) + " x " + std::to_string(g) + " block needs an eastward region of at least "
            + "one PE and " + std::to_string(g) + " rows, the region has " + std::to_string(m_spec.frame.h));
    if (m_spec.tokens < 1)
        refuse("the prompt has no tokens");
    if (!m_spec.weight.present() || m_spec.weight.rows() != 1 || m_spec.weight.cols() < 1)
        refuse("the norm needs one row of weights");
    if (m_spec.bias.present() && (m_spec.bias.rows() != 1 || m_spec.bias.cols() != m_spec.weight.cols()))
        refuse("the bias must be one row of " + std::to_string(m_spec.weight.cols()) + " values");
    if ((m_spec.tokens + g - 1) / g > steps::TileDims::kMaxSide
        || (m_spec.weight.cols() + g - 1) / g > steps::TileDims::kMaxSide)
        refuse("tiles larger than a step takes (" + std::to_string(steps::TileDims::kMaxSide) + " a side)");
    m_offset = ((m_spec.bandOffset % g) + g) % g;
    m_inPlace = tilesInPlace(
        m_spec.name, m_spec.input, m_grid, [this](int x, int y) { return at(x, y); },
        [this](int x, int y) { return bandAt(x, y, 0); });
}

int PrefillNormKernel::outputOffset() const
{
    const int g = m_grid.size();
    return (m_offset + passes() * (g - 1)) % g;
}

std::uint32_t PrefillNormKernel::xAt(int x, int y, int moved) const
{
    if (moved == 0)
        return std::uint32_t(std::max<std::int64_t>(0, m_inPlace[std::size_t(y * m_grid.size() + x)]));
    return buffers(x, y).x[moved % 2];
}

bool PrefillNormKernel::partialStarted(int x, int step) const
{
    for (int t = 1; t <= step; ++t)
        if (block(m_grid.ringMember(m_grid.ringPosition(x) + t)) > 0)
            return true;
    return false;
}

void PrefillNormKernel::needRings(PrefillRings& rings) const
{
    const int g = m_grid.size();
    if (rings.size() != g)
        throw std::logic_error(m_spec.name + ": its block is " + std::to_string(g) + " x " + std::to_string(g)
            + ", the shared rings' " + std::to_string(rings.size()));
    for (int pass = 0; pass < passes(); ++pass)
        for (int s = 0; s + 1 < g; ++s)
            for (int y = 0; y < g; ++y)
                for (int x = 0; x < g; ++x) {
                    const std::uint32_t rows = tokens(x, y, pass * (g - 1) + s);
                    if (rows > 0)
                        rings.needRow(x, y);
                    if (rows > 0 && (block(x) > 0 || pass == 1))
                        rings.needColumn(x, y);
                }
}

void PrefillNormKernel::useRings(const PrefillRings& rings)
{
    m_rowShift = rings.rowColors();
    m_columnShift = rings.columnColors();
}

int PrefillNormKernel::rowColor(int x, bool incoming) const
{
    return m_rowShift[m_grid.ringEdge(x, incoming)];
}

int PrefillNormKernel::columnColor(int y, bool incoming) const
{
    return m_columnShift[m_grid.ringEdge(y, incoming)];
}

void PrefillNormKernel::load(StaticColorFabric& fabric)
{
    const int g = m_grid.size();
    std::uint32_t widest = 1;
    for (int b = 0; b < g; ++b)
        widest = std::max(widest, m_grid.bandSize(b));
    const int moved = passes() * (g - 1);
    m_buffers.clear();
    m_outputs.clear();
    m_moved.clear();
    std::vector<float> weights(std::size_t(m_spec.weight.cols()));
    std::vector<float> biases(std::size_t(m_spec.weight.cols()));
    m_spec.weight.row(0, weights);
    if (m_spec.bias.present())
        m_spec.bias.row(0, biases);
    for (int y = 0; y < g; ++y) {
        for (int x = 0; x < g; ++x) {
            PeState& pe = fabric.pe(at(x, y).x, at(x, y).y);
            Buffers own;
            const std::uint32_t size = block(x);
            own.weight = pe.allocF16(std::max<std::uint32_t>(1, size * (m_spec.bias.present() ? 2 : 1)));
            for (std::uint32_t i = 0; i < size; ++i) {
                pe.f16[own.weight + i] = detail::encode(weights[m_grid.blockBegin(x) + i], m_context);
                if (m_spec.bias.present())
                    pe.f16[own.weight + size + i] = detail::encode(biases[m_grid.blockBegin(x) + i], m_context);
            }
            for (int parity = 0; parity < 2; ++parity) {
                own.x[parity] = pe.allocF32(std::max<std::uint32_t>(1, widest * size));
                own.mean[parity] = pe.allocF32(2 * widest);
                own.partial[parity] = pe.allocF32(widest);
            }
            own.figures = pe.allocF32(2 * widest);
            own.out = pe.allocF32(std::max<std::uint32_t>(1, widest * size));
            m_buffers.push_back(own);
            const int band = bandAt(x, y, moved);
            if (m_grid.bandSize(band) == 0 || size == 0)
                continue;
            m_outputs.push_back(
                { at(x, y), own.out, m_grid.bandBegin(band), m_grid.bandSize(band), m_grid.blockBegin(x), size });
            m_moved.push_back({ at(x, y), xAt(x, y, moved), m_grid.bandBegin(band), m_grid.bandSize(band),
                m_grid.blockBegin(x), size });
        }
    }
}

void PrefillNormKernel::program(ProgramWriter& writer, int) const
{
    const int g = m_grid.size();
    const int simd = m_context.simdWidth;
    const int moved = passes() * (g - 1);
    const auto n = float(m_spec.weight.cols());
    for (int y = 0; y < g; ++y) {
        for (int x = 0; x < g; ++x) {
            for (int pass = 0; pass < passes(); ++pass)
                programPass(writer, x, y, pass);
            const Pe pe = at(x, y);
            const Buffers& own = buffers(x, y);
            const std::uint32_t rows = tokens(x, y, moved);
            if (rows == 0)
                continue;
            // The inverse deviations after the means (LayerNorm: beside the means that came with the tile).
            const bool layer = passes() == 2;
            const std::uint32_t figures = layer ? own.mean[(g - 1) % 2] : own.figures;
            writer.compute(pe.x, pe.y, steps::tileNormFigures, steps::elementwiseCycles(rows, 2, simd),
                own.partial[(g - 1) % 2], std::bit_cast<std::uint32_t>(m_spec.epsilon), figures + rows, rows, n,
                steps::kSquares);
            if (block(x) == 0)
                continue;
            const steps::TileDims dims { rows, block(x), 0 };
            writer.compute(pe.x, pe.y, steps::tileCentreScale,
                steps::elementwiseCycles(rows * block(x), layer ? 2 : 1, simd), xAt(x, y, moved), figures, own.out,
                dims.packed(), 0.0f, layer ? 0 : steps::kSquares);
            const auto flags = std::uint8_t(m_context.flags() | (m_spec.bias.present() ? steps::kBias : 0));
            writer.compute(pe.x, pe.y, steps::tileScaleBiasRound,
                steps::elementwiseCycles(rows * block(x), m_spec.bias.present() ? 2 : 1, simd), own.out, own.weight, 0,
                dims.packed(), 0.0f, flags);
        }
    }
}

// One pass: g sums of the tiles the PE holds into the row's partials, the partials along the row
// and the tiles (LayerNorm's second pass: with their means) up the column between them.
void PrefillNormKernel::programPass(ProgramWriter& writer, int x, int y, int pass) const
{
    const int g = m_grid.size();
    const int simd = m_context.simdWidth;
    const Pe pe = at(x, y);
    const Buffers& own = buffers(x, y);
    const bool rms = passes() == 1;
    const std::uint8_t kind = rms ? steps::kSquares : pass == 0 ? 0 : steps::kCentred;
    for (int s = 0; s < g; ++s) {
        const int moved = pass * (g - 1) + s;
        const std::uint32_t rows = tokens(x, y, moved);
        const steps::TileDims dims { rows, block(x), 0 };
        if (rows > 0 && block(x) > 0)
            writer.compute(pe.x, pe.y, steps::tileRowSums,
                steps::elementwiseCycles(rows * block(x), kind ? 2 : 1, simd), xAt(x, y, moved), own.mean[s % 2],
                own.partial[s % 2], dims.packed(), 0.0f,
                std::uint8_t(kind | (partialStarted(x, s) ? 0 : steps::kFirstTile)));
        if (s + 1 == g)
            break;
        const auto shift = [&](int outColor, int inColor, std::uint32_t from, std::uint32_t out, std::uint32_t to,
                               std::uint32_t in) {
            if (out > 0)
                writer.send(pe.x, pe.y, outColor, from, out);
            if (in == 0)
                return;
            if (out == 0)
                writer.awaitSend(pe.x, pe.y);
            writer.armAndAwait(pe.x, pe.y, inColor, storeTask(to, in));
        };
        const std::uint32_t rowsIn = tokens(m_grid.ringSource(x), y, moved);
        shift(rowColor(x, false), rowColor(x, true), own.partial[s % 2], rows, own.partial[(s + 1) % 2], rowsIn);
        const std::uint32_t below = tokens(x, m_grid.ringSource(y), moved);
        shift(columnColor(y, false), columnColor(y, true), xAt(x, y, moved), rows * block(x), own.x[(moved + 1) % 2],
            below * block(x));
        if (pass == 1)
            shift(columnColor(y, false), columnColor(y, true), own.mean[s % 2], rows, own.mean[(s + 1) % 2], below);
    }
    if (pass == 0 && passes() == 2 && tokens(x, y, g - 1) > 0) // the means, to travel with their tiles
        writer.compute(pe.x, pe.y, steps::tileNormFigures, steps::elementwiseCycles(tokens(x, y, g - 1), 1, simd),
            own.partial[(g - 1) % 2], 0, own.mean[0], tokens(x, y, g - 1), float(m_spec.weight.cols()), 0);
}

KernelCost PrefillNormKernel::closedForm() const
{
    return costPrefillNorm({ m_grid.size(), m_spec.tokens, m_spec.weight.cols(),
        m_spec.norm == DecoderShape::Norm::LayerNorm, m_spec.bias.present(), m_offset, m_context.simdWidth });
}

} // namespace waferscope::core::cyclelevel
