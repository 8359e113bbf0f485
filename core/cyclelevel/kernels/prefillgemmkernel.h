#pragma once

#include "core/cyclelevel/kernels/prefillgrid.h"
#include "core/cyclelevel/kernels/prefillkernel.h"
#include "core/cyclelevel/kernels/prefillrings.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// Y (tokens x out) = X (tokens x in) W^T + b over a prompt of T tokens at once (prefill), on a
// g x g block of PEs (g = the frame's width; the block takes the frame's first g rows). Its
// scheme is described at the top of prefillgemmkernel.cpp; the rings are PrefillGrid's.
struct PrefillGemmSpec {
    std::string name;
    Frame frame;
    std::int64_t tokens = 0;
    WeightTensor weight = WeightTensor::absent(Storage::Fp16); // rows = outputs, cols = inputs
    WeightTensor bias = WeightTensor::absent(Storage::Fp16); // absent: no bias
    // At the PEs that finish the outputs: S(y + b), then act() rounded (a plain feed-forward's
    // hidden values). Gated activations take a second input: refused.
    std::optional<Activation> activation;
    // Transposed: the block's rows and columns swap roles. Block column x then owns output band x
    // and block row y input block y. The input moves along the rows and the partials up the
    // columns, so a transposed GEMM takes a plain one's outputs where they lie: rows of output
    // bands become rows of input blocks. A plain GEMM takes a transposed one's outputs the same way.
    bool transposed = false;
    // PE (x, y) holds token band blockAt(x, y, s) + bandOffset (mod g) at step s. Outputs end at
    // the band of the last step, one ring position before the first, so the GEMM that takes them
    // in place has an offset one less.
    int bandOffset = 0;
    // The input already on the block, one tile a PE (tokens x input block, f32, row-major): a GEMM
    // before's outputTiles(). Empty: the input comes in lanes (feed()).
    std::vector<PrefillOutputTile> inputInPlace;
    // Heads of headDim outputs (with rotary or grouped keys and values; 0: none). Rotary at the
    // PEs that finish the outputs, on each head with the token's position (referenceops (4)); each
    // output band must be whole heads.
    int headDim = 0;
    bool rotary = false;
    float ropeTheta = 10000.0f;
    // Grouped keys and values: every headDim rows of W (and of the bias) serve this many output
    // heads in turn, so the outputs are a kv head's keys or values for each query head (every
    // query head's band of the block then holds what its attention reads).
    int queryHeadsPerKvHead = 1;
};

class PrefillGemmKernel final : public PrefillKernel {
public:
    // Refuses (std::logic_error, naming the kernel) a frame narrower than one PE or with fewer rows
    // than columns, no tokens, no weight, a bias that is not one value per output, a gated
    // activation, tiles larger than a step takes (steps::TileDims), a transposed GEMM fed in lanes,
    // and an input in place that is not one tile a PE of the band and block it must hold first.
    PrefillGemmKernel(PrefillGemmSpec spec, const KernelContext& context);
    const PrefillGemmSpec& spec() const { return m_spec; }
    const std::string& name() const override { return m_spec.name; }
    const PrefillGrid& grid() const { return m_grid; }

    // The input's lanes: one per block row, elements [begin, end) of feed(). Every PE of the row
    // (taps()) takes the whole lane and keeps its own tile of it. None when the input is in place.
    const Lanes& lanes() const { return m_lanes; }
    std::vector<Pe> taps(std::size_t lane) const;
    // The feed vector from X, tokens x in row-major (already rounded to storage).
    std::vector<float> feed(std::span<const float> x) const;

    void route(RouteBook& book);
    // Or on a block's shared rings (several kernels taking turns on one block): says which ring
    // edges it uses, and once they are placed takes their colors.
    void needRings(PrefillRings& rings) const override;
    void useRings(const PrefillRings& rings) override;
    // W's tiles (one per PE, 16-bit) and the biases of the block row's outputs; the tile buffers.
    void load(fabric::StaticColorFabric& fabric) override;
    // The whole prompt: takes the input's lanes on `inputColor` (unused with the input in place),
    // leaves the outputs in place.
    void program(ProgramWriter& writer, int inputColor) const override;
    // Where the outputs are after a run (every token and output exactly once; dims are outputs).
    const std::vector<PrefillOutputTile>& outputTiles() const override { return m_outputs; }
    KernelCost closedForm() const override;

private:
    // A PE's buffers: W's tile (f16 offset), its biases (f16), and two each of the partial
    // outputs and the input tile (f32 offsets), step s using buffer s mod 2.
    struct Buffers {
        std::uint32_t weight = 0;
        std::uint32_t bias = 0;
        std::uint32_t partial[2] = {};
        std::uint32_t input[2] = {};
    };
    // Block row y: outputs [outBegin(y), outBegin(y + 1)); block column x: inputs
    // [inBegin(x), ...); the token band a PE holds at step s: blockAt(x, y, s) of m_tokens.
    std::uint32_t outSize(int y) const { return m_outBands[std::size_t(y) + 1] - m_outBands[std::size_t(y)]; }
    std::int64_t outputs() const { return m_spec.weight.rows() * std::max(1, m_spec.queryHeadsPerKvHead); }
    // The row of W (and of the bias) output o reads.
    std::int64_t weightRow(std::int64_t output) const;
    std::uint32_t inSize(int x) const { return m_grid.blockSize(x); }
    int bandAt(int x, int y, int step) const { return (m_grid.blockAt(x, y, step) + m_offset) % m_grid.size(); }
    std::uint32_t tokenBand(int x, int y, int step) const { return m_grid.bandSize(bandAt(x, y, step)); }
    // Wavelets PE (x, y) sends at step s: its partial outputs along its row, its input tile up its column.
    std::uint32_t partialWavelets(int x, int y, int step) const { return tokenBand(x, y, step) * outSize(y); }
    std::uint32_t inputWavelets(int x, int y, int step) const { return tokenBand(x, y, step) * inSize(x); }
    // Whether block column `from` of row `row` sends partials along the row at some step, and
    // block row `from` of column `column` its input up the column.
    bool sendsPartials(int from, int row) const;
    bool sendsInputs(int column, int from) const;
    // A PE before block column x on its row's ring has added to the partial it holds at step s.
    bool partialStarted(int x, int step) const;
    Pe at(int x, int y) const
    {
        return m_spec.transposed ? Pe { m_spec.frame.x(y), m_spec.frame.y(x) }
                                 : Pe { m_spec.frame.x(x), m_spec.frame.y(y) };
    }
    // The input tile PE (x, y) holds at step s: in place at step 0, else its own buffer.
    std::uint32_t inputAt(int x, int y, int step) const;
    const Buffers& buffers(int x, int y) const
    {
        return m_buffers[std::size_t(y) * std::size_t(m_grid.size()) + std::size_t(x)];
    }
    std::uint32_t feedSkip(int x, int y) const;
    int rowColor(int x, bool incoming) const;
    int columnColor(int y, bool incoming) const;
    void loadPe(fabric::StaticColorFabric& fabric, int x, int y);
    void programPe(ProgramWriter& writer, int inputColor, int x, int y) const;
    // A ring shift: send `out` wavelets from `from`, then receive `in` into `to` (on a PE that
    // sent nothing, once its earlier sends have drained: `to` is the buffer they sent).
    void shift(ProgramWriter& writer, Pe pe, int outColor, int inColor, std::uint32_t from, std::uint32_t out,
        std::uint32_t to, std::uint32_t in) const;
    void programEpilogue(ProgramWriter& writer, int x, int y) const;

    PrefillGemmSpec m_spec;
    KernelContext m_context;
    PrefillGrid m_grid; // bands: the tokens; blocks: the inputs (block column x holds block x)
    int m_offset = 0; // bandOffset in [0, g)
    std::vector<std::int64_t> m_inPlace; // per (y, x): the f32 offset of its tile in place, or -1
    std::vector<std::uint32_t> m_outBands; // g + 1 output boundaries, one band per block row
    Lanes m_lanes;
    std::vector<int> m_rowShift; // per ring edge k (position k + 1 to k): its color along the rows, or -1
    std::vector<int> m_columnShift; // ... up the columns
    std::vector<Buffers> m_buffers; // per (y, x)
    std::vector<PrefillOutputTile> m_outputs;
};

} // namespace waferscope::core::cyclelevel
