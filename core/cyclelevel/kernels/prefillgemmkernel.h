#pragma once

#include "core/cyclelevel/kernels/prefillgrid.h"
#include "core/cyclelevel/kernels/regionkernel.h"

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
};

class PrefillGemmKernel {
public:
    // Refuses (std::logic_error, naming the kernel) a frame narrower than one PE or with fewer rows
    // than columns, no tokens, no weight, a bias that is not one value per output, a gated
    // activation, and tiles larger than a step takes (steps::TileDims).
    PrefillGemmKernel(PrefillGemmSpec spec, const KernelContext& context);
    const PrefillGemmSpec& spec() const { return m_spec; }
    const PrefillGrid& grid() const { return m_grid; }

    // The input's lanes: one per block row, elements [begin, end) of feed(). Every PE of the row
    // (taps()) takes the whole lane and keeps its own tile of it.
    const Lanes& lanes() const { return m_lanes; }
    std::vector<Pe> taps(std::size_t lane) const;
    // The feed vector from X, tokens x in row-major (already rounded to storage).
    std::vector<float> feed(std::span<const float> x) const;

    void route(RouteBook& book);
    // W's tiles (one per PE, 16-bit) and the biases of the block row's outputs; the tile buffers.
    void load(fabric::StaticColorFabric& fabric);
    // The whole prompt: takes the input's lanes on `inputColor`, leaves the outputs in place.
    void program(ProgramWriter& writer, int inputColor) const;
    // Where the outputs are after a run (every token and output exactly once; dims are outputs).
    const std::vector<PrefillOutputTile>& outputTiles() const { return m_outputs; }

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
    std::uint32_t inSize(int x) const { return m_grid.blockSize(x); }
    std::uint32_t tokenBand(int x, int y, int step) const { return m_grid.bandSize(m_grid.blockAt(x, y, step)); }
    // Wavelets PE (x, y) sends at step s: its partial outputs along its row, its input tile up its column.
    std::uint32_t partialWavelets(int x, int y, int step) const { return tokenBand(x, y, step) * outSize(y); }
    std::uint32_t inputWavelets(int x, int y, int step) const { return tokenBand(x, y, step) * inSize(x); }
    // A PE before block column x on its row's ring has added to the partial it holds at step s.
    bool partialStarted(int x, int step) const;
    Pe at(int x, int y) const { return { m_spec.frame.x(x), m_spec.frame.y(y) }; }
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
    std::vector<std::uint32_t> m_outBands; // g + 1 output boundaries, one band per block row
    Lanes m_lanes;
    std::vector<int> m_rowShift; // per ring edge k (position k + 1 to k): its color along the rows, or -1
    std::vector<int> m_columnShift; // ... up the columns
    std::vector<Buffers> m_buffers; // per (y, x)
    std::vector<PrefillOutputTile> m_outputs;
};

} // namespace waferscope::core::cyclelevel
