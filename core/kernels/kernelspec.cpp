#include "core/kernels/kernelspec.h"
#include "core/kernels/weightsource.h"

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

constexpr EnumName<Activation> kActivations[] = { { Activation::Gelu, "gelu" }, { Activation::Relu, "relu" },
    { Activation::Silu, "silu" }, { Activation::SwiGlu, "swiglu" }, { Activation::GeGlu, "geglu" } };
static_assert(inDeclarationOrder(kActivations) && namesUnique(kActivations));

constexpr EnumName<Storage> kStorages[] = { { Storage::Fp16, "fp16" }, { Storage::Bf16, "bf16" } };
static_assert(inDeclarationOrder(kStorages) && namesUnique(kStorages));

constexpr EnumName<Pass> kPasses[] = { { Pass::Forward, "forward" }, { Pass::BackwardDelta, "backward_delta" },
    { Pass::BackwardGradient, "backward_gradient" } };
static_assert(inDeclarationOrder(kPasses) && namesUnique(kPasses));

} // namespace

template <>
std::span<const EnumName<Activation>> nameTable<Activation>()
{
    return kActivations;
}

template <>
std::span<const EnumName<Storage>> nameTable<Storage>()
{
    return kStorages;
}

template <>
std::span<const EnumName<Pass>> nameTable<Pass>()
{
    return kPasses;
}

const char* toString(Activation activation)
{
    return nameOf(activation);
}

const char* toString(Storage storage)
{
    return nameOf(storage);
}

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
