#include "core/report/reportformat.h"

#include "core/common/text.h"
#include "core/common/units.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace waferscope::core::report::cells {

namespace {

// Whether the character at i ends something that reads as a URL or an external reference.
bool breaksReference(const std::string& text, std::size_t i)
{
    static const std::string kReferences[] = { "http:", "https:", "src=", "href=", "url(", "//" };
    const std::size_t from = i >= 5 ? i - 5 : 0;
    const std::string tail = toLowerAscii(text.substr(from, i + 1 - from));
    return std::any_of(
        std::begin(kReferences), std::end(kReferences), [&](const auto& r) { return tail.ends_with(r); });
}

} // namespace

double finiteOr(double value, double fallback)
{
    return std::isfinite(value) ? value : fallback;
}

double clamp01(double value)
{
    return std::clamp(finiteOr(value), 0.0, 1.0);
}

std::string escape(const std::string& text)
{
    static const std::string kSpecial = "&<>\"'";
    static const char* const kEntities[] = { "&amp;", "&lt;", "&gt;", "&quot;", "&#39;" };
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const std::size_t special = kSpecial.find(text[i]);
        if (special != std::string::npos)
            out += kEntities[special];
        else if (breaksReference(text, i))
            out += "&#" + std::to_string(int(text[i])) + ";";
        else
            out += text[i];
    }
    return out;
}

std::string percent(double share, int decimals)
{
    return formatFixed(finiteOr(share) * 100.0, decimals) + " %";
}

std::string seconds(double value)
{
    return formatSi(finiteOr(value), "s");
}

std::string rate(double value, const std::string& unit)
{
    return formatCount(finiteOr(value)) + " " + unit;
}

std::string orDash(const std::string& text)
{
    return text.empty() ? "-" : text;
}

std::string csvField(const std::string& text)
{
    if (text.find_first_of(",\"\r\n") == std::string::npos)
        return text;
    std::string quoted = "\"";
    for (const char c : text) {
        if (c == '"')
            quoted += '"';
        quoted += c;
    }
    return quoted + "\"";
}

} // namespace waferscope::core::report::cells
