#pragma once

#include "core/cyclelevel/kernels/prefillkernel.h"
#include "core/cyclelevel/kernels/routebook.h"

#include <cstdint>
#include <string>
#include <vector>

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

// The rows' partial sums of a streamed GEMM split by its inner dimension (StreamGemmSpec::
// splitInner) added down each column, rounded to storage at the last row and sent back up, so
// that every PE holds the op's outputs for its tokens: y = S(((p_0 + p_1) + p_2) ...).
struct ColumnReduceSpec {
    std::string name;
    Frame frame; // R rows x C columns
    Pass pass = Pass::BackwardDelta;
    int tokensPerPe = 1; // T
    std::int64_t dims = 1; // M
    std::vector<std::vector<float>> partials; // per PE row: (C T) tokens x M, row-major
};

class ColumnReduceKernel final : public PrefillKernel {
public:
    // Refuses (std::logic_error, naming the kernel) an empty or westward frame and partials of
    // other sizes.
    ColumnReduceKernel(ColumnReduceSpec spec, const KernelContext& context);
    const std::string& name() const override { return m_spec.name; }
    Pass pass() const override { return m_spec.pass; }
    void needRings(PrefillRings&) const override { }
    void useRings(const PrefillRings&) override { }
    void route(RouteBook& book) { m_reduce.route(book); }
    void load(fabric::StaticColorFabric& fabric) override;
    void program(ProgramWriter& writer, int inputColor) const override;
    // After a run: every PE's outputs for its tokens, all M, dims x tokens.
    const std::vector<PrefillOutputTile>& outputTiles() const override { return m_outputs; }
    KernelCost closedForm() const override;

private:
    ColumnReduceSpec m_spec;
    KernelContext m_context;
    ColumnAllReduce m_reduce;
    struct Buffers {
        std::uint32_t own = 0;
        std::uint32_t result = 0;
    };
    std::vector<Buffers> m_buffers; // per (r, c)
    std::vector<PrefillOutputTile> m_outputs;
};

} // namespace waferscope::core::cyclelevel
