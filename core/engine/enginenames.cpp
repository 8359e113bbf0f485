// No header of its own: defines the name tables of engine.h's and calibration.h's enums.
// The name tables of the engine's enums (engine.h, calibration.h); engine.cpp dispatches runs.
#include "core/engine/calibration.h"
#include "core/engine/engine.h"

#include <vector>

namespace waferscope::core {

namespace {

using engine::LaneKind;
using engine::LayerKind;
using engine::Phase;

constexpr EnumName<LaneKind> kLaneKinds[]
    = { { LaneKind::MemoryX, "memoryx" }, { LaneKind::SwarmX, "swarmx" }, { LaneKind::CsxIo, "csx_io" },
          { LaneKind::CsxCompute, "csx" }, { LaneKind::Region, "region" }, { LaneKind::WaferLink, "wafer_link" } };

constexpr EnumName<Phase> kPhases[] = { { Phase::StreamIn, "stream_in" }, { Phase::Forward, "forward" },
    { Phase::BackwardDelta, "backward_delta" }, { Phase::BackwardGradient, "backward_gradient" },
    { Phase::GradientOut, "gradient_out" }, { Phase::Reduce, "reduce" }, { Phase::OptimizerUpdate, "optimizer_update" },
    { Phase::Prefill, "prefill" }, { Phase::Decode, "decode" }, { Phase::CheckpointOut, "checkpoint_out" },
    { Phase::CheckpointIn, "checkpoint_in" }, { Phase::FlashStreamIn, "flash_stream_in" } };

constexpr EnumName<engine::GemvReduction> kGemvReductions[]
    = { { engine::GemvReduction::Chain, "chain_reduced" }, { engine::GemvReduction::Tree, "tree_reduced" } };

constexpr EnumName<engine::RegionSizing> kRegionSizings[]
    = { { engine::RegionSizing::ByWeights, "by_weights" }, { engine::RegionSizing::Stacked, "stacked" } };

constexpr EnumName<engine::SpeculativeDecoding> kSpeculativeDecodings[]
    = { { engine::SpeculativeDecoding::Off, "off" }, { engine::SpeculativeDecoding::DraftModel, "draft_model" } };

static_assert(inDeclarationOrder(kLaneKinds) && inDeclarationOrder(kPhases) && inDeclarationOrder(kGemvReductions)
    && inDeclarationOrder(kRegionSizings) && inDeclarationOrder(kSpeculativeDecodings));
static_assert(namesUnique(kLaneKinds) && namesUnique(kPhases) && namesUnique(kGemvReductions)
    && namesUnique(kRegionSizings) && namesUnique(kSpeculativeDecodings));

// LayerKind repeats Op::Kind's values: a kind added to one and not the other fails here (or, added
// after Upsampling, in the name table's order test, tests/core/common/test_names.cpp).
static_assert(engine::layerKindOf(Op::Kind::Embedding) == LayerKind::Embedding
    && engine::layerKindOf(Op::Kind::PositionEmbedding) == LayerKind::PositionEmbedding
    && engine::layerKindOf(Op::Kind::Norm) == LayerKind::Norm
    && engine::layerKindOf(Op::Kind::Linear) == LayerKind::Linear
    && engine::layerKindOf(Op::Kind::AttentionCore) == LayerKind::AttentionCore
    && engine::layerKindOf(Op::Kind::Activation) == LayerKind::Activation
    && engine::layerKindOf(Op::Kind::MoeRouter) == LayerKind::MoeRouter
    && engine::layerKindOf(Op::Kind::Experts) == LayerKind::Experts
    && engine::layerKindOf(Op::Kind::LmHead) == LayerKind::LmHead
    && engine::layerKindOf(Op::Kind::Pooler) == LayerKind::Pooler
    && engine::layerKindOf(Op::Kind::Loss) == LayerKind::Loss
    && engine::layerKindOf(Op::Kind::PatchEmbedding) == LayerKind::PatchEmbedding
    && engine::layerKindOf(Op::Kind::Convolution) == LayerKind::Convolution
    && engine::layerKindOf(Op::Kind::Pooling) == LayerKind::Pooling
    && engine::layerKindOf(Op::Kind::Upsampling) == LayerKind::Upsampling);

// An op's layer is named as its op kind is (one table, Op::Kind's); the engine's own two follow.
std::vector<EnumName<LayerKind>> layerKindNames()
{
    std::vector<EnumName<LayerKind>> names;
    for (const EnumName<Op::Kind>& op : nameTable<Op::Kind>())
        names.push_back({ engine::layerKindOf(op.value), op.name });
    names.push_back({ LayerKind::WaferLink, "wafer_link" });
    names.push_back({ LayerKind::GradientReduction, "gradient_reduction" });
    return names;
}

} // namespace

template <>
std::span<const EnumName<LaneKind>> nameTable<LaneKind>()
{
    return kLaneKinds;
}
template <>
std::span<const EnumName<Phase>> nameTable<Phase>()
{
    return kPhases;
}
template <>
std::span<const EnumName<LayerKind>> nameTable<LayerKind>()
{
    static const std::vector<EnumName<LayerKind>> names = layerKindNames(); // constant once built
    return names;
}
template <>
std::span<const EnumName<engine::GemvReduction>> nameTable<engine::GemvReduction>()
{
    return kGemvReductions;
}
template <>
std::span<const EnumName<engine::RegionSizing>> nameTable<engine::RegionSizing>()
{
    return kRegionSizings;
}
template <>
std::span<const EnumName<engine::SpeculativeDecoding>> nameTable<engine::SpeculativeDecoding>()
{
    return kSpeculativeDecodings;
}

namespace engine {

const char* toString(LaneKind kind)
{
    return nameOf(kind);
}
const char* toString(Phase phase)
{
    return nameOf(phase);
}
const char* toString(LayerKind kind)
{
    return nameOf(kind);
}

} // namespace engine

} // namespace waferscope::core
