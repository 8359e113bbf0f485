// Pieces of the reports' SVG charts.
#include "core/report/svgparts.h"

#include "core/common/units.h"
#include "core/report/reportformat.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace waferscope::core::report::svg {

using namespace cells;

std::string num(double value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.2f", std::clamp(finiteOr(value), -1e7, 1e7));
    std::string text = buffer;
    while (text.back() == '0')
        text.pop_back();
    if (text.back() == '.')
        text.pop_back();
    return text == "-0" ? "0" : text;
}

std::string shortened(const std::string& name, std::size_t maxBytes)
{
    if (name.size() <= maxBytes)
        return name;
    std::size_t cut = name.size() - (maxBytes - 3);
    while (cut < name.size() && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80)
        ++cut;
    return "..." + name.substr(cut);
}

std::string svgOpen(double width, double height)
{
    const std::string w = num(width), h = num(height);
    return "<svg viewBox=\"0 0 " + w + " " + h + "\" width=\"" + w + "\" height=\"" + h
        + "\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"11\" fill=\"#1a202c\">"
        + "<rect x=\"0\" y=\"0\" width=\"" + w + "\" height=\"" + h + "\" fill=\"#ffffff\"/>";
}

std::string rect(double x, double y, double w, double h, const std::string& attrs, const std::string& title)
{
    std::string s = "<rect " + attrs + " x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(std::max(w, 0.0))
        + "\" height=\"" + num(std::max(h, 0.0)) + "\"";
    if (title.empty())
        return s + "/>";
    return s + "><title>" + escape(title) + "</title></rect>";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& attrs)
{
    return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\" " + attrs
        + "/>";
}

std::string text(double x, double y, const std::string& content, const std::string& attrs)
{
    return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\"" + (attrs.empty() ? "" : " " + attrs) + ">"
        + escape(content) + "</text>";
}

std::string stroke(const char* colour, double width)
{
    return std::string("stroke=\"") + colour + "\" stroke-width=\"" + num(width) + "\"";
}

std::string messageSvg(const std::string& message)
{
    return svgOpen(720, 60) + text(20, 34, message, "font-size=\"12\"") + "</svg>";
}

std::string legend(const Pairs& labelsAndColours, double x, double y)
{
    std::string svg;
    for (const auto& [label, colour] : labelsAndColours) {
        svg += rect(x, y - 9, 10, 10, "fill=\"" + colour + "\" " + stroke(kAxisColour, 0.5));
        svg += text(x + 14, y, label);
        x += 26 + 6.5 * double(label.size());
    }
    return svg;
}

double niceStep(double range, int targetTicks)
{
    const double raw = range / targetTicks;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    const double r = raw / magnitude;
    return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * magnitude;
}

std::string tickLabel(double value, double step)
{
    return formatFixed(value, std::clamp(int(-std::floor(std::log10(step) + 1e-9)), 0, 9));
}

} // namespace waferscope::core::report::svg
