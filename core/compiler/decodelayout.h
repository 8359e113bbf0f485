#pragma once

// The decode kernels' layout on an inference plan: how many lanes the hidden vector travels in
// on each wafer, the feed-forward's inner values in each block, and the rows each query head has.
// It is a placement decision, made once by the compiler from the regions it placed, and read by
// both the decode regions' closed forms (core/compiler/decoderegions.h), which the model-level
// engine times a token with, and the cycle-level decoder
// (core/cyclelevel/waferdecoder.h), so that both time and build one layout.
//
// The hidden vector travels between regions as lanes, a row each from the top of a block's strip;
// a GEMV whose input is the hidden vector turns up to kTurnColors of its lanes down each column; a
// norm fused in front of a GEMV is the region's first column; an MoE experts region is split into
// one piece per expert projection.

#include "core/compiler/plan.h"
#include "core/kernels/kernelcost.h"
#include "core/kernels/kernelspec.h"
#include "core/model/modelgraph.h"

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace waferscope::core {

// The stack that decodes: the blocks of the "decoder" stack and the ops outside every stack (its
// embedding, final norm and head). A DPO reference copy, a vision tower or an encoder is placed
// but has no decode kernels.
bool inDecodedStack(const Op& op);
// A model with cross-attention (an encoder-decoder) has no decode layout: there is no kernel for
// cross-attention.
bool hasDecodeLayout(const ModelGraph& graph);

// The regions of the decoded stack's ops by block (-1 outside the blocks) and role, replica 0;
// empty for a model without a decode layout.
class DecodeRegionIndex {
public:
    DecodeRegionIndex(const ModelGraph& graph, const ExecutionPlan& plan);
    const Region* find(OpRole role, int layer = -1) const;
    const std::map<std::pair<int, OpRole>, const Region*>& all() const { return m_byRole; }

private:
    std::map<std::pair<int, OpRole>, const Region*> m_byRole;
};

// A head's width (the attention's inner width over the heads), and whether the feed-forward is
// gated (an up, a gate and a down projection): the shapes the layout and the decode kernels use.
std::int64_t decodeHeadDim(const ModelConfig& config);
bool gatedFfn(const ModelConfig& config);

// Pieces of an MoE experts region (an up, a down and, gated, a gate projection per expert), and
// of its shared experts region.
int expertPieces(const ModelConfig& config);
int sharedExpertPieces(const ModelConfig& config);

// The layout of `plan` (ExecutionPlan::decodeLayout): lanes bounded by every region a lane passes
// (a row each in a block's strip, a turn of at most kTurnColors down each GEMV column that takes
// the hidden vector, the norm column aside, a chain each in the embedding); none when the plan is
// not an inference plan of a model with a decode layout.
DecodeLayout decodeLayoutOf(const ModelGraph& graph, const ExecutionPlan& plan);
// plan.decodeLayout, or (a plan made by hand, without one) decodeLayoutOf(graph, plan).
DecodeLayout decodeLayoutFor(const ModelGraph& graph, const ExecutionPlan& plan);

// `count` lanes of `total` elements dealt as evenly as they go, on rows 0..count-1 of a region.
std::vector<DecodeLane> decodeLanes(int count, std::int64_t total);

// A decode region's GEMV as the plan lays it out, rows counted from the region's top: whether a
// norm runs first (in the region's first column, or before the GEMV on a region of one column),
// the lanes it takes and gives, what it does at its exits, and its kernel. The engine times it
// (DecodeRegions) and the cycle-level builder (core/cyclelevel/waferdecoderbuilder.cpp) builds it
// from this one description; nullopt for a region that runs no GEMV of its own (the embedding,
// the attention, the experts) or whose layout has no lanes.
struct DecodeGemvPlan {
    RegionKernelKind kernel = RegionKernelKind::Gemv;
    bool normed = false;
    int firstColumn = 0;
    std::vector<DecodeLane> input;
    std::vector<DecodeLane> output;
    Epilogue epilogue = Epilogue::Round;
};
std::optional<DecodeGemvPlan> decodeGemvPlan(const ModelGraph& graph, const DecodeLayout& layout, const Region& region);

} // namespace waferscope::core
