#include "core/common/units.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace waferscope::core {

namespace {

std::string threeDigits(double value)
{
    char buffer[32];
    const double magnitude = std::fabs(value);
    const char* format = magnitude >= 100 ? "%.0f" : magnitude >= 10 ? "%.1f" : "%.2f";
    std::snprintf(buffer, sizeof buffer, format, value);
    return buffer;
}

} // namespace

std::string formatSi(double value, const std::string& unit)
{
    static constexpr struct {
        double scale;
        const char* prefix;
    } kPrefixes[] = { { 1e18, "E" }, { 1e15, "P" }, { 1e12, "T" }, { 1e9, "G" }, { 1e6, "M" }, { 1e3, "k" }, { 1, "" },
        { 1e-3, "m" }, { 1e-6, "u" }, { 1e-9, "n" } };
    if (value == 0 || !std::isfinite(value))
        return threeDigits(value) + " " + unit;
    for (const auto& prefix : kPrefixes) {
        if (std::fabs(value) >= prefix.scale * 0.9995)
            return threeDigits(value / prefix.scale) + " " + prefix.prefix + unit;
    }
    return threeDigits(value / 1e-9) + " n" + unit;
}

std::string formatBytes(double bytes)
{
    // PE-local memories are sized in powers of two and people say "48 KB" for 49,152 bytes;
    // everything system-sized is quoted in decimal units by vendors.
    if (bytes >= 1024 && bytes < 1024 * 1024 && std::fmod(bytes, 1024) == 0)
        return std::to_string(static_cast<long long>(bytes / 1024)) + " KiB";
    return formatSi(bytes, "B");
}

std::string formatCount(double count)
{
    static constexpr struct {
        double scale;
        const char* suffix;
    } kSuffixes[] = { { 1e12, " T" }, { 1e9, " B" }, { 1e6, " M" }, { 1e3, " k" } };
    for (const auto& suffix : kSuffixes) {
        if (std::fabs(count) >= suffix.scale * 0.9995)
            return threeDigits(count / suffix.scale) + suffix.suffix;
    }
    if (count == std::floor(count))
        return std::to_string(static_cast<long long>(count));
    return threeDigits(count);
}

std::string formatThousands(long long value)
{
    const std::string digits = std::to_string(value < 0 ? -value : value);
    std::string grouped = value < 0 ? "-" : "";
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0)
            grouped += ',';
        grouped += digits[i];
    }
    return grouped;
}

std::string formatFixed(double value, int decimals)
{
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
}

std::string formatSeconds(double seconds)
{
    if (!std::isfinite(seconds))
        return "-";
    if (seconds >= 1.0)
        return formatFixed(seconds, 3) + " s";
    if (seconds >= 1e-3)
        return formatFixed(seconds * 1e3, 3) + " ms";
    return formatFixed(seconds * 1e6, 2) + " us";
}

std::string formatClock(double seconds, bool tenths)
{
    char text[48];
    if (!(seconds < 1e12)) {
        std::snprintf(text, sizeof text, "%.3g s", seconds);
        return text;
    }
    const double scaled = tenths ? std::round(std::max(0.0, seconds) * 10.0) : std::floor(std::max(0.0, seconds));
    const auto whole = static_cast<long long>(tenths ? scaled / 10.0 : scaled);
    if (tenths)
        std::snprintf(text, sizeof text, "%lld:%02lld:%02lld.%lld", whole / 3600, whole / 60 % 60, whole % 60,
            static_cast<long long>(scaled) % 10);
    else
        std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", whole / 3600, whole / 60 % 60, whole % 60);
    return text;
}

} // namespace waferscope::core
