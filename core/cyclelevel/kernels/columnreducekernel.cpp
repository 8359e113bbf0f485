// The column all-reduce (columnreducekernel.h): two chains along each column, down and up, on two
// alternating colors each, as the column gather's sweeps (columngatherkernel.cpp).
#include "core/cyclelevel/kernels/columnreducekernel.h"

#include "core/cyclelevel/kernels/computesteps.h"
#include "core/kernels/closedform.h"
#include "core/kernels/streamgemm.h"

#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;

namespace {

// f32[a, a + b) = S(f32[a, a + b)).
void roundInPlace(PeState& pe, const Step& step)
{
    const Storage storage = step.color & steps::kBf16 ? Storage::Bf16 : Storage::Fp16;
    for (std::uint32_t i = 0; i < step.b; ++i)
        pe.f32[step.a + i] = roundToStorage(pe.f32[step.a + i], storage);
}

} // namespace

ColumnAllReduce::ColumnAllReduce(std::string name, Frame frame)
    : m_name(std::move(name))
    , m_frame(frame)
{
}

void ColumnAllReduce::route(RouteBook& book)
{
    if (m_frame.h < 2)
        return;
    StreamTree down[2] { StreamTree(m_name + " down"), StreamTree(m_name + " down") };
    StreamTree up[2] { StreamTree(m_name + " up"), StreamTree(m_name + " up") };
    for (int c = 0; c < m_frame.w; ++c) {
        const int x = m_frame.x(c);
        for (int r = 0; r + 1 < m_frame.h; ++r) {
            down[r % 2].hop(x, m_frame.y(r), Fabric::kRampPort, directionBit(South));
            down[r % 2].hop(x, m_frame.y(r + 1), North, kRampBit);
            up[(r + 1) % 2].hop(x, m_frame.y(r + 1), Fabric::kRampPort, directionBit(North));
            up[(r + 1) % 2].hop(x, m_frame.y(r), South, kRampBit);
        }
    }
    for (int parity = 0; parity < 2; ++parity) {
        if (!down[parity].empty())
            m_down[parity] = book.place(down[parity]);
        if (!up[parity].empty())
            m_up[parity] = book.place(up[parity]);
    }
}

void ColumnAllReduce::program(ProgramWriter& writer, int c, int r, std::uint32_t own, std::uint32_t result,
    std::uint32_t length, bool max, ComputeFn finish, std::uint32_t finishCycles, std::uint8_t flags) const
{
    const int x = m_frame.x(c);
    const int y = m_frame.y(r);
    const int rows = m_frame.h;
    const bool last = r + 1 == rows;
    if (rows > 1) {
        if (r == 0) {
            writer.send(x, y, m_down[0], own, length);
            writer.awaitSend(x, y);
        } else {
            const int out = last ? kNoColor : m_down[r % 2];
            writer.armAndAwait(x, y, m_down[(r + 1) % 2], max ? maxTask(own, length, out) : addTask(own, length, out));
        }
    }
    if (last && finish)
        writer.compute(x, y, finish, finishCycles, own, length, 0, 0, 0.0f, flags);
    if (rows < 2)
        return;
    if (last) {
        writer.send(x, y, m_up[r % 2], own, length);
        writer.awaitSend(x, y);
    } else {
        writer.armAndAwait(x, y, m_up[(r + 1) % 2], storeTask(result, length, r == 0 ? kNoColor : m_up[r % 2]));
    }
}

ColumnAllReduceCost costColumnAllReduce(int rows, double length, double finishCycles)
{
    ColumnAllReduceCost cost;
    cost.engineLast = finishCycles;
    if (rows < 2) {
        cost.cycles = finishCycles;
        return cost;
    }
    // Each chain: the head's send reaches the next row's task kSendToNeighbour later, and every hop
    // after it a cycle and a half (the alternating colors' order, as the gather's sweeps); the
    // last wavelet follows the first `length - 1` cycles later.
    const double chain = closedform::kSendToNeighbour + 1.5 * double(rows - 2) + length;
    cost.cycles = 2.0 * chain + finishCycles;
    cost.engineFirst = length;
    cost.engineMiddle = 2.0 * length;
    cost.engineLast = length + finishCycles;
    cost.linkWavelets = 2.0 * double(rows - 1) * length;
    return cost;
}

ColumnReduceKernel::ColumnReduceKernel(ColumnReduceSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
    , m_reduce(m_spec.name, m_spec.frame)
{
    const auto refuse = [&](const std::string& why) { throw std::logic_error(m_spec.name + ": " + why); };
    if (m_spec.frame.w < 1 || m_spec.frame.h < 1 || m_spec.frame.westward)
        refuse("needs an eastward region of at least one PE");
    if (m_spec.tokensPerPe < 1 || m_spec.dims < 1)
        refuse("needs tokens and values");
    const std::size_t expected
        = std::size_t(m_spec.frame.w) * std::size_t(m_spec.tokensPerPe) * std::size_t(m_spec.dims);
    if (m_spec.partials.size() != std::size_t(m_spec.frame.h))
        refuse(
            std::to_string(m_spec.partials.size()) + " rows' partials for " + std::to_string(m_spec.frame.h) + " rows");
    for (const std::vector<float>& partial : m_spec.partials)
        if (partial.size() != expected)
            refuse("a row's partials of " + std::to_string(partial.size()) + " values; " + std::to_string(expected)
                + " expected");
}

void ColumnReduceKernel::load(StaticColorFabric& fabric)
{
    const auto T = std::uint32_t(m_spec.tokensPerPe);
    const auto m = std::uint32_t(m_spec.dims);
    m_buffers.clear();
    m_outputs.clear();
    for (int r = 0; r < m_spec.frame.h; ++r)
        for (int c = 0; c < m_spec.frame.w; ++c) {
            const Pe at { m_spec.frame.x(c), m_spec.frame.y(r) };
            PeState& pe = fabric.pe(at.x, at.y);
            Buffers own;
            own.own = pe.allocF32(std::size_t(m) * T);
            for (std::uint32_t d = 0; d < m; ++d)
                for (std::uint32_t t = 0; t < T; ++t)
                    pe.f32[own.own + d * T + t] = m_spec.partials[std::size_t(r)][(std::size_t(c) * T + t) * m + d];
            if (r + 1 < m_spec.frame.h)
                own.result = pe.allocF32(std::size_t(m) * T);
            m_buffers.push_back(own);
            m_outputs.push_back({ at, m_reduce.resultAt(r, own.own, own.result), std::uint32_t(c) * T, T, 0, m, true });
        }
}

void ColumnReduceKernel::program(ProgramWriter& writer, int) const
{
    const auto length = std::uint32_t(m_spec.dims * m_spec.tokensPerPe);
    const std::uint32_t finish = steps::elementwiseCycles(length, 1, m_context.simdWidth);
    for (int r = 0; r < m_spec.frame.h; ++r)
        for (int c = 0; c < m_spec.frame.w; ++c) {
            const Buffers& own = m_buffers[std::size_t(r) * std::size_t(m_spec.frame.w) + std::size_t(c)];
            m_reduce.program(writer, c, r, own.own, own.result, length, false, roundInPlace, finish, m_context.flags());
        }
}

KernelCost ColumnReduceKernel::closedForm() const
{
    const double length = double(m_spec.dims * m_spec.tokensPerPe);
    const int rows = m_spec.frame.h;
    const double columns = m_spec.frame.w;
    const ColumnAllReduceCost one
        = costColumnAllReduce(rows, length, steps::elementwiseCycles(std::uint64_t(length), 1, m_context.simdWidth));
    const double busy = columns
        * (rows > 1 ? one.engineFirst + double(rows - 2) * one.engineMiddle + one.engineLast : one.engineLast);
    const double busiest = std::max({ one.engineFirst, rows > 2 ? one.engineMiddle : 0.0, one.engineLast });
    return closedform::decodeCost(
        one.cycles, busy, double(rows) * columns, busiest, length, columns * one.linkWavelets);
}

} // namespace waferscope::core::cyclelevel
