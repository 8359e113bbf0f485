#pragma once

#include "core/cyclelevel/kernels/prefillkernel.h"
#include "core/cyclelevel/kernels/routebook.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// The all-gather that turns a weight-streaming op's output bands into the next op's resident
// operand, on the streamed GEMM's layout (streamgemmkernel.h): R x C PEs, PE column c holding
// tokens [c T, (c + 1) T); before, PE row r holds band r of the M values of its tokens (the bands
// split M over the rows as evenly as they go, as the GEMM splits its outputs); after, every PE of
// the column holds all M of them. Each column's bands sweep down it and up it at once, every PE
// storing and passing on what comes and then appending its own band. Its scheme is described
// at the top of columngatherkernel.cpp.
struct ColumnGatherSpec {
    std::string name;
    Frame frame; // R rows x C columns
    Pass pass = Pass::Forward; // the pass of the op whose output it gathers
    int tokensPerPe = 1; // T
    std::int64_t dims = 1; // M
    // (C T) tokens x M, row-major: PE (c, r) starts with its tokens' values of band r.
    std::vector<float> values;
    // R + 1 ascending bounds from 0 to M when the bands are not the even split (the attention's:
    // a head's values a row, none on the rows below the last head).
    std::vector<std::uint32_t> bands;
};

class ColumnGatherKernel final : public PrefillKernel {
public:
    // Refuses (std::logic_error, naming the kernel) an empty or westward frame, no tokens or no
    // values a token, and values of another size.
    ColumnGatherKernel(ColumnGatherSpec spec, const KernelContext& context);
    const std::string& name() const override { return m_spec.name; }
    Pass pass() const override { return m_spec.pass; }
    // The sweeps move along the columns on four colors of their own, not on a block's rings.
    void needRings(PrefillRings&) const override { }
    void useRings(const PrefillRings&) override { }
    void route(RouteBook& book);
    void load(fabric::StaticColorFabric& fabric) override;
    void program(ProgramWriter& writer, int inputColor) const override;
    // After a run: every PE's values of every band for its tokens, dims x tokens (dimsMajor), a
    // tile per band.
    const std::vector<PrefillOutputTile>& outputTiles() const override { return m_outputs; }
    KernelCost closedForm() const override;

private:
    int rows() const { return m_spec.frame.h; }
    int columns() const { return m_spec.frame.w; }
    std::uint32_t bandBegin(int r) const
    {
        return m_spec.bands.empty() ? blockBegin(m_spec.dims, rows(), r) : m_spec.bands[std::size_t(r)];
    }
    std::uint32_t bandSize(int r) const { return bandBegin(r + 1) - bandBegin(r); }

    struct Buffers {
        std::uint32_t down = 0; // f32: bands 0..r, dims x tokens (its own last)
        std::uint32_t up = 0; // f32: bands R - 1 down to r + 1, in the order they come
    };
    ColumnGatherSpec m_spec;
    KernelContext m_context;
    std::vector<Buffers> m_buffers; // per (r, c)
    int m_down[2] = { -1, -1 }; // PE row r sends south on m_down[r % 2]
    int m_up[2] = { -1, -1 }; // ... and north on m_up[r % 2]
    std::vector<PrefillOutputTile> m_outputs;
};

} // namespace waferscope::core::cyclelevel
