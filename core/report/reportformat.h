#pragma once

#include <string>

// How a report writes its cells and its markup, shared by the report document, its charts, its
// HTML page and its CSV files (internal to core/report).
namespace waferscope::core::report::cells {

double finiteOr(double value, double fallback = 0.0);
double clamp01(double value);
// Markup-safe text (HTML and SVG). Names and paths come from user files: besides markup, anything
// that would read as a URL or an external reference is broken up with a character reference, so
// a page is self-contained by construction and not only for well-behaved inputs.
std::string escape(const std::string& text);
std::string percent(double share, int decimals = 1); // "12.5 %"
std::string seconds(double value); // SI: "3.2 ms"
std::string rate(double value, const std::string& unit); // "1,234 samples/s"
std::string orDash(const std::string& text); // "-" for nothing
// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled.
std::string csvField(const std::string& text);

} // namespace waferscope::core::report::cells
