#pragma once

#include "core/cyclelevel/kernels/prefillgrid.h"
#include "core/cyclelevel/kernels/prefillkernel.h"
#include "core/cyclelevel/kernels/prefillrings.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// Causal attention over a whole prompt where the projections left q, k and v: ring attention on a
// g x g block, block row y holding query head y. Its scheme is described at the top of
// prefillringattentionkernel.cpp.
struct PrefillRingAttentionSpec {
    std::string name;
    Frame frame; // the block: the frame's first g columns and rows, g = frame.w = the heads
    int headDim = 0;
    std::int64_t tokens = 0;
    // The inputs in place, one tile a PE (tokens x head dimensions, f32, row-major): block row y
    // holds head y's dimensions of q (and of k and v: its kv head's), each PE one token band, the
    // g PEs of a row all g bands. Q, k and v tiles of a PE cover the same tokens.
    std::vector<PrefillOutputTile> query;
    std::vector<PrefillOutputTile> key;
    std::vector<PrefillOutputTile> value;
};

class PrefillRingAttentionKernel final : public PrefillKernel {
public:
    // Refuses (std::logic_error, naming the kernel) a frame that is not g x g, a head dimension
    // or band over what a step takes, and inputs that are not one tile a PE as the spec says.
    PrefillRingAttentionKernel(PrefillRingAttentionSpec spec, const KernelContext& context);
    const PrefillRingAttentionSpec& spec() const { return m_spec; }
    const std::string& name() const override { return m_spec.name; }
    int size() const { return m_spec.frame.w; }

    // The block's shared rings: the key and value tiles move along every row.
    void needRings(PrefillRings& rings) const override;
    void useRings(const PrefillRings& rings) override;
    void load(fabric::StaticColorFabric& fabric) override;
    // The whole prompt: two passes round each row's ring, then the outputs in place.
    void program(ProgramWriter& writer, int inputColor) const override;
    // After a run: each head's outputs, one tile a PE where its queries were, and the keys and
    // values back at the PEs they started at (for the decode cache).
    const std::vector<PrefillOutputTile>& outputTiles() const override { return m_outputs; }
    KernelCost closedForm() const override;
    const std::vector<PrefillOutputTile>& keyTiles() const { return m_keys; }
    const std::vector<PrefillOutputTile>& valueTiles() const { return m_values; }

private:
    // What PE (x, y) holds: its token band's first token and size (queries; the keys and values it
    // starts with), and its buffers (f32 offsets).
    struct Tile {
        std::uint32_t firstToken = 0;
        std::uint32_t tokens = 0;
        std::uint32_t query = 0;
        std::uint32_t key[2] = {}; // key[0] the input in place, key[1] the other ring buffer
        std::uint32_t value[2] = {};
        std::uint32_t scores = 0; // the widest band squared
        std::uint32_t max = 0; // per query
        std::uint32_t tileMax = 0; // per query, the second pass's scratch
        std::uint32_t sum = 0;
        std::uint32_t out = 0;
    };
    Tile& tile(int x, int y) { return m_tiles[std::size_t(y) * std::size_t(size()) + std::size_t(x)]; }
    const Tile& tile(int x, int y) const { return m_tiles[std::size_t(y) * std::size_t(size()) + std::size_t(x)]; }
    Pe at(int x, int y) const { return { m_spec.frame.x(x), m_spec.frame.y(y) }; }
    // The PE of row y whose starting keys PE (x, y) holds at step s (s ring positions further on).
    int keySource(int x, int step) const;
    // The buffer a tile is in after a round of the ring: g shifts alternate its two buffers (none
    // on one PE).
    int roundParity() const { return size() >= 2 ? size() % 2 : 0; }
    void takeInputs();
    void programPass(ProgramWriter& writer, int x, int y, bool weighted) const;
    int rowColor(int x, bool incoming) const;

    PrefillRingAttentionSpec m_spec;
    KernelContext m_context;
    PrefillGrid m_grid;
    std::vector<Tile> m_tiles; // per (y, x)
    std::vector<int> m_rowShift; // per ring edge
    std::vector<PrefillOutputTile> m_outputs;
    std::vector<PrefillOutputTile> m_keys;
    std::vector<PrefillOutputTile> m_values;
};

} // namespace waferscope::core::cyclelevel
