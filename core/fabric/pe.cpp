#include "core/fabric/pe.h"

#include "core/fabric/half.h"

#include <algorithm>
#include <bit>

namespace waferscope::core::fabric {

std::uint32_t PeState::allocF32(std::size_t count, float value)
{
    const auto offset = std::uint32_t(f32.size());
    f32.resize(f32.size() + count, value);
    return offset;
}

std::uint32_t PeState::allocF16(std::size_t count)
{
    const auto offset = std::uint32_t(f16.size());
    f16.resize(f16.size() + count, 0);
    return offset;
}

namespace {

std::uint64_t simdCycles(std::uint32_t elements, int simdWidth)
{
    return std::max<std::uint64_t>(
        1, (std::uint64_t(elements) + std::uint64_t(simdWidth) - 1) / std::uint64_t(simdWidth));
}

float decode16(std::uint16_t bits, Format16 format)
{
    return format == Format16::Bf16 ? std::bit_cast<float>(std::uint32_t(bits) << 16) : halfToFloat(bits);
}

void complete(PeState& pe, DataTask& task, std::uint64_t finishCycle)
{
    task.done = true;
    if (task.result) {
        --pe.pendingResults;
        pe.doneAt = std::int64_t(finishCycle);
    }
    if (task.then == ActionKind::StartSend) {
        pe.send = pe.deferredSend;
        pe.send.color = task.thenColor;
        pe.send.next = 0;
    } else if (task.then == ActionKind::Unblock) {
        pe.tasks[task.thenColor].blocked = false;
    }
}

} // namespace

std::uint64_t taskCost(const DataTask& task, std::uint32_t payload, int simdWidth)
{
    switch (task.kind) {
    case TaskKind::FmacColumn: {
        const std::uint32_t k = task.received;
        return k >= task.skip && k - task.skip < task.use ? simdCycles(task.length, simdWidth) : 1;
    }
    case TaskKind::FmacStream:
        return (payload & 0xffffu) == kRowMarker ? 1 : simdCycles(task.length, simdWidth);
    default:
        return 1;
    }
}

Wavelet executeTask(PeState& pe, int color, std::uint32_t payload, std::uint64_t cycle, int simdWidth)
{
    DataTask& task = pe.tasks[std::size_t(color)];
    const std::uint64_t cost = taskCost(task, payload, simdWidth);
    pe.busyUntil = cycle + cost;
    pe.busyCycles += cost;
    Wavelet emitted;
    bool done = false;
    switch (task.kind) {
    case TaskKind::Store: {
        const std::uint32_t k = task.received - task.skip; // wraps for the wavelets before the range
        if (task.received >= task.skip && k < task.use)
            pe.f32[task.vector + k] = std::bit_cast<float>(payload);
        if (task.outColor != kNoColor)
            emitted = Wavelet::colored(task.outColor, payload);
        done = ++task.received == task.expected;
        break;
    }
    case TaskKind::Relay:
        emitted = Wavelet::colored(task.outColor, payload);
        done = ++task.received == task.expected;
        break;
    case TaskKind::MaxForward: {
        float& local = pe.f32[task.vector + task.received];
        const float value = std::max(local, std::bit_cast<float>(payload));
        if (task.outColor == kNoColor)
            local = value;
        else
            emitted = Wavelet::colored(task.outColor, std::bit_cast<std::uint32_t>(value));
        done = ++task.received == task.expected;
        break;
    }
    case TaskKind::AddForward: {
        float& local = pe.f32[task.vector + task.received];
        const float sum = local + std::bit_cast<float>(payload);
        if (task.outColor == kNoColor)
            local = sum;
        else
            emitted = Wavelet::colored(task.outColor, std::bit_cast<std::uint32_t>(sum));
        done = ++task.received == task.expected;
        break;
    }
    case TaskKind::FmacColumn: {
        const std::uint32_t k = task.received - task.skip; // wraps for the wavelets before the range
        if (task.received >= task.skip && k < task.use) {
            const float x = std::bit_cast<float>(payload);
            float* y = pe.f32.data() + task.vector;
            const std::uint16_t* column = pe.f16.data() + task.matrix + std::size_t(k) * task.length;
            if (task.format == Format16::Fp16) {
                for (std::uint32_t i = 0; i < task.length; ++i)
                    y[i] += halfToFloat(column[i]) * x;
            } else {
                for (std::uint32_t i = 0; i < task.length; ++i)
                    y[i] += decode16(column[i], Format16::Bf16) * x;
            }
            pe.fmacs += task.length;
        }
        if (task.outColor != kNoColor)
            emitted = Wavelet::colored(task.outColor, payload);
        done = ++task.received == task.expected;
        break;
    }
    case TaskKind::FmacStream: {
        const std::uint32_t column = payload & 0xffffu;
        ++task.received;
        if (column == kRowMarker) {
            done = ++task.row == task.expected;
            break;
        }
        const float weight = decode16(std::uint16_t(payload >> 16), task.format);
        float* out = pe.f32.data() + task.vector + std::size_t(task.row) * task.length;
        const std::uint16_t* activations = pe.f16.data() + task.matrix + std::size_t(column) * task.length;
        for (std::uint32_t k = 0; k < task.length; ++k)
            out[k] += weight * decode16(activations[k], task.format);
        pe.fmacs += task.length;
        break;
    }
    case TaskKind::None:
        break;
    }
    if (done)
        complete(pe, task, cycle + cost);
    return emitted;
}

bool taskReady(const DataTask& task)
{
    if (task.kind == TaskKind::None || task.blocked)
        return false;
    return task.kind == TaskKind::FmacStream ? task.row < task.expected : task.received < task.expected;
}

bool advanceProgram(PeState& pe, std::uint64_t cycle)
{
    for (int control = 0; control < kControlStepsPerCycle && pe.pc < pe.program.size(); ++control) {
        // The program runs on the PE's one engine: no step starts while a compute step or a data
        // task still holds it.
        if (pe.busyUntil > cycle)
            return true;
        const Step& step = pe.program[pe.pc];
        switch (step.kind) {
        case StepKind::Arm: {
            DataTask& task = pe.tasks[step.color];
            task = pe.armed[step.a];
            task.received = 0;
            task.row = 0;
            task.done = task.expected == 0;
            break;
        }
        case StepKind::Await:
            if (!pe.tasks[step.color].done)
                return false; // the engine is free (above): the PE waits for wavelets
            break;
        case StepKind::Send:
            if (pe.send.active())
                return true; // the send injects a wavelet every cycle it can, so the row is active
            pe.send = SendStream { step.color, step.a, step.b, 0 };
            break;
        case StepKind::AwaitSend:
            if (pe.send.active())
                return true;
            break;
        case StepKind::ComputeIf:
            if (!pe.select)
                break;
            [[fallthrough]];
        case StepKind::Compute:
            step.fn(pe, step);
            pe.busyUntil = cycle + step.cycles;
            pe.busyCycles += step.cycles;
            ++pe.pc;
            return true; // the next step waits for the engine (or runs next cycle)
        case StepKind::Mark:
            if (pe.marks.size() <= step.a)
                pe.marks.resize(step.a + 1, 0);
            pe.marks[step.a] = cycle;
            break;
        }
        ++pe.pc;
    }
    return pe.pc < pe.program.size();
}

} // namespace waferscope::core::fabric
