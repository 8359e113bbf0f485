#pragma once

#include "core/cyclelevel/kernels/prefillgrid.h"
#include "core/cyclelevel/kernels/regionkernel.h"

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// Causal attention over a prompt of T tokens at once (prefill), each query head on a g x g block
// of PEs (g = the frame's width), the heads stacked down the frame. Its scheme is described at
// the top of prefillattentionkernel.cpp; the tiling and shift schedule are PrefillGrid's.
struct PrefillAttentionSpec {
    std::string name;
    Frame frame; // w = g; head h on frame rows [h g, (h + 1) g)
    int heads = 1;
    int kvHeads = 1; // query head h reads kv head h / (heads / kvHeads)
    int headDim = 0;
    std::int64_t tokens = 0;
    bool alibi = false; // not supported: the constructor refuses it
};

// The three inputs, each fed in lanes along the frame's rows.
enum class PrefillOperand : std::uint8_t { Query, Key, Value };
constexpr std::size_t kPrefillOperands = 3;

class PrefillAttentionKernel {
public:
    // Refuses (std::logic_error, naming the kernel) ALiBi, a frame too small for the heads, heads
    // not a multiple of kvHeads, and tiles of more than TileDims::kMaxInner tokens or dimensions.
    PrefillAttentionKernel(PrefillAttentionSpec spec, const KernelContext& context);
    const PrefillAttentionSpec& spec() const { return m_spec; }
    const PrefillGrid& grid() const { return m_grid; }

    // The lanes an operand arrives in: one per frame row that takes any of it, elements
    // [begin, end) of the operand's feed vector (feed()). Every PE of the lane's row (taps())
    // takes the whole lane and keeps its own tile of it.
    const Lanes& lanes(PrefillOperand operand) const { return m_lanes[std::size_t(operand)]; }
    std::vector<Pe> taps(PrefillOperand operand, std::size_t lane) const;
    // The feed vector of an operand from its matrices, head after head, each tokens x headDim
    // row-major (the query: `heads` of them; key and value: `kvHeads`).
    std::vector<float> feed(PrefillOperand operand, std::span<const float> matrices) const;

    void route(RouteBook& book);
    void load(fabric::StaticColorFabric& fabric);
    // The whole prompt: takes the operands' lanes on their colors and leaves the outputs in place.
    void program(ProgramWriter& writer, int queryColor, int keyColor, int valueColor) const;
    // Where head h's outputs are after a run (every token and dimension exactly once).
    const std::vector<PrefillOutputTile>& outputTiles(int head) const { return m_outputs[std::size_t(head)]; }

private:
    // A PE's buffers (f32 offsets; per step: -1 when it holds no such tile that step).
    struct Buffers {
        std::uint32_t scores = 0; // the score tile, then its exponentials
        std::uint32_t max = 0; // per query of the band
        std::uint32_t sum = 0;
        std::vector<std::int64_t> query, key, value, partial;
    };
    // Wavelets PE (x, y) sends along its row / up its column at a step of each phase (0: none).
    std::uint32_t queryWavelets(int x, int y, int step) const;
    std::uint32_t keyWavelets(int x, int y, int step) const;
    std::uint32_t partialWavelets(int x, int y, int step) const;
    std::uint32_t valueWavelets(int x, int y, int step) const { return keyWavelets(x, y, step); }
    Pe at(int head, int x, int y) const { return { m_spec.frame.x(x), m_spec.frame.y(head * m_grid.size() + y) }; }
    const Buffers& buffers(int head, int x, int y) const;
    // Where PE (x, y)'s fed tile of an operand starts in its lane, or -1 if none is fed.
    std::int64_t feedSkip(PrefillOperand operand, int x, int y) const;
    std::uint32_t tileSize(PrefillOperand operand, int x, int y, int step) const;
    // One ring shift of a step: send the outgoing tile, then arm the receive of the incoming one
    // and wait for it (a transfer of no wavelets is left out).
    struct Transfer {
        int color = -1;
        std::uint32_t offset = 0;
        std::uint32_t wavelets = 0;
    };
    void exchange(ProgramWriter& writer, Pe pe, const Transfer& out, const Transfer& in) const;
    // The ring colors PE column x (row y) sends on and receives on.
    int rowColor(int x, bool incoming) const;
    int columnColor(int y, bool incoming) const;
    void programScores(ProgramWriter& writer, int head, int x, int y) const;
    void programSoftmax(ProgramWriter& writer, int head, int x, int y) const;
    void programWeightedValues(ProgramWriter& writer, int head, int x, int y) const;

    PrefillAttentionSpec m_spec;
    KernelContext m_context;
    PrefillGrid m_grid;
    std::array<Lanes, kPrefillOperands> m_lanes;
    std::vector<int> m_rowShift; // per ring edge k (position k + 1 to k): its color along the rows, or -1
    std::vector<int> m_columnShift; // ... up the columns
    int m_chain[2] = { -1, -1 }; // the softmax reductions along each row to its diagonal PE
    int m_back = -1; // the row maximum and row sum from the diagonal PE back along the row
    std::vector<Buffers> m_buffers; // per (head, y, x)
    std::vector<std::vector<PrefillOutputTile>> m_outputs; // per head
};

} // namespace waferscope::core::cyclelevel
