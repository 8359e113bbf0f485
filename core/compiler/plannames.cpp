// No header of its own: defines the name tables of plan.h's enums.
// The name tables of plan.h's enums; the plan's other functions are the compiler's (compiler.cpp).
#include "core/compiler/plan.h"

namespace waferscope::core {

namespace {

constexpr EnumName<KernelPlan::Kind> kKernelKinds[]
    = { { KernelPlan::Kind::Gemv, "gemv" }, { KernelPlan::Kind::StreamedGemm, "gemm_stream" },
          { KernelPlan::Kind::Attention, "attention" }, { KernelPlan::Kind::Gather, "gather" } };

constexpr EnumName<CheckpointStrategy> kCheckpointStrategies[] = { { CheckpointStrategy::AllBlocks, "all_blocks" },
    { CheckpointStrategy::EveryK, "every_k" }, { CheckpointStrategy::MemoryX, "memoryx" } };

static_assert(inDeclarationOrder(kKernelKinds) && inDeclarationOrder(kCheckpointStrategies));
static_assert(namesUnique(kKernelKinds) && namesUnique(kCheckpointStrategies));

} // namespace

template <>
std::span<const EnumName<KernelPlan::Kind>> nameTable<KernelPlan::Kind>()
{
    return kKernelKinds;
}
template <>
std::span<const EnumName<CheckpointStrategy>> nameTable<CheckpointStrategy>()
{
    return kCheckpointStrategies;
}

const char* toString(KernelPlan::Kind kind)
{
    return nameOf(kind);
}
const char* toString(CheckpointStrategy strategy)
{
    return nameOf(strategy);
}

} // namespace waferscope::core
