#pragma once

// The decode kernels the cycle-level run (core/cyclelevel) places on a language model's
// inference plan, region by region, in closed form. The model-level engine times a decode token
// with them; the cycle-level builder takes its lane counts from here, so both see one layout.
//
// The layout: the hidden vector travels between regions as `hiddenLanes` lanes, a row each from
// the top of a block's strip; a GEMV whose input is the hidden vector turns up to kTurnColors of
// its lanes down each column; a norm fused in front of a GEMV is the region's first column.
// Attention keeps a row per query head (in a stacked plan's tall regions, `rowsPerHead` rows, each
// a part of the head's dimensions, and q's region also computes k and v); the feed-forward's
// inner values travel as `ffnLanes` lanes; an MoE experts region is split into one piece per
// expert projection.
#include "core/compiler/plan.h"
#include "core/engine/costmodel.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace waferscope::core::engine {

constexpr int kTurnColors = 6; // input lanes a GEMV column turns down at most

// The layout is a causal language model's, the stack that decodes: the blocks of the "decoder"
// stack and the ops outside every stack (its embedding, final norm and head). A DPO reference
// copy, a vision tower or an encoder is placed but has no decode kernels. A model with cross-
// attention (an encoder-decoder) has no decode layout: it has no kernel for cross-attention.
bool inDecodedStack(const Op& op);
bool hasDecodeLayout(const ModelGraph& graph);

struct DecodeRegionCost {
    KernelCost cost;
    RegionKernelKind kernel = RegionKernelKind::Gemv;
    double leadCycles = 0.0; // from its start until its input passes on to the ops beside it: its norm
};

// Thread: one caller at a time (costs are cached as they are asked for).
class DecodeRegions {
public:
    DecodeRegions(const ModelGraph& graph, const ExecutionPlan& plan, const SystemSpec& system);

    // Lanes of the hidden vector on wafer `system` (0 when the plan has no decoder layout there).
    int hiddenLanes(int system) const;
    // Lanes of the feed-forward's inner values in block `layer`.
    int ffnLanes(int layer) const;
    // Rows a query head of block `layer` has, each a part of its dimensions (AttentionSpec::
    // rowsPerHead): 1 but in a stacked plan, where heads x rows fit the attention region's rows and
    // the lanes the output projection's columns can take.
    int rowsPerHead(int layer) const;
    // The region's decode kernel for a token at `position` (it attends positions 0..position),
    // or nullopt for an op without one.
    std::optional<DecodeRegionCost> cost(const Region& region, std::int64_t position) const;
    // Cycles from `from`'s outputs being final to their first wavelets at `to`, both regions with
    // decode kernels on one wafer, one after the other: nothing within a strip (the next region
    // starts where the last ends); into the next strip, the lanes turn: out along their rows to
    // columns of their own (up to a lane each), down to the strip's rows, relayed (a few cycles),
    // back along the rows (straight down from the embedding).
    double handOffCycles(const Region& from, const Region& to) const;
    // Cycles for the LM head's argmax to reach the embedding's first PE as the next token's id
    // (a hop a cycle), when both are on one wafer; 0 otherwise.
    double feedbackCycles() const;

private:
    // The region of the op with `role` in block `layer` (-1: outside the blocks), replica 0.
    const Region* find(OpRole role, int layer = -1) const;
    int pieces() const; // of an MoE experts region
    int sharedPieces() const; // of its shared experts region

    const ModelGraph& m_graph;
    int m_simd = 8;
    bool m_stacked = false; // stacked tiers: heads split over the rows of their tall regions
    bool m_layout = false; // hasDecodeLayout(graph)
    std::optional<DecodeRegionCost> compute(const Region& region, std::int64_t position) const;

    std::map<std::pair<int, OpRole>, const Region*> m_byRole; // by (block or -1, role)
    std::vector<int> m_hiddenLanes; // by system
    std::vector<int> m_rowsPerHead; // by layer
    // Costs by what they depend on (the op's role, the region's size, the lanes, the rows per head,
    // the ops fused in, the position): a model's blocks repeat one shape, and a deep model has
    // tens of thousands of regions.
    using Key = std::tuple<OpRole, int, int, int, int, int, int, bool, std::int64_t>;
    mutable std::map<Key, std::optional<DecodeRegionCost>> m_costs;
};

} // namespace waferscope::core::engine
