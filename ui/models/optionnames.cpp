#include "ui/models/optionnames.h"

#include <array>
#include <utility>

namespace waferscope::ui {

namespace {

template <typename Enum, std::size_t N>
using Names = std::array<std::pair<Enum, const char*>, N>;

constexpr Names<MeshOverlay, 5> kOverlays { { { MeshOverlay::Placement, "placement" },
    { MeshOverlay::Activity, "activity" }, { MeshOverlay::Sram, "sram" }, { MeshOverlay::Traffic, "traffic" },
    { MeshOverlay::Difference, "difference" } } };

// The run mode and execution names are core's (core/common/names.h), as the CLI spells them.
template <typename Enum>
QStringList coreNames()
{
    QStringList out;
    for (const std::string& name : core::allNames<Enum>())
        out << QString::fromStdString(name);
    return out;
}

template <typename Enum>
std::optional<Enum> coreValue(const QString& name)
{
    return core::fromName<Enum>(name.toStdString());
}

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
    QStringList out;
    for (const std::string& name : core::compileModeNames())
        out << QString::fromStdString(name);
    return out;
}
QString runModeName(core::RunMode mode)
{
    return QString::fromLatin1(core::toString(mode));
}
std::optional<core::RunMode> runModeFromName(const QString& name)
{
    return core::compileModeFromName(name.toStdString());
}

QStringList executionNames()
{
    return coreNames<core::ExecutionChoice>();
}
QString executionName(core::ExecutionChoice execution)
{
    return QString::fromLatin1(core::toString(execution));
}
std::optional<core::ExecutionChoice> executionFromName(const QString& name)
{
    return coreValue<core::ExecutionChoice>(name);
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
