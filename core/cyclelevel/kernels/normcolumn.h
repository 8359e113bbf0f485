#pragma once

#include "core/cyclelevel/decoder.h"
#include "core/cyclelevel/kernels/regionkernel.h"

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace waferscope::core::cyclelevel {

// A pre-norm fused into the region it feeds: the region's first column (u = 0), one PE per input
// lane. Each PE stores its lane, the column reduces the statistics down to its last PE, which
// broadcasts them back up; each PE then normalises its lane and sends it on.
class NormColumn final : public RegionKernel {
public:
    NormColumn(std::string name, const Frame& frame, Lanes lanes, DecoderShape::Norm norm, float epsilon,
        WeightTensor weight, WeightTensor bias, const KernelContext& context);
    const std::string& name() const override { return m_name; }
    std::vector<Pe> taps(std::size_t lane) const override { return { exit(lane) }; }
    Pe exit(std::size_t lane) const override { return { m_frame.x(0), m_lanes[lane].y }; }
    const Lanes& lanes() const { return m_lanes; }
    void route(RouteBook& book) override;
    void load(fabric::StaticColorFabric& fabric) override;
    // Takes the lanes on colors.in and sends the normalised ones on colors.out.
    void program(ProgramWriter& writer, const KernelColors& colors, std::int64_t position) const override;
    // Where the normalised lane is after a run: f32 offset at exit(lane).
    std::uint32_t resultOffset(std::size_t lane) const override { return m_x[lane]; }
    KernelCost closedForm(std::int64_t position) const override;

private:
    std::string m_name;
    Frame m_frame;
    Lanes m_lanes;
    DecoderShape::Norm m_norm;
    float m_epsilon;
    WeightTensor m_weight;
    WeightTensor m_bias;
    KernelContext m_context;
    int m_chain[2] = { -1, -1 };
    int m_broadcast = -1;
    std::vector<std::uint32_t> m_x; // per lane: f32 offset of the lane's values
    std::vector<std::uint32_t> m_stats; // per lane: partial, mean, inverse deviation
    std::vector<std::uint32_t> m_weights; // per lane: f16 offset of its weights (then biases)
};

} // namespace waferscope::core::cyclelevel
