#pragma once

#include "core/cyclelevel/decoder.h"
#include "core/cyclelevel/kernels/regionkernel.h"
#include "core/kernels/gemv.h"

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace waferscope::core::cyclelevel {

class GemvKernel final : public RegionKernel {
public:
    GemvKernel(GemvSpec spec, const KernelContext& context);
    const GemvSpec& spec() const { return m_spec; }
    const std::string& name() const override { return m_spec.name; }
    // The PEs that take input lane `lane` from its stream (its turn PEs), in flow order.
    std::vector<Pe> taps(std::size_t lane) const override;
    Pe exit(std::size_t lane) const override { return { m_spec.frame.x(m_spec.frame.w - 1), m_spec.output[lane].y }; }
    bool hasSideInput() const
    {
        return m_spec.epilogue == Epilogue::Residual || m_spec.epilogue == Epilogue::Gated
            || (m_spec.epilogue == Epilogue::Combine && m_spec.lastExpert);
    }
    void route(RouteBook& book) override;
    void load(fabric::StaticColorFabric& fabric) override;
    // One token at `position`. colors.out < 0: the outputs stay in place (Logits: the token id
    // ends at the last output lane's exit, see argmaxPe()).
    void program(ProgramWriter& writer, const KernelColors& colors, std::int64_t position) const override;
    // The PEs with work (the turns and the output rows of every column): the routing weights go to them.
    std::vector<Pe> workers() const;
    // Where the results are after a run: f32 offset of output lane `lane` at exit(lane).
    std::uint32_t resultOffset(std::size_t lane) const override { return m_result[lane]; }
    // Logits: the PE and f32 offset holding (best logit, token id bits) after the reduction.
    Pe argmaxPe() const { return exit(m_spec.output.size() - 1); }
    std::uint32_t argmaxOffset() const { return m_pair[m_spec.output.size() - 1]; }
    // Route: the f32 offset at exit(0) of the token's routing weights (zero for experts not chosen).
    std::uint32_t routingOffset() const { return m_weightsAt.front(); }

private:
    int gemvColumns() const { return m_spec.frame.w - m_spec.firstColumn; }
    // What column t multiplies: lanes, each with its elements [skip, skip + use) and the index
    // of its turn color.
    struct Share {
        std::size_t lane = 0;
        std::uint32_t skip = 0;
        std::uint32_t use = 0;
        std::size_t turn = 0;
    };
    std::vector<Share> sharesOf(int t) const;
    // The output block on row `row` of the frame, or -1.
    int outputAt(int row) const;
    // One PE's part of a token: GEMV column t at (x, y), its output block k (-1: a turn only), and
    // the block's accumulator.
    struct Cell {
        int t = 0;
        int x = 0;
        int y = 0;
        int k = -1;
        std::uint32_t size = 0; // the block's outputs
        std::uint32_t acc = 0;
    };
    using RoutingAt = std::map<std::pair<int, int>, std::uint32_t>; // per worker (x, y)
    RoutingAt armRoutingWeights(ProgramWriter& writer, int weightsColor) const;
    void programInputs(ProgramWriter& writer, const KernelColors& colors, const Cell& cell,
        const std::vector<Share>& shares, const RoutingAt& weightsOf) const;
    void programReduction(ProgramWriter& writer, const Cell& cell) const;
    void programExit(ProgramWriter& writer, const KernelColors& colors, const Cell& cell, std::int64_t position,
        const RoutingAt& weightsOf) const;
    void programArgmax(ProgramWriter& writer, const Cell& cell) const;
    void programCombine(ProgramWriter& writer, const KernelColors& colors, const Cell& cell,
        std::uint32_t routingWeight, std::uint8_t flags) const;

    GemvSpec m_spec;
    KernelContext m_context;
    std::vector<int> m_column; // per turn index: the turned multicast down the columns
    int m_firstRow = 0; // the output rows' span in the frame
    int m_lastRow = 0;
    int m_chain[2] = { -1, -1 };
    std::vector<int> m_tree; // treeReduced: the color of each level
    int m_argmax = -1; // Logits: down the last column
    std::vector<int> m_rowOutput; // per frame row: output block index or -1
    std::vector<std::int32_t> m_acc; // per (t, output block): f32 accumulator offset
    std::vector<std::int32_t> m_block; // per (t, output block): f16 weight blocks, one per share
    std::vector<std::uint32_t> m_result; // per output block: f32 result at the exit
    std::vector<std::uint32_t> m_side; // per output block: f32 side input at the exit
    std::vector<std::uint32_t> m_biasAt; // per output block: f16 bias at the exit
    std::vector<std::uint32_t> m_pair; // Logits: per output block, (value, id) and the incoming pair after it
    std::vector<std::uint32_t> m_weightsAt; // dispatch: per worker (workers() order), the routing weights
    std::vector<std::uint32_t> m_combine; // Combine: per output block, the weighted output at the exit
    // A column keeps its share's lane in SRAM and multiplies its part once the lane has passed
    // when the lane is split over several columns (so the parts multiply side by side rather
    // than one after the other at the lane's pace), and for dispatch.
    bool buffered(const Share& share) const
    {
        return m_spec.expert >= 0 || share.use < m_spec.input[share.lane].size();
    }
    std::map<std::tuple<int, int, int>, std::uint32_t> m_buffer; // per (x, y, turn) the lane kept
};

} // namespace waferscope::core::cyclelevel
