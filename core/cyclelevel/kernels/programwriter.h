#pragma once

#include "core/fabric/staticcolorfabric.h"
#include "core/kernels/geometry.h"

#include <cstdint>
#include <vector>

namespace waferscope::core::cyclelevel {

// Appends steps to PE programs (PeState::program) and keeps the tasks Arm steps bind.
class ProgramWriter {
public:
    explicit ProgramWriter(fabric::StaticColorFabric& fabric)
        : m_fabric(fabric)
    {
    }
    fabric::StaticColorFabric& fabric() { return m_fabric; }
    fabric::PeState& pe(int x, int y) { return m_fabric.pe(x, y); }

    void arm(int x, int y, int color, const fabric::DataTask& task);
    void await(int x, int y, int color);
    void armAndAwait(int x, int y, int color, const fabric::DataTask& task)
    {
        arm(x, y, color, task);
        await(x, y, color);
    }
    void send(int x, int y, int color, std::uint32_t offset, std::uint32_t length);
    void awaitSend(int x, int y);
    void compute(int x, int y, fabric::ComputeFn fn, std::uint32_t cycles, std::uint32_t a = 0, std::uint32_t b = 0,
        std::uint32_t c = 0, std::uint32_t d = 0, float scalar = 0.0f, std::uint8_t flags = 0);
    void mark(int x, int y, std::uint32_t slot);
    // As compute(), run (and charged) only if the PE's select flag is set when the step comes.
    void computeIf(int x, int y, fabric::ComputeFn fn, std::uint32_t cycles, std::uint32_t a, std::uint32_t b,
        std::uint32_t c, std::uint32_t d, float scalar, std::uint8_t flags);

    // Forgets every PE's program and armed tasks (SRAM stays): the next token's programs follow.
    void clearPrograms();

private:
    fabric::StaticColorFabric& m_fabric;
};

// Task templates.
fabric::DataTask storeTask(std::uint32_t offset, std::uint32_t count, int forwardColor = fabric::kNoColor);
fabric::DataTask relayTask(std::uint32_t count, int outColor);
// A chain step: vector[k] (op) incoming, sent on outColor, or kept when outColor is kNoColor.
fabric::DataTask addTask(std::uint32_t offset, std::uint32_t count, int outColor);
fabric::DataTask maxTask(std::uint32_t offset, std::uint32_t count, int outColor);

} // namespace waferscope::core::cyclelevel
