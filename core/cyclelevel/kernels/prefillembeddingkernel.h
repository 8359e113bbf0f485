#pragma once

#include "core/cyclelevel/kernels/prefillgrid.h"
#include "core/cyclelevel/kernels/prefillkernel.h"
#include "core/cyclelevel/kernels/prefillrings.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// The embedding of a whole prompt on a g x g block, leaving the hidden vectors as a plain prefill
// GEMM takes them (the first block's norm). Its scheme is described at the top of
// prefillembeddingkernel.cpp.
struct PrefillEmbeddingSpec {
    std::string name;
    Frame frame; // the block: its first g columns and rows, g = frame.w
    std::int64_t tokens = 0;
    WeightTensor token = WeightTensor::absent(Storage::Fp16); // vocab x hidden
    WeightTensor position = WeightTensor::absent(Storage::Fp16); // learned positions x hidden, or absent
};

class PrefillEmbeddingKernel final : public PrefillKernel {
public:
    // Refuses (std::logic_error, naming the kernel) a frame that is not g x g, no tokens, no
    // token table, a prompt longer than the position table, and tiles over what a step takes.
    PrefillEmbeddingKernel(PrefillEmbeddingSpec spec, const KernelContext& context);
    const std::string& name() const override { return m_spec.name; }

    // The token ids' lanes from the host: one per block row, the ids of its PEs' token bands in
    // column order (feed()); every PE of the row (taps()) takes the lane and keeps its own.
    const Lanes& lanes() const { return m_lanes; }
    std::vector<Pe> taps(std::size_t lane) const;
    // The prompt to run: its ids go in the lanes (feed(), each id's bits as a float) and give each
    // lookup step its cycles. Refuses (std::logic_error) a prompt of another length, or an id
    // outside the token table. Needed before program() and closedForm().
    void takePrompt(std::span<const std::int32_t> ids);
    std::vector<float> feed() const;

    void needRings(PrefillRings& rings) const override;
    void useRings(const PrefillRings& rings) override;
    void load(fabric::StaticColorFabric& fabric) override;
    // The ids come on `inputColor`.
    void program(ProgramWriter& writer, int inputColor) const override;
    // After a run: the hidden vectors, one tile a PE, as a plain GEMM with outputOffset() takes them.
    const std::vector<PrefillOutputTile>& outputTiles() const override { return m_outputs; }
    KernelCost closedForm() const override;
    int outputOffset() const { return (m_grid.size() - 1) % m_grid.size(); }

private:
    std::uint32_t rows(int x, int y, int moved) const { return m_grid.bandSize(m_grid.blockAt(x, y, moved)); }
    std::uint32_t cols(int x) const { return m_grid.blockSize(x); }
    std::int64_t vocabBegin(int y) const;
    const std::vector<std::int32_t>& promptIds() const;
    Pe at(int x, int y) const { return { m_spec.frame.x(x), m_spec.frame.y(y) }; }
    int columnColor(int y, bool incoming) const;

    struct Buffers {
        std::uint32_t table = 0; // vocab rows of the PE's row share x hidden block x (16-bit)
        std::uint32_t positions = 0; // the final band's position rows x hidden block x (16-bit)
        std::uint32_t moving[2] = {}; // the band's ids, then its tile
    };
    PrefillEmbeddingSpec m_spec;
    KernelContext m_context;
    PrefillGrid m_grid; // bands: the tokens; blocks: the hidden values
    Lanes m_lanes;
    std::vector<std::int32_t> m_ids; // the prompt (takePrompt)
    std::vector<Buffers> m_buffers; // per (y, x)
    std::vector<int> m_columnShift;
    std::vector<PrefillOutputTile> m_outputs;
};

} // namespace waferscope::core::cyclelevel
