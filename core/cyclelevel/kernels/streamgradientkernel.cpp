// The weight gradient of weight streaming: dW = dY X^T over the tokens resident on the wafer.
//
// Layout: as the streamed GEMM's (streamgemmkernel.cpp): PE column c holds tokens
// [c T, (c + 1) T) of X, every input (16-bit, input-major: T values an input), and PE row r the
// band of the M outputs the forward streamed along it, so each PE also holds dY of its tokens for
// its band. A weight of the band the mask keeps (every weight of a dense W) is a pair (o, j).
//
// Each PE first computes its tokens' share of every kept weight's gradient, in stream order:
// share(o, j) = sum over its T tokens, in order, of dY[o][t] X[j][t] (a compute step of
// max(1, ceil(T / SIMD)) cycles a pair, FP32). Then the shares are added along the row, east to
// west, on two alternating colors: the last PE sends its shares, each PE before it adds what
// comes to its own share and sends the sum on (an AddForward task, a cycle a wavelet); the first
// PE keeps the sums, the band's gradient, and then sends them off the wafer through its west edge
// link (on a third color, through any PEs west of the region) at the pace the I/O takes them. Sums: each column's
// tokens in order, then the columns from east to west, ((s_{C-1} + s_{C-2}) + s_{C-3}) ...
#include "core/cyclelevel/kernels/streamgradientkernel.h"

#include "core/cyclelevel/kernels/streamgemmkernel.h"

#include "core/cyclelevel/kernels/computesteps.h"
#include "core/cyclelevel/kernels/kernelsupport.h"
#include "core/kernels/streamgemm.h"

#include <bit>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;

namespace {

float decode(std::uint16_t bits, bool bf16)
{
    return bf16 ? bfloat16ToFloat(bits) : halfToFloat(bits);
}

// A chunk's header (f32 at c): its first pair p0, its pairs, whether the band is dense, N, and
// the f16 offset of a sparse band's pairs. f32[d + n] = sum over t < T of f16 dY[a + o T + t] *
// f16 X[b + j T + t] for pair p0 + n, (o, j) = (p / N, p % N) in a dense band, else listed at the
// pairs' offset; T = scalar.
void gradientShares(PeState& pe, const Step& step)
{
    const auto T = std::uint32_t(step.scalar);
    const bool bf16 = step.color & steps::kBf16;
    const auto first = std::uint32_t(pe.f32[step.c]);
    const auto count = std::uint32_t(pe.f32[step.c + 1]);
    const bool dense = pe.f32[step.c + 2] != 0.0f;
    const auto inputs = std::uint32_t(pe.f32[step.c + 3]);
    const auto listed = std::uint32_t(pe.f32[step.c + 4]);
    for (std::uint32_t n = 0; n < count; ++n) {
        const std::uint32_t p = first + n;
        const std::uint32_t o = dense ? p / inputs : pe.f16[listed + 2 * p];
        const std::uint32_t j = dense ? p % inputs : pe.f16[listed + 2 * p + 1];
        float sum = 0.0f;
        for (std::uint32_t t = 0; t < T; ++t)
            sum += decode(pe.f16[step.a + o * T + t], bf16) * decode(pe.f16[step.b + j * T + t], bf16);
        pe.f32[step.d + n] = sum;
    }
    pe.fmacs += std::uint64_t(count) * T;
}

} // namespace

StreamGradientKernel::StreamGradientKernel(StreamGradientSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
{
    const auto refuse = [&](const std::string& why) { throw std::logic_error(m_spec.name + ": " + why); };
    checkStreamLayout(m_spec.name, m_spec.frame, m_spec.weight, m_spec.tokensPerPe);
    const std::size_t tokens = std::size_t(columns()) * std::size_t(m_spec.tokensPerPe);
    if (m_spec.input.size() != tokens * std::size_t(inputs()) || m_spec.delta.size() != tokens * std::size_t(outputs()))
        refuse("operands of " + std::to_string(m_spec.input.size()) + " and " + std::to_string(m_spec.delta.size())
            + " values; " + std::to_string(tokens) + " tokens x " + std::to_string(inputs()) + " inputs and x "
            + std::to_string(outputs()) + " outputs expected");
    if (inputs() > 0xffff || outputs() > 0xffff)
        refuse("indices beyond a PE's 16-bit words");
    for (int r = 0; r < rows(); ++r)
        m_kept.push_back(std::int64_t(kept(r).size()));
}

std::vector<std::pair<std::int64_t, std::int64_t>> StreamGradientKernel::kept(int r) const
{
    std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
    for (std::uint32_t o = bandBegin(r); o < bandBegin(r) + bandSize(r); ++o)
        for (std::int64_t j = 0; j < inputs(); ++j)
            if (m_spec.weight.at(o, j) != 0.0f)
                pairs.push_back({ o, j });
    return pairs;
}

void StreamGradientKernel::route(RouteBook& book)
{
    StreamTree chain[2] { StreamTree(m_spec.name + " shares"), StreamTree(m_spec.name + " shares") };
    StreamTree exit(m_spec.name + " out");
    for (int r = 0; r < rows(); ++r) {
        if (m_kept[std::size_t(r)] == 0)
            continue;
        const int y = m_spec.frame.y(r);
        for (int c = columns() - 1; c > 0; --c) {
            StreamTree& tree = chain[c % 2];
            tree.hop(m_spec.frame.x(c), y, Fabric::kRampPort, directionBit(West));
            tree.hop(m_spec.frame.x(c - 1), y, East, kRampBit);
        }
        // From the first PE west to the wafer's edge, and off it.
        for (int x = m_spec.frame.x(0); x >= 0; --x)
            exit.hop(x, y, x == m_spec.frame.x(0) ? Fabric::kRampPort : East, directionBit(West));
    }
    for (int parity = 0; parity < 2; ++parity)
        if (!chain[parity].empty())
            m_colors[parity] = book.place(chain[parity]);
    if (!exit.empty())
        m_exit = book.place(exit);
}

std::vector<std::vector<float>> StreamGradientKernel::exited(const StaticColorFabric& fabric) const
{
    std::vector<std::vector<float>> out(static_cast<std::size_t>(rows()));
    for (int r = 0; r < rows(); ++r) {
        if (m_kept[std::size_t(r)] == 0)
            continue;
        for (const std::uint32_t bits : fabric.edgeSinkReceived(0, m_spec.frame.y(r)))
            out[std::size_t(r)].push_back(std::bit_cast<float>(bits));
    }
    return out;
}

void StreamGradientKernel::load(StaticColorFabric& fabric)
{
    const auto T = std::uint32_t(m_spec.tokensPerPe);
    const auto n = std::uint32_t(inputs());
    const auto m = std::uint32_t(outputs());
    m_buffers.clear();
    m_outputs.clear();
    for (int r = 0; r < rows(); ++r) {
        const std::vector<std::pair<std::int64_t, std::int64_t>> pairs = kept(r);
        for (int c = 0; c < columns(); ++c) {
            PeState& pe = fabric.pe(m_spec.frame.x(c), m_spec.frame.y(r));
            Buffers own;
            own.input = pe.allocF16(std::max<std::size_t>(1, std::size_t(n) * T));
            own.delta = pe.allocF16(std::max<std::size_t>(1, std::size_t(bandSize(r)) * T));
            for (std::uint32_t t = 0; t < T; ++t) {
                const std::size_t token = std::size_t(c) * T + t;
                for (std::uint32_t j = 0; j < n; ++j)
                    pe.f16[own.input + j * T + t] = detail::encode(m_spec.input[token * n + j], m_context);
                for (std::uint32_t o = 0; o < bandSize(r); ++o)
                    pe.f16[own.delta + o * T + t]
                        = detail::encode(m_spec.delta[token * m + bandBegin(r) + o], m_context);
            }
            const bool dense = pairs.size() == std::size_t(bandSize(r)) * n;
            if (!dense) {
                own.pairs = pe.allocF16(std::max<std::size_t>(1, 2 * pairs.size()));
                for (std::size_t p = 0; p < pairs.size(); ++p) {
                    pe.f16[own.pairs + 2 * p] = std::uint16_t(pairs[p].first - bandBegin(r));
                    pe.f16[own.pairs + 2 * p + 1] = std::uint16_t(pairs[p].second);
                }
            }
            const std::uint32_t chunks = chunkCount(r);
            own.chunks = pe.allocF32(std::max<std::size_t>(1, 5 * std::size_t(chunks)));
            for (std::uint32_t k = 0; k < chunks; ++k) {
                const float fields[5] = { float(k * chunkSize()), float(chunkPairs(r, k)), dense ? 1.0f : 0.0f,
                    float(n), float(own.pairs) };
                std::copy(std::begin(fields), std::end(fields), pe.f32.begin() + own.chunks + 5 * k);
            }
            own.share = pe.allocF32(std::max<std::size_t>(1, std::min<std::size_t>(pairs.size(), chunkSize())));
            m_buffers.push_back(own);
        }
        if (!pairs.empty()) {
            fabric::StaticColorFabric::EdgeRate pace = m_spec.exit;
            pace.start = 0;
            fabric.addEdgeSink(0, m_spec.frame.y(r), West, pace);
        }
    }
}

void StreamGradientKernel::program(ProgramWriter& writer, int) const
{
    const auto T = std::uint32_t(m_spec.tokensPerPe);
    const std::uint32_t perPair = steps::elementwiseCycles(T, 1, m_context.simdWidth);
    for (int r = 0; r < rows(); ++r) {
        if (m_kept[std::size_t(r)] == 0)
            continue;
        for (int c = 0; c < columns(); ++c)
            for (std::uint32_t k = 0; k < chunkCount(r); ++k) {
                const auto kept = chunkPairs(r, k);
                const Buffers& own = m_buffers[std::size_t(r) * std::size_t(columns()) + std::size_t(c)];
                const int x = m_spec.frame.x(c);
                const int y = m_spec.frame.y(r);
                writer.compute(x, y, gradientShares, kept * perPair, own.delta, own.input, own.chunks + 5 * k,
                    own.share, float(T), m_context.flags());
                if (c + 1 < columns()) { // adds what comes from the east
                    DataTask add;
                    add.kind = TaskKind::AddForward;
                    add.vector = own.share;
                    add.expected = kept;
                    add.outColor = c > 0 ? std::uint8_t(m_colors[c % 2]) : kNoColor;
                    writer.armAndAwait(x, y, m_colors[(c + 1) % 2], add);
                }
                if (c > 0 && c + 1 < columns())
                    continue;
                // The chain's head sends its shares west; the first PE, once it has the sums, sends
                // them off the wafer.
                writer.send(x, y, c > 0 ? m_colors[c % 2] : m_exit, own.share, kept);
                writer.awaitSend(x, y);
            }
    }
}

KernelCost StreamGradientKernel::closedForm() const
{
    StreamGradientShape shape;
    shape.columns = columns();
    shape.tokensPerPe = m_spec.tokensPerPe;
    shape.simdWidth = m_context.simdWidth;
    shape.kept = m_kept;
    shape.exitWavelets = m_spec.exit.wavelets;
    shape.exitCycles = m_spec.exit.cycles;
    shape.chunk = chunkSize();
    return costStreamGradient(shape);
}

} // namespace waferscope::core::cyclelevel
