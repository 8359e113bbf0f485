#include "core/cyclelevel/kernels/programwriter.h"

namespace waferscope::core::cyclelevel {

using namespace fabric;

void ProgramWriter::arm(int x, int y, int color, const DataTask& task)
{
    PeState& state = pe(x, y);
    Step step;
    step.kind = StepKind::Arm;
    step.color = std::uint8_t(color);
    step.a = std::uint32_t(state.armed.size());
    state.armed.push_back(task);
    state.program.push_back(step);
}

void ProgramWriter::await(int x, int y, int color)
{
    Step step;
    step.kind = StepKind::Await;
    step.color = std::uint8_t(color);
    pe(x, y).program.push_back(step);
}

void ProgramWriter::send(int x, int y, int color, std::uint32_t offset, std::uint32_t length)
{
    Step step;
    step.kind = StepKind::Send;
    step.color = std::uint8_t(color);
    step.a = offset;
    step.b = length;
    pe(x, y).program.push_back(step);
}

void ProgramWriter::awaitSend(int x, int y)
{
    Step step;
    step.kind = StepKind::AwaitSend;
    pe(x, y).program.push_back(step);
}

void ProgramWriter::compute(int x, int y, ComputeFn fn, std::uint32_t cycles, std::uint32_t a, std::uint32_t b,
    std::uint32_t c, std::uint32_t d, float scalar, std::uint8_t flags)
{
    Step step;
    step.kind = StepKind::Compute;
    step.fn = fn;
    step.cycles = cycles;
    step.a = a;
    step.b = b;
    step.c = c;
    step.d = d;
    step.scalar = scalar;
    step.color = flags;
    pe(x, y).program.push_back(step);
}

void ProgramWriter::computeIf(int x, int y, ComputeFn fn, std::uint32_t cycles, std::uint32_t a, std::uint32_t b,
    std::uint32_t c, std::uint32_t d, float scalar, std::uint8_t flags)
{
    compute(x, y, fn, cycles, a, b, c, d, scalar, flags);
    pe(x, y).program.back().kind = StepKind::ComputeIf;
}

void ProgramWriter::mark(int x, int y, std::uint32_t slot)
{
    Step step;
    step.kind = StepKind::Mark;
    step.a = slot;
    pe(x, y).program.push_back(step);
}

void ProgramWriter::clearPrograms()
{
    for (int y = 0; y < m_fabric.height(); ++y) {
        for (int x = 0; x < m_fabric.width(); ++x) {
            PeState& state = m_fabric.pe(x, y);
            state.program.clear();
            state.armed.clear();
            state.pc = 0;
        }
    }
}

namespace {

DataTask task(TaskKind kind, std::uint32_t offset, std::uint32_t count, int outColor)
{
    DataTask made;
    made.kind = kind;
    made.vector = offset;
    made.expected = count;
    made.outColor = std::uint8_t(outColor);
    return made;
}

} // namespace

DataTask storeTask(std::uint32_t offset, std::uint32_t count, int forwardColor)
{
    return task(TaskKind::Store, offset, count, forwardColor);
}

DataTask relayTask(std::uint32_t count, int outColor)
{
    return task(TaskKind::Relay, 0, count, outColor);
}

DataTask addTask(std::uint32_t offset, std::uint32_t count, int outColor)
{
    return task(TaskKind::AddForward, offset, count, outColor);
}

DataTask maxTask(std::uint32_t offset, std::uint32_t count, int outColor)
{
    return task(TaskKind::MaxForward, offset, count, outColor);
}

} // namespace waferscope::core::cyclelevel
