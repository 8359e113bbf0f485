#include "core/kernels/kernelspec.h"

#include <cstddef>
#include <iterator>

namespace waferscope::core {

namespace {

constexpr EnumName<RegionKernelKind> kRegionKernelKinds[]
    = { { RegionKernelKind::Embedding, "embedding" }, { RegionKernelKind::NormGemv, "norm+gemv" },
          { RegionKernelKind::Gemv, "gemv" }, { RegionKernelKind::Attention, "attention" },
          { RegionKernelKind::Experts, "experts" }, { RegionKernelKind::LmHead, "lm_head" } };

constexpr bool inDeclarationOrder()
{
    for (std::size_t i = 0; i < std::size(kRegionKernelKinds); ++i)
        if (std::size_t(kRegionKernelKinds[i].value) != i)
            return false;
    return true;
}
static_assert(inDeclarationOrder());

} // namespace

template <>
std::span<const EnumName<RegionKernelKind>> nameTable<RegionKernelKind>()
{
    return kRegionKernelKinds;
}

const char* toString(RegionKernelKind kind)
{
    const auto index = std::size_t(kind);
    return index < std::size(kRegionKernelKinds) ? kRegionKernelKinds[index].name : "";
}

} // namespace waferscope::core
