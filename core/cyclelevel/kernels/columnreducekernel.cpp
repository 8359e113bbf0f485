// The rows' partial sums added down each column and sent back up (columnreducekernel.h), on a
// column all-reduce (columnallreduce.h) that rounds them at the last row.
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
