#include "core/common/names.h"

#include <cstddef>

namespace waferscope::core {

namespace {

constexpr EnumName<RunMode> kRunModes[]
    = { { RunMode::Train, "train" }, { RunMode::Eval, "eval" }, { RunMode::Inference, "inference" } };

constexpr EnumName<ExecutionChoice> kExecutionChoices[] = { { ExecutionChoice::Auto, "auto" },
    { ExecutionChoice::Pipelined, "pipelined" }, { ExecutionChoice::WeightStreaming, "weight_streaming" } };

constexpr EnumName<ExecutionMode> kExecutionModes[] = { { ExecutionMode::Pipelined, "pipelined" },
    { ExecutionMode::WeightStreaming, "weight_streaming" }, { ExecutionMode::Inference, "inference" } };

constexpr EnumName<Bound> kBounds[] = { { Bound::None, "" }, { Bound::Compute, "compute" }, { Bound::Fabric, "fabric" },
    { Bound::Io, "io" }, { Bound::Latency, "latency" }, { Bound::MemoryX, "memoryx" }, { Bound::Pipeline, "pipeline" },
    { Bound::SwarmX, "swarmx" } };

// Each table lists every value once, at the index of its value, so toString is an index.
static_assert(inDeclarationOrder(kRunModes) && inDeclarationOrder(kExecutionChoices)
    && inDeclarationOrder(kExecutionModes) && inDeclarationOrder(kBounds));
static_assert(
    namesUnique(kRunModes) && namesUnique(kExecutionChoices) && namesUnique(kExecutionModes) && namesUnique(kBounds));

// Bound's names ascend, so maps keyed by Bound iterate in name order (see names.h).
constexpr bool namesAscend()
{
    for (std::size_t i = 1; i < std::size(kBounds); ++i)
        if (!(std::string_view(kBounds[i - 1].name) < std::string_view(kBounds[i].name)))
            return false;
    return true;
}
static_assert(namesAscend());

template <typename Enum, std::size_t N>
const char* nameIn(const EnumName<Enum> (&table)[N], Enum value)
{
    const auto index = std::size_t(value);
    return index < N ? table[index].name : "";
}

} // namespace

template <>
std::span<const EnumName<RunMode>> nameTable<RunMode>()
{
    return kRunModes;
}
template <>
std::span<const EnumName<ExecutionChoice>> nameTable<ExecutionChoice>()
{
    return kExecutionChoices;
}
template <>
std::span<const EnumName<ExecutionMode>> nameTable<ExecutionMode>()
{
    return kExecutionModes;
}
template <>
std::span<const EnumName<Bound>> nameTable<Bound>()
{
    return kBounds;
}

const char* toString(RunMode mode)
{
    return nameIn(kRunModes, mode);
}
const char* toString(ExecutionChoice execution)
{
    return nameIn(kExecutionChoices, execution);
}
const char* toString(ExecutionMode mode)
{
    return nameIn(kExecutionModes, mode);
}
const char* toString(Bound bound)
{
    return nameIn(kBounds, bound);
}

std::vector<std::string> compileModeNames()
{
    return { toString(RunMode::Train), toString(RunMode::Inference) };
}

std::optional<RunMode> compileModeFromName(std::string_view name)
{
    const std::optional<RunMode> mode = fromName<RunMode>(name);
    if (mode && compileModeFor(*mode) == *mode)
        return mode;
    return std::nullopt;
}

std::string choiceList(const std::vector<std::string>& names)
{
    std::string text;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0)
            text += i + 1 == names.size() ? " or " : ", ";
        text += names[i];
    }
    return text;
}

} // namespace waferscope::core
