#pragma once

#include "core/cyclelevel/decoder.h"
#include "core/cyclelevel/kernels/regionkernel.h"

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace waferscope::core::cyclelevel {

// The token embedding (and a learned position embedding) over the region's PEs. Output lane i
// (a block of the hidden vector) is served by the columns [blockBegin(w, L, i), ..(i + 1)) of
// every row: each of those PEs holds the lane's block of an equal share of the vocabulary rows
// (and of the position rows). The token id enters at the root (frame PE (0, 0)) and is multicast
// to every PE; each PE contributes its row of the token (and of the position) if it holds it,
// else zeros, and the group's chain (a serpentine over its rows) sums the contributions: exactly
// the one or two non-zero rows. The chain's last PE rounds the sum and sends the lane on.
struct EmbeddingSpec {
    std::string name;
    Frame frame;
    Lanes lanes; // the element ranges of the output lanes (their rows are the consumer's)
    WeightTensor token = WeightTensor::absent(Storage::Fp16); // vocab x hidden
    WeightTensor position = WeightTensor::absent(Storage::Fp16); // positions x hidden, or absent
};

class EmbeddingKernel final : public RegionKernel {
public:
    EmbeddingKernel(EmbeddingSpec spec, const KernelContext& context);
    const std::string& name() const override { return m_spec.name; }
    Pe root() const { return { m_spec.frame.x(0), m_spec.frame.y(0) }; }
    // The token id is its one input lane, taken at the root.
    std::vector<Pe> taps(std::size_t) const override { return { root() }; }
    Pe exit(std::size_t lane) const override { return m_chains[lane].back(); }
    void route(RouteBook& book) override;
    void load(fabric::StaticColorFabric& fabric) override;
    // colors.in: the stream that brings the token id to the root. position: of the token.
    void program(ProgramWriter& writer, const KernelColors& colors, std::int64_t position) const override;
    std::uint32_t resultOffset(std::size_t lane) const override;
    KernelCost closedForm(std::int64_t position) const override;

private:
    EmbeddingSpec m_spec;
    KernelContext m_context;
    std::vector<std::vector<Pe>> m_chains; // per lane, in chain order
    int m_broadcast = -1;
    int m_chain[2] = { -1, -1 };
    std::vector<std::vector<std::uint32_t>> m_out; // per lane and chain PE: f32 contribution
    std::vector<std::vector<std::uint32_t>> m_meta; // per lane and chain PE: constants (computesteps)
};

} // namespace waferscope::core::cyclelevel
