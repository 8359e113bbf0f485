#pragma once

#include "core/cyclelevel/kernels/prefillkernel.h"
#include "core/cyclelevel/kernels/routebook.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// Causal attention of a training step on the weight-streaming layout (streamgemmkernel.h: PE
// column c holds tokens [c T, (c + 1) T), a sequence's S tokens on S / T neighbouring columns, or
// S / T sequences a column): PE row h works on head h, each PE on its own tokens' queries, with
// the keys of the tokens before them passing along the row. Its scheme is described at the top
// of rowattentionkernel.cpp. Three passes, by trainops.h's contract (9, 10):
//   Forward: the key and value blocks sweep east; each PE folds them into its queries' online
//     softmax, its own block first, then the others nearest first; O and the log-sum-exp out;
//   QueryGrad: the same sweep; dQ = S(scale Σ ds k);
//   KeyGrad: each query block (q, dO, the log-sum-exp and D = dO . o) sweeps west; each PE folds
//     them into its keys' dK and dV, its own block first, then the later ones nearest first.
struct RowAttentionSpec {
    enum class Mode : std::uint8_t { Forward, QueryGrad, KeyGrad };
    std::string name;
    Frame frame; // R >= heads rows x C columns
    Mode mode = Mode::Forward;
    int tokensPerPe = 1; // T; T divides S or S divides T
    std::int64_t sequence = 1; // S
    std::int64_t heads = 1;
    std::int64_t headDim = 1; // hd
    // (C T) tokens x 3 heads hd, head-major (head h's q, k and v together): what the gather left.
    std::vector<float> qkv;
    // The backward's: O (tokens x heads hd), the log-sum-exp (tokens x heads) and dO (as O).
    std::vector<float> out;
    std::vector<float> lse;
    std::vector<float> dOut;
};

class RowAttentionKernel final : public PrefillKernel {
public:
    // Refuses (std::logic_error, naming the kernel) an empty or westward frame, fewer rows than
    // heads, a T that neither divides S nor is divided by it, and operands of other sizes.
    RowAttentionKernel(RowAttentionSpec spec, const KernelContext& context);
    const std::string& name() const override { return m_spec.name; }
    Pass pass() const override;
    void needRings(PrefillRings&) const override { }
    void useRings(const PrefillRings&) override { }
    void route(RouteBook& book);
    void load(fabric::StaticColorFabric& fabric) override;
    void program(ProgramWriter& writer, int inputColor) const override;
    // After a run, dims x tokens (dimsMajor), a tile a PE of the head rows: Forward's O (head h's
    // hd values at h hd), QueryGrad's dQ (at 3 h hd), KeyGrad's dK and dV (2 hd at 3 h hd + hd).
    const std::vector<PrefillOutputTile>& outputTiles() const override { return m_outputs; }
    // Forward's log-sum-exp: a tile of one dim (h) a PE.
    const std::vector<PrefillOutputTile>& sideTiles() const { return m_side; }
    KernelCost closedForm() const override;

    // The columns a column's sweep spans: [first, last] of its sequence (itself when a column
    // holds whole sequences).
    int segmentFirst(int c) const;
    int segmentLast(int c) const;

private:
    int rows() const { return m_spec.frame.h; }
    int columns() const { return m_spec.frame.w; }
    bool east() const { return m_spec.mode != RowAttentionSpec::Mode::KeyGrad; }
    std::uint32_t tileSize() const; // the wavelets of a block that sweeps
    std::uint32_t blockCycles() const;
    std::uint32_t finishCycles() const;
    std::uint32_t prepareCycles() const; // the backward's D

    struct Buffers {
        std::uint32_t header = 0; // f32: T, hd, S, the first token, then the offsets (rowattentionkernel.cpp)
        std::uint32_t tile = 0; // what it sends: k, v (east) or q, dO, lse, D (west)
        std::uint32_t in[2] = {}; // the blocks that come, alternately
        std::uint32_t out = 0; // dims x tokens
    };
    RowAttentionSpec m_spec;
    KernelContext m_context;
    std::vector<Buffers> m_buffers; // per (h, c)
    int m_colors[2] = { -1, -1 }; // a column of parity p sends on m_colors[p]
    std::vector<PrefillOutputTile> m_outputs;
    std::vector<PrefillOutputTile> m_side;
};

} // namespace waferscope::core::cyclelevel
