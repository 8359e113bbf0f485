// Weight streaming, the way Cerebras trains (Hall et al., Cerebras weight streaming): the
// activations stay resident, the weights stream through.
//
// Layout: R x C PEs. PE column c holds tokens [c T, (c + 1) T) of the resident operand, every
// inner index of them (16-bit, inner-major: T values an index), in each of its R PEs. PE row r
// owns the outputs of band r (the outputs split over the rows as evenly as they go) and
// accumulates them for its tokens in FP32, dims x tokens.
//
// The stream: row r's weights enter at the west edge (from MemoryX through SwarmX; in the kernel
// tests, from the PE before the first column) and are multicast along the row. Output by output
// of the band, a wavelet per non-zero weight: the weight in the high 16 bits, its inner index in
// the low 16; then a row marker. Every PE of the row takes every wavelet: an FmacStream task
// adds weight x its tokens' activations of that index into the output's accumulators
// (max(1, ceil(T / SIMD)) cycles), and a marker moves it on to the next output (a cycle). Zeros
// are never streamed, so a sparse W costs its non-zeros only.
//
// Forward: Y = W X, the band's rows of W streamed in index order (the reference's order:
// referenceops' linear sums from index 0 upwards, so each accumulator is the reference's sum to
// the bit). Backward delta: dX = W^T dY, W streamed again by its columns: output j of the band
// takes W's column j, index i along M.
#include "core/cyclelevel/kernels/streamgemmkernel.h"

#include "core/cyclelevel/kernels/kernelsupport.h"
#include "core/kernels/streamgemm.h"

#include <bit>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;

void checkStreamLayout(const std::string& kernel, const Frame& frame, const WeightTensor& weight, int tokensPerPe)
{
    const auto refuse = [&](const std::string& why) { throw std::logic_error(kernel + ": " + why); };
    if (frame.w < 1 || frame.h < 1 || frame.westward)
        refuse("needs an eastward region of at least one PE");
    if (!weight.present() || weight.cols() < 1)
        refuse("needs a weight matrix");
    if (tokensPerPe < 1)
        refuse("a PE must hold at least one token");
}

StreamGemmKernel::StreamGemmKernel(StreamGemmSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
{
    const auto refuse = [&](const std::string& why) { throw std::logic_error(m_spec.name + ": " + why); };
    checkStreamLayout(m_spec.name, m_spec.frame, m_spec.weight, m_spec.tokensPerPe);
    if (m_spec.pass == Pass::BackwardGradient)
        refuse("the weight gradient is not a streamed GEMM's pass");
    std::int64_t indexed = 0; // the widest inner range a row's wavelets name
    for (int r = 0; r < rows(); ++r)
        indexed = std::max<std::int64_t>(indexed, innerEnd(r) - innerBegin(r));
    if (indexed >= std::int64_t(kRowMarker))
        refuse("an inner dimension of " + std::to_string(indexed) + "; a wavelet's index names up to "
            + std::to_string(kRowMarker - 1));
    const std::size_t expected = std::size_t(columns()) * std::size_t(m_spec.tokensPerPe) * std::size_t(inner());
    if (m_spec.resident.size() != expected)
        refuse("a resident operand of " + std::to_string(m_spec.resident.size()) + " values; "
            + std::to_string(columns() * m_spec.tokensPerPe) + " tokens x " + std::to_string(inner()) + " expected");
    std::uint32_t next = 0;
    for (int r = 0; r < rows(); ++r) {
        const auto length = std::uint32_t(appendStream(r, nullptr) + bandSize(r));
        if (bandSize(r) == 0)
            continue;
        m_lanes.push_back({ m_spec.frame.y(r), next, next + length });
        next += length;
    }
}

std::int64_t StreamGemmKernel::outputs() const
{
    return m_spec.pass == Pass::Forward ? m_spec.weight.rows() : m_spec.weight.cols();
}

std::int64_t StreamGemmKernel::inner() const
{
    return m_spec.pass == Pass::Forward ? m_spec.weight.cols() : m_spec.weight.rows();
}

float StreamGemmKernel::weightOf(std::int64_t output, std::int64_t k) const
{
    return m_spec.pass == Pass::Forward ? m_spec.weight.at(output, k) : m_spec.weight.at(k, output);
}

bool StreamGemmKernel::streams(std::int64_t output, std::int64_t k) const
{
    if (!m_spec.keep.present())
        return weightOf(output, k) != 0.0f;
    return (m_spec.pass == Pass::Forward ? m_spec.keep.at(output, k) : m_spec.keep.at(k, output)) != 0.0f;
}

std::int64_t StreamGemmKernel::appendStream(int r, std::vector<float>* out) const
{
    std::int64_t weights = 0;
    for (std::uint32_t o = bandBegin(r); o < bandBegin(r) + bandSize(r); ++o) {
        for (std::int64_t k = innerBegin(r); k < innerEnd(r); ++k) {
            const float w = weightOf(o, k);
            if (!streams(o, k))
                continue;
            ++weights;
            if (out)
                out->push_back(std::bit_cast<float>(
                    (std::uint32_t(detail::encode(w, m_context)) << 16) | std::uint32_t(k - innerBegin(r))));
        }
        if (out)
            out->push_back(std::bit_cast<float>(std::uint32_t(kRowMarker)));
    }
    return weights;
}

std::vector<Pe> StreamGemmKernel::taps(std::size_t lane) const
{
    std::vector<Pe> pes;
    for (int c = 0; c < columns(); ++c)
        pes.push_back({ m_spec.frame.x(c), m_lanes[lane].y });
    return pes;
}

std::vector<float> StreamGemmKernel::feed() const
{
    std::vector<float> out;
    for (int r = 0; r < rows(); ++r)
        appendStream(r, &out);
    return out;
}

void StreamGemmKernel::load(StaticColorFabric& fabric)
{
    const auto T = std::uint32_t(m_spec.tokensPerPe);
    const auto n = std::uint32_t(inner());
    m_activations.clear();
    m_outputs.clear();
    for (int r = 0; r < rows(); ++r) {
        const std::uint32_t first = innerBegin(r);
        const std::uint32_t held = std::max<std::uint32_t>(1, innerEnd(r) - first);
        for (int c = 0; c < columns(); ++c) {
            PeState& pe = fabric.pe(m_spec.frame.x(c), m_spec.frame.y(r));
            const std::uint32_t activations = pe.allocF16(std::size_t(held) * T);
            for (std::uint32_t k = 0; k < innerEnd(r) - first; ++k)
                for (std::uint32_t t = 0; t < T; ++t)
                    pe.f16[activations + k * T + t]
                        = detail::encode(m_spec.resident[(std::size_t(c) * T + t) * n + first + k], m_context);
            m_activations.push_back(activations);
            if (bandSize(r) == 0)
                continue;
            const std::uint32_t out = pe.allocF32(std::size_t(bandSize(r)) * T);
            m_outputs.push_back({ { m_spec.frame.x(c), m_spec.frame.y(r) }, out, std::uint32_t(c) * T, T, bandBegin(r),
                bandSize(r), true });
        }
    }
}

void StreamGemmKernel::program(ProgramWriter& writer, int inputColor) const
{
    std::size_t tile = 0;
    for (int r = 0; r < rows(); ++r) {
        for (int c = 0; c < columns(); ++c) {
            if (bandSize(r) == 0)
                continue;
            const PrefillOutputTile& out = m_outputs[tile++];
            DataTask task;
            task.kind = TaskKind::FmacStream;
            task.vector = out.offset;
            task.length = std::uint32_t(m_spec.tokensPerPe);
            task.matrix = m_activations[std::size_t(r) * std::size_t(columns()) + std::size_t(c)];
            task.expected = bandSize(r);
            task.format = m_context.format();
            writer.armAndAwait(out.pe.x, out.pe.y, inputColor, task);
        }
    }
}

KernelCost StreamGemmKernel::closedForm() const
{
    return closedForm(0, 1, 1);
}

KernelCost StreamGemmKernel::closedForm(std::uint64_t start, std::uint32_t wavelets, std::uint32_t cycles) const
{
    StreamGemmShape shape;
    shape.ioStart = start;
    shape.ioWavelets = wavelets;
    shape.ioCycles = cycles;
    shape.columns = columns();
    shape.tokensPerPe = m_spec.tokensPerPe;
    shape.simdWidth = m_context.simdWidth;
    for (int r = 0; r < rows(); ++r) {
        shape.weights.push_back(appendStream(r, nullptr));
        shape.outputs.push_back(bandSize(r));
    }
    return costStreamGemm(shape);
}

} // namespace waferscope::core::cyclelevel
