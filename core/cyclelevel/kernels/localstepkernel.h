#pragma once

#include "core/cyclelevel/kernels/prefillkernel.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// What each PE of the weight-streaming layout (streamgemmkernel.h: R x C PEs, PE column c holding
// tokens [c T, (c + 1) T)) computes on what it holds, moving nothing, by the training contract
// (trainops.h):
//   Activate (forward): on PE row r's band of a linear's M sums, z = S(sum) and h = S(act(z))
//     (h = z without an activation: the logits);
//   ActivateBackward (backward delta): on the band of the delta's sums and of the layer's saved z,
//     dz = S(S(sum) * act'(z));
//   SoftmaxLoss (forward, and the start of the backward): on all M logits of its tokens (after a
//     ColumnGatherKernel), each token's loss and dz, at every PE of the column, so that the delta
//     and the gradient after it find dz where they need it;
//   Residual (forward): on the band of a linear's sums and of the residual stream x,
//     S(x + S(sum));
//   LayerNorm (forward): on all M values of its tokens at every PE of the column, the norm with
//     the weights and biases in `params` (M, then M);
//   LayerNormBackward: on all M of dy (`input`), x (`saved`) and the residual stream's gradient
//     (`carry`, or none), dx = S(carry + S(LN'(dy))) at every PE, and the norm's gradient terms
//     (dy x^, then dy: 2M a token) beside it for the gradient kernel.
struct LocalStepSpec {
    enum class Op : std::uint8_t { Activate, ActivateBackward, SoftmaxLoss, Residual, LayerNorm, LayerNormBackward };
    std::string name;
    Frame frame; // R rows x C columns
    Op op = Op::Activate;
    int tokensPerPe = 1; // T
    std::int64_t dims = 1; // M
    bool activated = true; // Activate: false for the logits
    Activation activation = Activation::Relu;
    std::vector<float> input; // (C T) tokens x M, row-major: the sums, or the logits
    std::vector<float> saved; // ActivateBackward: the forward's z; Residual, LayerNormBackward: x; tokens x M
    std::vector<float> carry; // LayerNormBackward: tokens x M, or empty
    std::vector<float> params; // LayerNorm, LayerNormBackward: weights, then biases (2M)
    float epsilon = 1e-5f;
    std::vector<std::int32_t> labels; // SoftmaxLoss: per token, -1 for a padding token
    float gradientScale = 1.0f; // SoftmaxLoss: g
};

class LocalStepKernel final : public PrefillKernel {
public:
    // Refuses (std::logic_error, naming the kernel) an empty or westward frame, operands of other
    // sizes and an activation without a derivative (trainops.h).
    LocalStepKernel(LocalStepSpec spec, const KernelContext& context);
    const std::string& name() const override { return m_spec.name; }
    Pass pass() const override;
    void needRings(PrefillRings&) const override { }
    void useRings(const PrefillRings&) override { }
    void load(fabric::StaticColorFabric& fabric) override;
    void program(ProgramWriter& writer, int inputColor) const override;
    // After a run, dims x tokens (dimsMajor): Activate's h, ActivateBackward's dz, a tile a PE of a
    // row with a band; SoftmaxLoss's dz, all M, a tile every PE.
    const std::vector<PrefillOutputTile>& outputTiles() const override { return m_outputs; }
    // Activate's z, beside h (the backward's saved operand); SoftmaxLoss's per-token losses of
    // the first row's PEs (a tile of one dim); LayerNormBackward's terms (2M) of the first row's.
    const std::vector<PrefillOutputTile>& sideTiles() const { return m_side; }
    KernelCost closedForm() const override;

private:
    int rows() const { return m_spec.frame.h; }
    int columns() const { return m_spec.frame.w; }
    bool banded() const
    {
        return m_spec.op == LocalStepSpec::Op::Activate || m_spec.op == LocalStepSpec::Op::ActivateBackward
            || m_spec.op == LocalStepSpec::Op::Residual;
    }
    std::uint32_t bandBegin(int r) const;
    std::uint32_t bandSize(int r) const { return bandBegin(r + 1) - bandBegin(r); }
    std::int64_t operations(int r) const; // a PE of row r's element operations

    struct Buffers {
        std::uint32_t input = 0; // f32: band (or M) x T
        std::uint32_t saved = 0; // f32: ActivateBackward's z; SoftmaxLoss's T, then its labels; x
        std::uint32_t header = 0; // f32: the norms' T, M, epsilon, offsets, then the params
        std::uint32_t out = 0; // f32: band (or M) x T; SoftmaxLoss: then the T losses
    };
    LocalStepSpec m_spec;
    KernelContext m_context;
    std::vector<Buffers> m_buffers; // per (r, c)
    std::vector<PrefillOutputTile> m_outputs;
    std::vector<PrefillOutputTile> m_side;
};

} // namespace waferscope::core::cyclelevel
