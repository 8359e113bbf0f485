#pragma once

#include "core/cyclelevel/decoder.h"
#include "core/cyclelevel/kernels/prefillgrid.h"
#include "core/cyclelevel/kernels/prefillkernel.h"
#include "core/cyclelevel/kernels/prefillrings.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// LayerNorm or RMSNorm of every token of a prompt whose hidden vectors lie on a g x g block as a
// plain prefill GEMM takes its input: PE (x, y) one token band (blockAt(x, y, 0) + bandOffset)
// of hidden block x. Its scheme is described at the top of prefillnormkernel.cpp.
struct PrefillNormSpec {
    std::string name;
    Frame frame; // the block: the frame's first g columns and rows, g = frame.w
    std::int64_t tokens = 0;
    DecoderShape::Norm norm = DecoderShape::Norm::RmsNorm;
    float epsilon = 1e-5f;
    WeightTensor weight = WeightTensor::absent(Storage::Fp16); // 1 x hidden
    WeightTensor bias = WeightTensor::absent(Storage::Fp16); // LayerNorm: 1 x hidden, or absent
    int bandOffset = 0;
    std::vector<PrefillOutputTile> input; // in place, one tile a PE (tokens x hidden block, f32)
};

class PrefillNormKernel final : public PrefillKernel {
public:
    // Refuses (std::logic_error, naming the kernel) a frame that is not g x g, no tokens or weight,
    // a weight or bias that is not one row of the hidden size, and an input that is not one tile a
    // PE of the band and block it starts with.
    PrefillNormKernel(PrefillNormSpec spec, const KernelContext& context);
    const PrefillNormSpec& spec() const { return m_spec; }
    const std::string& name() const override { return m_spec.name; }

    void needRings(PrefillRings& rings) const override;
    void useRings(const PrefillRings& rings) override;
    void load(fabric::StaticColorFabric& fabric) override;
    void program(ProgramWriter& writer, int inputColor) const override;
    // After a run: the normed tiles, and the input tiles (moved with them), at the same PEs; a
    // plain GEMM takes either in place with bandOffset outputOffset().
    const std::vector<PrefillOutputTile>& outputTiles() const override { return m_outputs; }
    KernelCost closedForm() const override;
    const std::vector<PrefillOutputTile>& movedInput() const { return m_moved; }
    int outputOffset() const;

private:
    struct Buffers {
        std::uint32_t weight = 0; // the block's weights, then its biases (16-bit)
        std::uint32_t x[2] = {}; // the moving input tile's own buffers
        std::uint32_t mean[2] = {}; // LayerNorm's second pass: the means, moving with the tile
        std::uint32_t partial[2] = {};
        std::uint32_t figures = 0; // the means, then the inverse deviations (rows each)
        std::uint32_t out = 0;
    };
    int passes() const { return m_spec.norm == DecoderShape::Norm::LayerNorm ? 2 : 1; }
    int bandAt(int x, int y, int moved) const { return (m_grid.blockAt(x, y, moved) + m_offset) % m_grid.size(); }
    std::uint32_t tokens(int x, int y, int moved) const { return m_grid.bandSize(bandAt(x, y, moved)); }
    std::uint32_t block(int x) const { return m_grid.blockSize(x); }
    Pe at(int x, int y) const { return { m_spec.frame.x(x), m_spec.frame.y(y) }; }
    const Buffers& buffers(int x, int y) const { return m_buffers[std::size_t(y * m_grid.size() + x)]; }
    // The tile PE (x, y) holds after the input has moved `moved` ring positions up the columns.
    std::uint32_t xAt(int x, int y, int moved) const;
    bool partialStarted(int x, int step) const;
    void programPass(ProgramWriter& writer, int x, int y, int pass) const;
    int rowColor(int x, bool incoming) const;
    int columnColor(int y, bool incoming) const;

    PrefillNormSpec m_spec;
    KernelContext m_context;
    PrefillGrid m_grid; // bands: the tokens; blocks: the hidden values
    int m_offset = 0;
    std::vector<std::int64_t> m_inPlace; // per (y, x)
    std::vector<Buffers> m_buffers;
    std::vector<int> m_rowShift;
    std::vector<int> m_columnShift;
    std::vector<PrefillOutputTile> m_outputs;
    std::vector<PrefillOutputTile> m_moved;
};

} // namespace waferscope::core::cyclelevel
