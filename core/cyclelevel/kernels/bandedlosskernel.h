#pragma once

#include "core/cyclelevel/kernels/columnreducekernel.h"
#include "core/cyclelevel/kernels/prefillkernel.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// A decoder's softmax cross-entropy on the LM head's logits where the head left them, in bands
// over the PE rows (the vocabulary split as the streamed GEMM splits its outputs), by trainops.h's
// bandedSoftmaxCrossEntropy(): each PE takes its band's max of each of its tokens' logits, and a
// column all-reduce gives every PE the token's max; then its band's sum of exponentials, and a
// second all-reduce the token's sum; then each PE computes dz on its band, and the PE whose band
// holds a token's label its loss. Nothing as wide as the vocabulary is held by any PE.
struct BandedLossSpec {
    std::string name;
    Frame frame; // R rows x C columns
    int tokensPerPe = 1; // T
    std::int64_t dims = 1; // V
    std::vector<float> logits; // (C T) tokens x V, row-major
    std::vector<std::int32_t> labels; // per token, -1 for a padding token
    float gradientScale = 1.0f; // g
};

class BandedLossKernel final : public PrefillKernel {
public:
    // Refuses (std::logic_error, naming the kernel) an empty or westward frame and operands of
    // other sizes.
    BandedLossKernel(BandedLossSpec spec, const KernelContext& context);
    const std::string& name() const override { return m_spec.name; }
    Pass pass() const override { return Pass::Forward; }
    void needRings(PrefillRings&) const override { }
    void useRings(const PrefillRings&) override { }
    void route(RouteBook& book);
    void load(fabric::StaticColorFabric& fabric) override;
    void program(ProgramWriter& writer, int inputColor) const override;
    // After a run: dz on each PE's band, dims x tokens.
    const std::vector<PrefillOutputTile>& outputTiles() const override { return m_outputs; }
    // Each PE's losses of its tokens whose label its band holds (0 for the others): a tile of one
    // dim, the row's index, a PE.
    const std::vector<PrefillOutputTile>& sideTiles() const { return m_side; }
    KernelCost closedForm() const override;

private:
    int rows() const { return m_spec.frame.h; }
    int columns() const { return m_spec.frame.w; }
    std::uint32_t bandBegin(int r) const;
    std::uint32_t bandSize(int r) const { return bandBegin(r + 1) - bandBegin(r); }
    std::uint32_t maxCycles(int r) const;
    std::uint32_t sumCycles(int r) const;
    std::uint32_t finishCycles(int r) const;

    struct Buffers {
        std::uint32_t header = 0;
        std::uint32_t maxOwn = 0;
        std::uint32_t maxResult = 0;
        std::uint32_t sumOwn = 0;
        std::uint32_t sumResult = 0;
    };
    BandedLossSpec m_spec;
    KernelContext m_context;
    ColumnAllReduce m_max;
    ColumnAllReduce m_sum;
    std::vector<Buffers> m_buffers; // per (r, c)
    std::vector<PrefillOutputTile> m_outputs;
    std::vector<PrefillOutputTile> m_side;
};

} // namespace waferscope::core::cyclelevel
