#pragma once

// The decode kernels of a language model's inference plan, region by region, in closed form: each
// region's kernel spec from the plan, and its cost by the kernel's own closed form (core/kernels).
// The model-level engine times a decode token with them, and engine::compileFor chooses a
// region's GEMV reduction by them. The layout they run on (lanes, rows per head) is the plan's
// (core/compiler/decodelayout.h), which the cycle-level builder (core/cyclelevel) builds too, so
// both see one layout. Attention keeps a row per query head (in
// a stacked plan's tall regions, `rowsPerHead` rows, each a part of the head's dimensions, and
// q's region also computes k and v).
#include "core/compiler/decodelayout.h"
#include "core/compiler/plan.h"
#include "core/hardware/systemspec.h"
#include "core/kernels/attention.h"
#include "core/kernels/embedding.h"
#include "core/kernels/experts.h"
#include "core/kernels/gemv.h"
#include "core/kernels/kernelcost.h"
#include "core/kernels/kernelspec.h"
#include "core/kernels/norm.h"
#include "core/model/modelgraph.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace waferscope::core {

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
    const ModelGraph& m_graph;
    int m_simd = 8;
    DecodeLayout m_layout; // the plan's (core/compiler/decodelayout.h)
    DecodeRegionIndex m_index;
    std::optional<DecodeRegionCost> compute(const Region& region, std::int64_t position) const;

    // Costs by what they depend on (the op's role, the region's size, the lanes, the rows per head,
    // the ops fused in, the position): a model's blocks repeat one shape, and a deep model has
    // tens of thousands of regions.
    using Key = std::tuple<OpRole, int, int, int, int, int, int, bool, std::int64_t>;
    mutable std::map<Key, std::optional<DecodeRegionCost>> m_costs;
};

} // namespace waferscope::core
