#include "core/fabric/pe.h"

#include "core/fabric/half.h"

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

void complete(PeState& pe, DataTask& task, std::uint64_t finishCycle)
{
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
    case TaskKind::FmacColumn:
        return simdCycles(task.length, simdWidth);
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
    case TaskKind::Store:
        pe.f32[task.vector + task.received] = std::bit_cast<float>(payload);
        done = ++task.received == task.expected;
        break;
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
        const float x = std::bit_cast<float>(payload);
        float* y = pe.f32.data() + task.vector;
        const std::uint16_t* column = pe.f16.data() + task.matrix + std::size_t(task.received) * task.length;
        for (std::uint32_t i = 0; i < task.length; ++i)
            y[i] += halfToFloat(column[i]) * x;
        pe.fmacs += task.length;
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
        const float weight = halfToFloat(std::uint16_t(payload >> 16));
        float* out = pe.f32.data() + task.vector + std::size_t(task.row) * task.length;
        const std::uint16_t* activations = pe.f16.data() + task.matrix + std::size_t(column) * task.length;
        for (std::uint32_t k = 0; k < task.length; ++k)
            out[k] += weight * halfToFloat(activations[k]);
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

} // namespace waferscope::core::fabric
