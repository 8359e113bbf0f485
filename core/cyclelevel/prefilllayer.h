#pragma once

#include "core/common/expected.h"
#include "core/cyclelevel/decoder.h"
#include "core/cyclelevel/kernels/prefillcombinekernel.h"
#include "core/cyclelevel/kernels/prefillgemmkernel.h"
#include "core/cyclelevel/kernels/prefillnormkernel.h"
#include "core/cyclelevel/kernels/prefillringattentionkernel.h"
#include "core/cyclelevel/kernels/prefillshiftkernel.h"
#include "core/cyclelevel/weights.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// One decoder block over a whole prompt on a g x g block of PEs, g the heads: the prefill kernels
// in the block's order, each taking its inputs where the one before left them, so that no tile is
// gathered or re-laid between them (WaferLLM's prefill, on MeshGEMM's rings):
//   norm1 -> q, k, v (plain GEMMs; rotary at their ends; k and v a kv head for every query head's
//   row) -> ring attention (a head a row) -> output projection (transposed GEMM) -> two shifts up
//   the columns -> residual -> norm3 -> up and gate (plain GEMMs) -> gated activation -> down
//   (transposed GEMM) -> two shifts -> residual.
// The hidden vectors come in and go out as a plain GEMM takes them: PE (x, y) one token band of
// hidden block x, band blockAt(x, y, 0) + offset; the norm moves them g - 1 ring positions a pass
// (outputOffset), and each projection pair leaves its output two positions short of its input,
// which the two shifts make up, so the residual adds tiles that lie on the same PEs.
//
// Use: construct with the input's tiles (each layer with the one before's outputTiles()), load()
// (SRAM: every kernel's buffers and weights), needRings() / useRings() on the block's shared
// rings, then program() once the kernels before it are programmed: one run of the fabric takes
// the whole block.
class PrefillLayer {
public:
    // Empty when the block can run its prompt on the prefill kernels; else why not (a mixture of
    // experts, ALiBi, heads that do not split the hidden size into whole bands of the block, kv
    // heads that do not divide the heads).
    static std::optional<std::string> unsupported(const DecoderShape& shape);

    PrefillLayer(const DecoderShape& shape, const DecoderWeights& weights, int layer, const Frame& frame,
        std::int64_t tokens, const std::vector<PrefillOutputTile>& input, int inputOffset,
        const KernelContext& context);

    // Allocates and writes every kernel's SRAM, in the order they run (a kernel's input places
    // are the one before's outputs, so each is built once the one before is loaded).
    void load(fabric::StaticColorFabric& fabric);
    void needRings(PrefillRings& rings) const;
    void useRings(const PrefillRings& rings);
    void program(ProgramWriter& writer) const;
    // Every kernel, in the order it runs (after load()).
    const std::vector<PrefillKernel*>& kernels() const { return m_order; }
    // The sum of its kernels' closed forms, each from its inputs in place: the block's cycles were
    // no kernel to start before the one before it has ended everywhere (on the fabric each PE
    // goes on as soon as its own part is done).
    double closedFormCycles() const;

    // After a run: the block's output (as the input came, with outputOffset()), and the keys and
    // values of every position, a kv head on each of its query heads' rows (for the decode cache).
    const std::vector<PrefillOutputTile>& outputTiles() const;
    int outputOffset() const { return m_outputOffset; }
    const std::vector<PrefillOutputTile>& keyTiles() const { return m_attention->keyTiles(); }
    const std::vector<PrefillOutputTile>& valueTiles() const { return m_attention->valueTiles(); }

private:
    PrefillGemmSpec gemm(const std::string& part, Tensor weight, Tensor bias, bool hasBias, int offset, bool transposed,
        const std::vector<PrefillOutputTile>& input) const;
    PrefillNormSpec norm(const std::string& part, Tensor weight, Tensor bias, int offset,
        const std::vector<PrefillOutputTile>& input) const;
    void loadAttention(fabric::StaticColorFabric& fabric);
    void loadFeedForward(fabric::StaticColorFabric& fabric);
    // Loads a kernel just built and appends it to the order they run in.
    template <typename Kernel>
    std::unique_ptr<Kernel> loaded(std::unique_ptr<Kernel> kernel, fabric::StaticColorFabric& fabric);

    const DecoderShape& m_shape;
    const DecoderWeights& m_weights;
    int m_layer = 0;
    std::string m_name;
    Frame m_frame;
    std::int64_t m_tokens = 0;
    std::vector<PrefillOutputTile> m_input;
    int m_inputOffset = 0;
    int m_outputOffset = 0;
    KernelContext m_context;
    std::unique_ptr<PrefillNormKernel> m_norm1, m_norm3;
    std::unique_ptr<PrefillGemmKernel> m_q, m_k, m_v, m_out, m_up, m_gate, m_down;
    std::unique_ptr<PrefillRingAttentionKernel> m_attention;
    std::unique_ptr<PrefillShiftKernel> m_attentionShift, m_ffnShift;
    std::unique_ptr<PrefillCombineKernel> m_attentionResidual, m_gated, m_ffnResidual;
    std::vector<PrefillKernel*> m_order;
};

} // namespace waferscope::core::cyclelevel
