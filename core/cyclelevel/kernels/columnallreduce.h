#pragma once

#include "core/cyclelevel/kernels/prefillkernel.h"
#include "core/cyclelevel/kernels/routebook.h"

#include <cstdint>
#include <string>

namespace waferscope::core::cyclelevel {

// An all-reduce down and up each column of R x C PEs, the building block of the reductions over
// a column's bands (the LM head's partial deltas, the loss's max and sum): the rows' vectors are
// added (or maxed) down the column, row 0's first, each row adding its own to what comes and
// sending the sum on (an AddForward or MaxForward task, a cycle a wavelet), so that the last row
// holds ((v_0 + v_1) + v_2) ...; it finishes them (a compute step, or nothing) and sends them up
// the column, each row storing them and passing them on.
class ColumnAllReduce {
public:
    ColumnAllReduce(std::string name, Frame frame);
    void route(RouteBook& book);
    // PE (c, r)'s steps: the reduce of `length` values at f32 `own`, `finish` at the last row on
    // them in place (nullptr: none), and the result up into f32 `result` (the last row's stays
    // at `own`).
    void program(ProgramWriter& writer, int c, int r, std::uint32_t own, std::uint32_t result, std::uint32_t length,
        bool max, fabric::ComputeFn finish, std::uint32_t finishCycles, std::uint8_t flags) const;
    // Where row r holds the result.
    std::uint32_t resultAt(int r, std::uint32_t own, std::uint32_t result) const
    {
        return r + 1 == m_frame.h ? own : result;
    }

private:
    std::string m_name;
    Frame m_frame;
    int m_down[2] = { -1, -1 };
    int m_up[2] = { -1, -1 };
};

// The closed form of one all-reduce of `length` values a PE over `rows` rows: the chain down, the
// finish, the chain up.
struct ColumnAllReduceCost {
    double cycles = 0.0; // from the first send to the last store
    double engineFirst = 0.0; // row 0's engine cycles (its store of the result)
    double engineMiddle = 0.0; // a middle row's (its add and its store)
    double engineLast = 0.0; // the last row's (its add and the finish)
    double linkWavelets = 0.0; // a column's
};
ColumnAllReduceCost costColumnAllReduce(int rows, double length, double finishCycles);

} // namespace waferscope::core::cyclelevel
