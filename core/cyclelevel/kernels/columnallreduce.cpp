// The column all-reduce (columnallreduce.h): two chains along each column, down and up, on two
// alternating colors each, as the column gather's sweeps (columngatherkernel.cpp).
#include "core/cyclelevel/kernels/columnallreduce.h"

#include "core/kernels/closedform.h"

namespace waferscope::core::cyclelevel {

using namespace fabric;

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

} // namespace waferscope::core::cyclelevel
