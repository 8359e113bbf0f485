// The name tables of the engine's enums (calibration.h).
#include "core/engine/calibration.h"

namespace waferscope::core {

namespace {

constexpr EnumName<engine::GemvReduction> kGemvReductions[]
    = { { engine::GemvReduction::Chain, "chain_reduced" }, { engine::GemvReduction::Tree, "tree_reduced" } };

constexpr EnumName<engine::RegionSizing> kRegionSizings[]
    = { { engine::RegionSizing::ByWeights, "by_weights" }, { engine::RegionSizing::Stacked, "stacked" } };

constexpr EnumName<engine::SpeculativeDecoding> kSpeculativeDecodings[]
    = { { engine::SpeculativeDecoding::Off, "off" }, { engine::SpeculativeDecoding::DraftModel, "draft_model" } };

static_assert(inDeclarationOrder(kGemvReductions) && inDeclarationOrder(kRegionSizings)
    && inDeclarationOrder(kSpeculativeDecodings));
static_assert(namesUnique(kGemvReductions) && namesUnique(kRegionSizings) && namesUnique(kSpeculativeDecodings));

} // namespace

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

} // namespace waferscope::core
