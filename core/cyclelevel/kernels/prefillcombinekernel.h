#pragma once

#include "core/cyclelevel/kernels/prefillgrid.h"
#include "core/cyclelevel/kernels/prefillkernel.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// out = S(x + y) (the residual: x the block's input, y its output), or S(act(g) * u) (a gated
// feed-forward's hidden values: g the gate's output, u the up projection's), at each PE of two
// tile sets on the same PEs, tokens and values. No wavelet moves.
enum class PrefillCombination : std::uint8_t { Residual, Gated };

struct PrefillCombineSpec {
    std::string name;
    Frame frame; // the block: its first g columns and rows, g = frame.w
    PrefillCombination combination = PrefillCombination::Residual;
    Activation activation = Activation::Silu; // Gated
    std::vector<PrefillOutputTile> first; // x, or the gate
    std::vector<PrefillOutputTile> second; // y, or up
};

class PrefillCombineKernel final : public PrefillKernel {
public:
    // Refuses (std::logic_error, naming the kernel) tiles of the two sets that do not pair up.
    PrefillCombineKernel(PrefillCombineSpec spec, const KernelContext& context);
    const std::string& name() const override { return m_spec.name; }
    // It moves nothing.
    void needRings(PrefillRings&) const override { }
    void useRings(const PrefillRings&) override { }
    void load(fabric::StaticColorFabric& fabric) override;
    void program(ProgramWriter& writer, int inputColor) const override;
    const std::vector<PrefillOutputTile>& outputTiles() const override { return m_outputs; }
    KernelCost closedForm() const override;

private:
    PrefillCombineSpec m_spec;
    KernelContext m_context;
    std::vector<PrefillOutputTile> m_outputs;
};

} // namespace waferscope::core::cyclelevel
