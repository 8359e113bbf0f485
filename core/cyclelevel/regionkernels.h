#pragma once

#include "core/cyclelevel/decoder.h"
#include "core/cyclelevel/programwriter.h"
#include "core/cyclelevel/routebook.h"
#include "core/cyclelevel/weights.h"
#include "core/kernels/kernelspec.h"

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace waferscope::core::cyclelevel {

// The decode kernels of one region each. A kernel is built in three passes, so that streams
// between regions can be given colors before any program names one:
//   1. construction: the geometry (which PEs take which lane of each input, which send the
//      outputs) and taps()/exits();
//   2. route(): its internal streams get colors; load(): its SRAM (weights, buffers, cache);
//   3. program(): the PE programs of one token, with the colors of its input and output streams.
// Internal streams: a kernel's reductions and multicasts inside its rectangle.

struct Pe {
    int x = 0;
    int y = 0;
};

// Numeric settings every kernel needs.
struct KernelContext {
    Storage storage = Storage::Fp16;
    int simdWidth = 8;
    std::uint8_t flags() const { return storage == Storage::Bf16 ? 1 : 0; }
    fabric::Format16 format() const
    {
        return storage == Storage::Bf16 ? fabric::Format16::Bf16 : fabric::Format16::Fp16;
    }
};

// A pre-norm fused into the region it feeds: the region's first column (u = 0), one PE per input
// lane. Each PE stores its lane, the column reduces the statistics down to its last PE, which
// broadcasts them back up; each PE then normalises its lane and sends it on.
class NormColumn {
public:
    NormColumn(std::string name, const Frame& frame, Lanes lanes, DecoderShape::Norm norm, float epsilon,
        WeightTensor weight, WeightTensor bias, const KernelContext& context);
    std::vector<Pe> taps(std::size_t lane) const { return { exit(lane) }; }
    Pe exit(std::size_t lane) const { return { m_frame.x(0), m_lanes[lane].y }; }
    const Lanes& lanes() const { return m_lanes; }
    void route(RouteBook& book);
    void load(fabric::StaticColorFabric& fabric);
    // Takes the lanes on inColor and sends the normalised ones on outColor.
    void program(ProgramWriter& writer, int inColor, int outColor) const;
    // Where the normalised lane is after a run: f32 offset at exit(lane).
    std::uint32_t resultOffset(std::size_t lane) const { return m_x[lane]; }

private:
    std::string m_name;
    Frame m_frame;
    Lanes m_lanes;
    DecoderShape::Norm m_norm;
    float m_epsilon;
    WeightTensor m_weight;
    WeightTensor m_bias;
    KernelContext m_context;
    int m_chain[2] = { -1, -1 };
    int m_broadcast = -1;
    std::vector<std::uint32_t> m_x; // per lane: f32 offset of the lane's values
    std::vector<std::uint32_t> m_stats; // per lane: partial, mean, inverse deviation
    std::vector<std::uint32_t> m_weights; // per lane: f16 offset of its weights (then biases)
};

// The colors a GEMV's program reads and writes (-1: none).
struct GemvColors {
    int in = -1;
    int side = -1;
    int out = -1;
    int weights = -1; // MoE: the routing weights, multicast to every PE of the experts
    int combineIn = -1; // Combine: the running sum from the previous expert
    int combineOut = -1; // ... to the next
};

// y = W x on a region, the input arriving in lanes along rows, the output left in lanes along
// rows: the chain-reduced GEMV of the SDK examples with a turn at the input. The region's GEMV
// columns (u >= firstColumn) are dealt to input lanes in turn: column t takes lane t mod L and,
// when several columns take one lane, an equal part of it; a region with fewer columns C than
// lanes gives column t the lanes t, t + C, t + 2C, ..., each turned onto a color of its own. A
// lane's stream passes along its row to its columns; each such PE multiplies its part and turns
// the stream onto its column, down which every PE with output rows multiplies it too. PE
// (u, row) holds W[the row's outputs, the column's inputs]; each output row's partial sums are
// reduced along the row to its last column, which applies the epilogue and sends the lane on:
// along a chain through every column (the SDK examples'), or, `treeReduced`, along a binary tree
// rooted at the last column (MeshGEMV-style, fabric::reductionTreeNode): a color a level, and a PE
// adds each level's vector whole but the last, whose sums it forwards as they are added.
struct GemvSpec {
    std::string name;
    Frame frame;
    int firstColumn = 0; // 1 when a NormColumn holds u = 0
    Lanes input; // on rows of the frame
    Lanes output; // output blocks: rows of the frame (distinct), ranges of W's rows (may repeat)
    WeightTensor weight = WeightTensor::absent(Storage::Fp16); // rows = outputs, cols = inputs
    WeightTensor bias = WeightTensor::absent(Storage::Fp16);
    Epilogue epilogue = Epilogue::Round;
    DecoderShape::Activation activation = DecoderShape::Activation::Gelu;
    double ropeTheta = 10000.0;
    // MoE: experts and the router's top k; `expert` >= 0 dispatches: the GEMV multiplies only when
    // the routing weights it receives first choose that expert, and drops its input otherwise.
    int experts = 0;
    int topK = 0;
    int expert = -1;
    bool lastExpert = false; // Combine: ends the chain
    bool treeReduced = false;
};

class GemvKernel {
public:
    GemvKernel(GemvSpec spec, const KernelContext& context);
    const GemvSpec& spec() const { return m_spec; }
    // The PEs that take input lane `lane` from its stream (its turn PEs), in flow order.
    std::vector<Pe> taps(std::size_t lane) const;
    Pe exit(std::size_t lane) const { return { m_spec.frame.x(m_spec.frame.w - 1), m_spec.output[lane].y }; }
    bool hasSideInput() const
    {
        return m_spec.epilogue == Epilogue::Residual || m_spec.epilogue == Epilogue::Gated
            || (m_spec.epilogue == Epilogue::Combine && m_spec.lastExpert);
    }
    void route(RouteBook& book);
    void load(fabric::StaticColorFabric& fabric);
    // One token at `position`. outColor < 0: the outputs stay in place (Logits: the token id
    // ends at the last output lane's exit, see argmaxAt()).
    void program(ProgramWriter& writer, int inColor, int sideColor, int outColor, std::int64_t position) const
    {
        program(writer, GemvColors { inColor, sideColor, outColor }, position);
    }
    void program(ProgramWriter& writer, const GemvColors& colors, std::int64_t position) const;
    // The PEs with work (the turns and the output rows of every column): the routing weights go to them.
    std::vector<Pe> workers() const;
    // Where the results are after a run: f32 offset of output lane `lane` at exit(lane).
    std::uint32_t resultOffset(std::size_t lane) const { return m_result[lane]; }
    // Logits: the PE and f32 offset holding (best logit, token id bits) after the reduction.
    Pe argmaxPe() const { return exit(m_spec.output.size() - 1); }
    std::uint32_t argmaxOffset() const { return m_pair[m_spec.output.size() - 1]; }
    // Route: the f32 offset at exit(0) of the token's routing weights (zero for experts not chosen).
    std::uint32_t routingOffset() const { return m_weightsAt.front(); }

private:
    int gemvColumns() const { return m_spec.frame.w - m_spec.firstColumn; }
    // What column t multiplies: lanes, each with its elements [skip, skip + use) and the index
    // of its turn color.
    struct Share {
        std::size_t lane = 0;
        std::uint32_t skip = 0;
        std::uint32_t use = 0;
        std::size_t turn = 0;
    };
    std::vector<Share> sharesOf(int t) const;
    // The output block on row `row` of the frame, or -1.
    int outputAt(int row) const;

    GemvSpec m_spec;
    KernelContext m_context;
    std::vector<int> m_column; // per turn index: the turned multicast down the columns
    int m_firstRow = 0; // the output rows' span in the frame
    int m_lastRow = 0;
    int m_chain[2] = { -1, -1 };
    std::vector<int> m_tree; // treeReduced: the color of each level
    int m_argmax = -1; // Logits: down the last column
    std::vector<int> m_rowOutput; // per frame row: output block index or -1
    std::vector<std::int32_t> m_acc; // per (t, output block): f32 accumulator offset
    std::vector<std::int32_t> m_block; // per (t, output block): f16 weight blocks, one per share
    std::vector<std::uint32_t> m_result; // per output block: f32 result at the exit
    std::vector<std::uint32_t> m_side; // per output block: f32 side input at the exit
    std::vector<std::uint32_t> m_biasAt; // per output block: f16 bias at the exit
    std::vector<std::uint32_t> m_pair; // Logits: per output block, (value, id) and the incoming pair after it
    std::vector<std::uint32_t> m_weightsAt; // dispatch: per worker (workers() order), the routing weights
    std::vector<std::uint32_t> m_combine; // Combine: per output block, the weighted output at the exit
    // A column keeps its share's lane in SRAM and multiplies its part once the lane has passed
    // when the lane is split over several columns (so the parts multiply side by side rather
    // than one after the other at the lane's pace), and for dispatch.
    bool buffered(const Share& share) const
    {
        return m_spec.expert >= 0 || share.use < m_spec.input[share.lane].size();
    }
    std::map<std::tuple<int, int, int>, std::uint32_t> m_buffer; // per (x, y, turn) the lane kept
};

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

class AttentionKernel {
public:
    AttentionKernel(AttentionSpec spec, const KernelContext& context);
    const AttentionSpec& spec() const { return m_spec; }
    // Every PE of the lane's row (h R + r) takes its part of q, k and v.
    std::vector<Pe> taps(std::size_t lane) const;
    Pe exit(std::size_t lane) const { return { m_spec.frame.x(m_spec.frame.w - 1), m_spec.frame.y(int(lane)) }; }
    Lanes outputLanes() const; // lane h R + r: part r of head h's output on row h R + r
    // Dimensions [begin, end) of a head that row r of its rows holds.
    std::uint32_t partBegin(int r) const;
    std::uint32_t partSize(int r) const { return partBegin(r + 1) - partBegin(r); }
    void route(RouteBook& book);
    void load(fabric::StaticColorFabric& fabric);
    // Token at `position`: appends its k and v to the cache and attends positions 0..position.
    void program(ProgramWriter& writer, int qColor, int kColor, int vColor, int outColor, std::int64_t position) const;
    std::uint32_t resultOffset(std::size_t lane) const { return m_result[lane]; }

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

// The token embedding (and a learned position embedding) over the region's PEs. Output lane i
// (a block of the hidden vector) is served by the columns [blockBegin(w, L, i), ..(i + 1)) of
// every row: each of those PEs holds the lane's block of an equal share of the vocabulary rows
// (and of the position rows). The token id enters at the root (frame PE (0, 0)) and is multicast
// to every PE; each PE contributes its row of the token (and of the position) if it holds it,
// else zeros, and the group's chain (a serpentine over its rows) sums the contributions: exactly
// the one or two non-zero rows. The chain's last PE rounds the sum and sends the lane on.
struct EmbeddingSpec {
    std::string name;
    Frame frame;
    Lanes lanes; // the element ranges of the output lanes (their rows are the consumer's)
    WeightTensor token = WeightTensor::absent(Storage::Fp16); // vocab x hidden
    WeightTensor position = WeightTensor::absent(Storage::Fp16); // positions x hidden, or absent
};

class EmbeddingKernel {
public:
    EmbeddingKernel(EmbeddingSpec spec, const KernelContext& context);
    Pe root() const { return { m_spec.frame.x(0), m_spec.frame.y(0) }; }
    Pe exit(std::size_t lane) const { return m_chains[lane].back(); }
    void route(RouteBook& book);
    void load(fabric::StaticColorFabric& fabric);
    // tokenColor: the stream that brings the token id to the root. position: of the token.
    void program(ProgramWriter& writer, int tokenColor, int outColor, std::int64_t position) const;
    std::uint32_t resultOffset(std::size_t lane) const;

private:
    EmbeddingSpec m_spec;
    KernelContext m_context;
    std::vector<std::vector<Pe>> m_chains; // per lane, in chain order
    int m_broadcast = -1;
    int m_chain[2] = { -1, -1 };
    std::vector<std::vector<std::uint32_t>> m_out; // per lane and chain PE: f32 contribution
    std::vector<std::vector<std::uint32_t>> m_meta; // per lane and chain PE: constants (computesteps)
};

} // namespace waferscope::core::cyclelevel
