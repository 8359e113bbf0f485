#pragma once

#include "core/cyclelevel/decoder.h"
#include "core/cyclelevel/kernels/regionkernel.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace waferscope::core::cyclelevel {

// Decode attention with the KV cache in the region's SRAM. Query head h has frame rows
// [h R, (h + 1) R) to itself (R = rowsPerHead): row h R + r holds part r of the head's dimensions
// (partBegin's split) of its q, k and v (k and v of its kv head; the projections place them on
// the head's rows), multicast along the row, and position j of its cache lives at column j mod w.
// Each PE scores the positions it holds over its dimensions; with R > 1 each column sums its
// partial scores down the head's rows and sends the sums back up. The row reduces the max to its
// last PE, which sends it back along the row; each PE then sums its exponentials and weighted
// values, which the row reduces again; the last PE divides and sends its part of the head's output
// on. With R = 1 a row holds the whole head.
struct AttentionSpec {
    std::string name;
    Frame frame;
    int heads = 0;
    int headDim = 0;
    int rowsPerHead = 1; // R
    int capacity = 0; // positions the cache holds
    bool alibi = false; // ALiBi: each head's slope times the key's distance added to its scores
    Lanes q; // lane h R + r: part r of query head h on frame row h R + r
    Lanes k; // lane h R + r: part r of the keys of head h's kv head, on frame row h R + r
    Lanes v;
};

class AttentionKernel final : public RegionKernel {
public:
    AttentionKernel(AttentionSpec spec, const KernelContext& context);
    const AttentionSpec& spec() const { return m_spec; }
    const std::string& name() const override { return m_spec.name; }
    // Every PE of the lane's row (h R + r) takes its part of q, k and v.
    std::vector<Pe> taps(std::size_t lane) const override;
    Pe exit(std::size_t lane) const override
    {
        return { m_spec.frame.x(m_spec.frame.w - 1), m_spec.frame.y(int(lane)) };
    }
    Lanes outputLanes() const; // lane h R + r: part r of head h's output on row h R + r
    // Dimensions [begin, end) of a head that row r of its rows holds.
    std::uint32_t partBegin(int r) const;
    std::uint32_t partSize(int r) const { return partBegin(r + 1) - partBegin(r); }
    void route(RouteBook& book) override;
    void load(fabric::StaticColorFabric& fabric) override;
    // Token at `position`: takes q on colors.in, k and v on colors.keys and colors.values, appends
    // k and v to the cache and attends positions 0..position.
    void program(ProgramWriter& writer, const KernelColors& colors, std::int64_t position) const override;
    std::uint32_t resultOffset(std::size_t lane) const override { return m_result[lane]; }
    KernelCost closedForm(std::int64_t position) const override;
    // Fills the cache with positions from elsewhere (a prefill): the PE of `row` and column `u`
    // takes a stream of `laneSize` wavelets on `color` and keeps the key and then the value of
    // `position` (2 headDim values, from the `skip`th; position mod w must be u), storing them in
    // the position's slot as a token would; with no position, it only takes the stream.
    void programCacheFill(ProgramWriter& writer, int row, int u, std::optional<std::int64_t> position, int color,
        std::uint32_t laneSize, std::uint32_t skip) const;
    // The key and value the cache holds for `position` at `row` (its part of the head's), as floats.
    std::vector<float> cached(
        const fabric::StaticColorFabric& fabric, int row, std::int64_t position, bool value) const;

private:
    int rows() const { return m_spec.heads * m_spec.rowsPerHead; }
    AttentionSpec m_spec;
    KernelContext m_context;
    int m_slots = 0; // cache positions per PE
    int m_chain[2] = { -1, -1 };
    int m_back = -1;
    int m_columnChain[2] = { -1, -1 }; // R > 1: partial scores down a head's rows
    int m_columnBack = -1; // ... and their sums back up
    std::vector<std::uint32_t> m_workspace; // per (row, u)
    std::vector<std::uint32_t> m_cache; // per (row, u): f16 offset of keys, then values
    std::vector<std::uint32_t> m_result; // per row, at the exit
};

} // namespace waferscope::core::cyclelevel
