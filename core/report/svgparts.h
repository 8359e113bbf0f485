#pragma once

// Pieces of the reports' SVG charts (internal to core): plain SVG text with no external
// reference of any kind, so a page opens offline and the GUI's QSvgRenderer draws the same SVG.
#include <string>
#include <utility>
#include <vector>

namespace waferscope::core::report::svg {

using Pairs = std::vector<std::pair<std::string, std::string>>;

inline constexpr const char* kAxisColour = "#4a5568";
inline constexpr const char* kGridColour = "#e2e8f0";

// SVG coordinates: at most two decimals, never an exponent, NaN or "-0".
std::string num(double value);
// Long names keep their tail: "layers.31.ffn.down" differs from its neighbours at the end.
std::string shortened(const std::string& name, std::size_t maxBytes);
// An <svg> of this size with a white background, in the reports' font.
std::string svgOpen(double width, double height);
std::string rect(double x, double y, double w, double h, const std::string& attrs, const std::string& title = "");
std::string line(double x1, double y1, double x2, double y2, const std::string& attrs);
std::string text(double x, double y, const std::string& content, const std::string& attrs = "");
std::string stroke(const char* colour, double width = 1.0);
// A chart that says why it has nothing to draw.
std::string messageSvg(const std::string& message);
// Swatch and label per entry, left to right.
std::string legend(const Pairs& labelsAndColours, double x, double y);
// Steps of 1, 2 or 5 x 10^k, so tick labels read as plain numbers.
double niceStep(double range, int targetTicks);
std::string tickLabel(double value, double step);

} // namespace waferscope::core::report::svg
