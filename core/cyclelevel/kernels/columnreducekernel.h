#pragma once

#include "core/cyclelevel/kernels/columnallreduce.h"
#include "core/cyclelevel/kernels/prefillkernel.h"
#include "core/cyclelevel/kernels/routebook.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

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
