// Prefill GEMM on a g x g block of PEs: Y = X W^T + b for a whole prompt at once.
//
// Scheme: Cannon's algorithm on MeshGEMM's interleaved rings (WaferLLM, OSDI 2025), the same
// rings as the prefill attention (PrefillGrid: every shift one or two hops, whatever g), in its
// weight-stationary form. Block row y owns output band y, block column x input block x, and
// PE (x, y) holds W's tile (outputs of band y, inputs of block x) in SRAM for good: the weights,
// the largest operand and the one every prompt and every decode token reuses, never move. What
// moves is the prompt: at step s PE (x, y) holds token band blockAt(x, y, s) of X's input block x
// (that tile goes up column x, one ring position a step) and the partial outputs of that token
// band and output band y (they go along row y). After g steps each partial has met every input
// block of its row once and ends at the PE of its last step, which applies the epilogue (bias,
// rounding, optionally the activation) and keeps it: the outputs are left in place, one
// tokens x outputs tile a PE (outputTiles()).
// Cannon's output-stationary form would instead send W's tiles round the columns (g tiles'
// storage a PE, and the whole W over the links every prompt); SUMMA would multicast every block
// over whole rows and columns.
//
// The input arrives already skewed, as the attention's: each block row's lane carries its PEs'
// step-0 tiles in column order, and every PE of the row takes the lane whole and keeps its own.
// A ring step: the tile product, then the row shift (partials), then the column shift (inputs),
// each a send, then the receive armed and awaited (the attention kernel's order, for the same
// reason). A PE alternates two buffers of each tile: a step receives into the buffer its previous
// step sent, once that send has drained (a send starts only once the PE's previous send has; a PE
// that sends nothing on a shift awaits its sends before it arms the receive). So a PE holds W's
// tile and its biases (16-bit) and two partial and two input tiles, 2 ceil(T / g) (n_y + k_x)
// floats, n_y and k_x the block row's outputs and the block column's inputs.
//
// Numbers: linearOverTokens' S(sum_j W_ij x_tj + b_i), except that each sum runs over the input
// blocks in ring order from a block that depends on the PE (Cannon's skew); on one PE it is the
// reference's order and the outputs are the reference's to the bit.
#include "core/cyclelevel/kernels/prefillgemmkernel.h"

#include "core/cyclelevel/kernels/computesteps.h"
#include "core/cyclelevel/kernels/kernelsupport.h"
#include "core/cyclelevel/kernels/prefillsteps.h"
#include "core/kernels/prefillgemm.h"

#include <algorithm>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;
using detail::keepTask;
using detail::placeRingShifts;

PrefillGemmKernel::PrefillGemmKernel(PrefillGemmSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
    , m_grid(std::max(1, m_spec.frame.w), std::max<std::int64_t>(1, m_spec.tokens),
          std::max<std::int64_t>(1, m_spec.weight.cols()))
{
    const int g = m_spec.frame.w;
    const auto refuse = [&](const std::string& why) { throw std::logic_error(m_spec.name + ": " + why); };
    if (g < 1 || m_spec.frame.h < g)
        refuse("a " + std::to_string(g) + " x " + std::to_string(g) + " block needs a region of at least one PE and "
            + std::to_string(g) + " rows, the region has " + std::to_string(m_spec.frame.h));
    if (m_spec.tokens < 1)
        refuse("the prompt has no tokens");
    if (!m_spec.weight.present() || m_spec.weight.cols() < 1)
        refuse("the prefill GEMM needs a weight matrix");
    if (m_spec.bias.present() && (m_spec.bias.rows() != 1 || m_spec.bias.cols() != m_spec.weight.rows()))
        refuse("the bias must be one row of " + std::to_string(m_spec.weight.rows()) + " values (one per output), got "
            + std::to_string(m_spec.bias.rows()) + " x " + std::to_string(m_spec.bias.cols()));
    if (m_spec.activation && (*m_spec.activation == Activation::SwiGlu || *m_spec.activation == Activation::GeGlu))
        refuse(std::string("a gated activation (") + toString(*m_spec.activation)
            + ") needs a second input, which the prefill GEMM does not take");
    const std::int64_t tokenBand = (m_spec.tokens + g - 1) / g;
    const int group = m_spec.queryHeadsPerKvHead;
    if (group < 1 || ((group > 1 || m_spec.rotary) && m_spec.headDim < 1)
        || (m_spec.headDim > 0 && m_spec.weight.rows() % m_spec.headDim != 0))
        refuse("heads of " + std::to_string(m_spec.headDim) + " outputs, " + std::to_string(group)
            + " query heads a kv head: W's " + std::to_string(m_spec.weight.rows()) + " rows must be whole heads");
    const std::int64_t outBand = (outputs() + g - 1) / g;
    const std::int64_t inBlock = (m_spec.weight.cols() + g - 1) / g;
    if (tokenBand > steps::TileDims::kMaxSide || outBand > steps::TileDims::kMaxSide
        || inBlock > steps::TileDims::kMaxInner)
        refuse("tiles of " + std::to_string(tokenBand) + " tokens x " + std::to_string(outBand) + " outputs over "
            + std::to_string(inBlock) + " inputs, more than a step takes (" + std::to_string(steps::TileDims::kMaxSide)
            + " x " + std::to_string(steps::TileDims::kMaxSide) + " over " + std::to_string(steps::TileDims::kMaxInner)
            + ")");
    for (int b = 0; b <= g; ++b)
        m_outBands.push_back(std::uint32_t(outputs() * b / g));
    if (m_spec.rotary)
        for (const std::uint32_t boundary : m_outBands)
            if (boundary % std::uint32_t(m_spec.headDim) != 0)
                refuse("rotary needs whole heads a band: " + std::to_string(outputs()) + " outputs in "
                    + std::to_string(g) + " bands of heads of " + std::to_string(m_spec.headDim));
    m_offset = ((m_spec.bandOffset % g) + g) % g;
    if (!m_spec.inputInPlace.empty()) {
        m_inPlace = tilesInPlace(
            m_spec.name, m_spec.inputInPlace, m_grid, [this](int x, int y) { return at(x, y); },
            [this](int x, int y) { return bandAt(x, y, 0); });
        return;
    }
    if (m_spec.transposed)
        refuse("a transposed GEMM takes its input in place (lanes run along rows, its input blocks are rows)");
    // The lanes: per block row, the step-0 input tiles of its PEs in column order.
    std::uint32_t next = 0;
    for (int y = 0; y < g; ++y) {
        std::uint32_t length = 0;
        for (int x = 0; x < g; ++x)
            length += inputWavelets(x, y, 0);
        if (length == 0)
            continue;
        m_lanes.push_back({ m_spec.frame.y(y), next, next + length });
        next += length;
    }
}

std::uint32_t PrefillGemmKernel::inputAt(int x, int y, int step) const
{
    if (step == 0 && !m_inPlace.empty())
        return std::uint32_t(std::max<std::int64_t>(0, m_inPlace[std::size_t(y * m_grid.size() + x)]));
    return buffers(x, y).input[step % 2];
}

std::int64_t PrefillGemmKernel::weightRow(std::int64_t output) const
{
    const int group = std::max(1, m_spec.queryHeadsPerKvHead);
    if (group == 1)
        return output;
    const std::int64_t head = output / m_spec.headDim;
    return head / group * m_spec.headDim + output % m_spec.headDim;
}

bool PrefillGemmKernel::partialStarted(int x, int step) const
{
    for (int t = 1; t <= step; ++t)
        if (inSize(m_grid.ringMember(m_grid.ringPosition(x) + t)) > 0)
            return true;
    return false;
}

std::uint32_t PrefillGemmKernel::feedSkip(int x, int y) const
{
    std::uint32_t skip = 0;
    for (int before = 0; before < x; ++before)
        skip += inputWavelets(before, y, 0);
    return skip;
}

std::vector<Pe> PrefillGemmKernel::taps(std::size_t lane) const
{
    const int y = m_lanes[lane].y - m_spec.frame.y0;
    std::vector<Pe> pes;
    for (int x = 0; x < m_grid.size(); ++x)
        pes.push_back(at(x, y));
    return pes;
}

std::vector<float> PrefillGemmKernel::feed(std::span<const float> x) const
{
    const auto in = std::size_t(m_spec.weight.cols());
    if (x.size() != std::size_t(m_spec.tokens) * in)
        throw std::logic_error(m_spec.name + ": an input of " + std::to_string(m_spec.tokens) + " x "
            + std::to_string(in) + " expected, got " + std::to_string(x.size()) + " values");
    std::vector<float> out;
    for (const Lane& lane : m_lanes) {
        const int y = lane.y - m_spec.frame.y0;
        for (int column = 0; column < m_grid.size(); ++column) {
            const int band = bandAt(column, y, 0);
            for (std::uint32_t t = 0; t < m_grid.bandSize(band); ++t)
                for (std::uint32_t i = 0; i < inSize(column); ++i)
                    out.push_back(x[(m_grid.bandBegin(band) + t) * in + m_grid.blockBegin(column) + i]);
        }
    }
    return out;
}

bool PrefillGemmKernel::sendsPartials(int from, int row) const
{
    for (int s = 0; s + 1 < m_grid.size(); ++s)
        if (partialWavelets(from, row, s) > 0)
            return true;
    return false;
}

bool PrefillGemmKernel::sendsInputs(int column, int from) const
{
    for (int s = 0; s + 1 < m_grid.size(); ++s)
        if (inputWavelets(column, from, s) > 0)
            return true;
    return false;
}

void PrefillGemmKernel::route(RouteBook& book)
{
    placeRingShifts(
        book, m_spec.name, m_grid, 1, [&](int from, int row) { return sendsPartials(from, row); },
        [&](int column, int from) { return sendsInputs(column, from); }, [this](int, int x, int y) { return at(x, y); },
        m_rowShift, m_columnShift);
}

// A plain GEMM's rows are the block's rows; a transposed one's rows are the block's columns.
void PrefillGemmKernel::needRings(PrefillRings& rings) const
{
    const int g = m_grid.size();
    if (rings.size() != g)
        throw std::logic_error(m_spec.name + ": its block is " + std::to_string(g) + " x " + std::to_string(g)
            + ", the shared rings' " + std::to_string(rings.size()));
    for (int other = 0; other < g; ++other)
        for (int from = 0; from < g; ++from) {
            if (sendsPartials(from, other))
                m_spec.transposed ? rings.needColumn(other, from) : rings.needRow(from, other);
            if (sendsInputs(other, from))
                m_spec.transposed ? rings.needRow(from, other) : rings.needColumn(other, from);
        }
}

void PrefillGemmKernel::useRings(const PrefillRings& rings)
{
    m_rowShift = m_spec.transposed ? rings.columnColors() : rings.rowColors();
    m_columnShift = m_spec.transposed ? rings.rowColors() : rings.columnColors();
}

void PrefillGemmKernel::load(StaticColorFabric& fabric)
{
    const int g = m_grid.size();
    m_buffers.clear();
    m_outputs.clear();
    for (int y = 0; y < g; ++y)
        for (int x = 0; x < g; ++x)
            loadPe(fabric, x, y);
}

void PrefillGemmKernel::loadPe(StaticColorFabric& fabric, int x, int y)
{
    const int g = m_grid.size();
    const Pe pe = at(x, y);
    PeState& state = fabric.pe(pe.x, pe.y);
    Buffers buffers;
    // W's tile, row-major outputs x inputs, in the 16-bit storage format.
    buffers.weight = state.allocF16(std::size_t(outSize(y)) * inSize(x));
    std::vector<float> row(std::size_t(m_spec.weight.cols()));
    for (std::uint32_t o = 0; o < outSize(y); ++o) {
        m_spec.weight.row(weightRow(m_outBands[std::size_t(y)] + o), row);
        for (std::uint32_t i = 0; i < inSize(x); ++i)
            state.f16[buffers.weight + o * inSize(x) + i] = detail::encode(row[m_grid.blockBegin(x) + i], m_context);
    }
    if (m_spec.bias.present()) {
        buffers.bias = state.allocF16(outSize(y));
        for (std::uint32_t o = 0; o < outSize(y); ++o)
            state.f16[buffers.bias + o]
                = detail::encode(m_spec.bias.at(0, weightRow(m_outBands[std::size_t(y)] + o)), m_context);
    }
    std::uint32_t tokens = 0; // the widest token band
    for (int band = 0; band < g; ++band)
        tokens = std::max(tokens, m_grid.bandSize(band));
    for (int parity = 0; parity < 2; ++parity) {
        buffers.partial[parity] = state.allocF32(std::max<std::uint32_t>(1, tokens * outSize(y)));
        buffers.input[parity] = state.allocF32(std::max<std::uint32_t>(1, tokens * inSize(x)));
    }
    const int band = bandAt(x, y, g - 1);
    if (m_grid.bandSize(band) > 0 && outSize(y) > 0)
        m_outputs.push_back({ pe, buffers.partial[(g - 1) % 2], m_grid.bandBegin(band), m_grid.bandSize(band),
            m_outBands[std::size_t(y)], outSize(y) });
    m_buffers.push_back(std::move(buffers));
}

void PrefillGemmKernel::program(ProgramWriter& writer, int inputColor) const
{
    for (int y = 0; y < m_grid.size(); ++y)
        for (int x = 0; x < m_grid.size(); ++x)
            programPe(writer, inputColor, x, y);
}

void PrefillGemmKernel::programPe(ProgramWriter& writer, int inputColor, int x, int y) const
{
    const int g = m_grid.size();
    const Pe pe = at(x, y);
    const Buffers& own = buffers(x, y);
    // The feed: the PE takes its row's lane whole and keeps its own tile of it.
    const auto lane = std::find_if(m_lanes.begin(), m_lanes.end(), [&](const Lane& l) { return l.y == pe.y; });
    if (lane != m_lanes.end())
        writer.armAndAwait(
            pe.x, pe.y, inputColor, keepTask(own.input[0], lane->size(), feedSkip(x, y), inputWavelets(x, y, 0)));
    for (int s = 0; s < g; ++s) {
        const int now = s % 2;
        const int next = (s + 1) % 2;
        const steps::TileDims dims { tokenBand(x, y, s), outSize(y), inSize(x) };
        if (dims.rows > 0 && dims.cols > 0 && dims.inner > 0) {
            const auto flags = std::uint8_t(m_context.flags() | (partialStarted(x, s) ? 0 : steps::kFirstTile));
            writer.compute(pe.x, pe.y, steps::tileLinear,
                steps::tileProductCycles(dims.rows, dims.cols, dims.inner, m_context.simdWidth), inputAt(x, y, s),
                own.weight, own.partial[now], dims.packed(), 0.0f, flags);
        }
        if (s + 1 == g)
            break;
        shift(writer, pe, rowColor(x, false), rowColor(x, true), own.partial[now], partialWavelets(x, y, s),
            own.partial[next], partialWavelets(m_grid.ringSource(x), y, s));
        shift(writer, pe, columnColor(y, false), columnColor(y, true), inputAt(x, y, s), inputWavelets(x, y, s),
            own.input[next], inputWavelets(x, m_grid.ringSource(y), s));
    }
    programEpilogue(writer, x, y);
}

void PrefillGemmKernel::shift(ProgramWriter& writer, Pe pe, int outColor, int inColor, std::uint32_t from,
    std::uint32_t out, std::uint32_t to, std::uint32_t in) const
{
    if (out > 0)
        writer.send(pe.x, pe.y, outColor, from, out);
    if (in == 0)
        return;
    if (out == 0)
        writer.awaitSend(pe.x, pe.y);
    writer.armAndAwait(pe.x, pe.y, inColor, storeTask(to, in));
}

void PrefillGemmKernel::programEpilogue(ProgramWriter& writer, int x, int y) const
{
    const int g = m_grid.size();
    const Pe pe = at(x, y);
    const Buffers& own = buffers(x, y);
    const steps::TileDims dims { tokenBand(x, y, g - 1), outSize(y), 0 };
    const std::uint32_t size = dims.rows * dims.cols;
    if (size == 0)
        return;
    const int simd = m_context.simdWidth;
    const auto flags = std::uint8_t(m_context.flags() | (m_spec.bias.present() ? steps::kBias : 0));
    const std::uint32_t output = own.partial[(g - 1) % 2];
    writer.compute(pe.x, pe.y, steps::tileBiasRound, steps::elementwiseCycles(size, 1, simd), output, own.bias, 0,
        dims.packed(), 0.0f, flags);
    if (m_spec.activation)
        writer.compute(pe.x, pe.y, steps::activation, steps::elementwiseCycles(size, 8, simd), output, size, 0, 0,
            float(int(*m_spec.activation)), m_context.flags());
    if (m_spec.rotary)
        writer.compute(pe.x, pe.y, steps::tileRotary, steps::elementwiseCycles(size, 6, simd), output,
            std::uint32_t(m_spec.headDim), m_grid.bandBegin(bandAt(x, y, g - 1)), dims.packed(), m_spec.ropeTheta,
            m_context.flags());
}

int PrefillGemmKernel::rowColor(int x, bool incoming) const
{
    return m_rowShift[m_grid.ringEdge(x, incoming)];
}

int PrefillGemmKernel::columnColor(int y, bool incoming) const
{
    return m_columnShift[m_grid.ringEdge(y, incoming)];
}

KernelCost PrefillGemmKernel::closedForm() const
{
    PrefillGemmShape shape { m_grid.size(), m_spec.tokens, m_spec.weight.cols(), outputs(),
        m_spec.activation.has_value(), m_context.simdWidth };
    shape.rotary = m_spec.rotary;
    shape.inputInPlace = !m_spec.inputInPlace.empty();
    shape.bandOffset = m_offset;
    return costPrefillGemm(shape);
}

} // namespace waferscope::core::cyclelevel
