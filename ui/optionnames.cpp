#include "ui/optionnames.h"

#include <array>
#include <utility>

namespace waferscope::ui {

namespace {

template <typename Enum, std::size_t N>
using Names = std::array<std::pair<Enum, const char*>, N>;

constexpr Names<core::RunMode, 2> kModes { { { core::RunMode::Train, "train" },
    { core::RunMode::Inference, "inference" } } };
constexpr Names<core::ExecutionChoice, 3> kExecutions { { { core::ExecutionChoice::Auto, "auto" },
    { core::ExecutionChoice::Pipelined, "pipelined" },
    { core::ExecutionChoice::WeightStreaming, "weight_streaming" } } };
constexpr Names<MeshOverlay, 5> kOverlays { { { MeshOverlay::Placement, "placement" },
    { MeshOverlay::Activity, "activity" }, { MeshOverlay::Sram, "sram" }, { MeshOverlay::Traffic, "traffic" },
    { MeshOverlay::Difference, "difference" } } };

template <typename Enum, std::size_t N>
QStringList all(const Names<Enum, N>& names)
{
    QStringList out;
    for (const auto& [value, name] : names)
        out << QString::fromLatin1(name);
    return out;
}

template <typename Enum, std::size_t N>
QString nameOf(const Names<Enum, N>& names, Enum value)
{
    for (const auto& [key, name] : names)
        if (key == value)
            return QString::fromLatin1(name);
    return {};
}

template <typename Enum, std::size_t N>
std::optional<Enum> valueOf(const Names<Enum, N>& names, const QString& name)
{
    for (const auto& [key, text] : names)
        if (name == QLatin1String(text))
            return key;
    return std::nullopt;
}

} // namespace

QString executionModeLabel(core::ExecutionMode mode)
{
    return QString::fromLatin1(core::toString(mode)).replace(QLatin1Char('_'), QLatin1Char(' '));
}

QStringList runModeNames()
{
    return all(kModes);
}
QString runModeName(core::RunMode mode)
{
    return nameOf(kModes, mode);
}
std::optional<core::RunMode> runModeFromName(const QString& name)
{
    return valueOf(kModes, name);
}

QStringList executionNames()
{
    return all(kExecutions);
}
QString executionName(core::ExecutionChoice execution)
{
    return nameOf(kExecutions, execution);
}
std::optional<core::ExecutionChoice> executionFromName(const QString& name)
{
    return valueOf(kExecutions, name);
}

QStringList overlayNames()
{
    return all(kOverlays);
}
QString overlayName(MeshOverlay overlay)
{
    return nameOf(kOverlays, overlay);
}
std::optional<MeshOverlay> overlayFromName(const QString& name)
{
    return valueOf(kOverlays, name);
}

} // namespace waferscope::ui
