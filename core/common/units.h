#pragma once

#include <string>

namespace waferscope::core {

// Human-readable quantities for tables and tooltips, shared by the CLI and the GUI so both
// print the same figures. Three significant digits.
std::string formatSi(double value, const std::string& unit); // 1.1e9, "Hz" -> "1.10 GHz"
std::string formatBytes(double bytes); // decimal SI ("2.40 PB"); whole KiB below 1 MiB ("48 KiB")
std::string formatCount(double count); // 1.3157e9 -> "1.32 B", 125.2e6 -> "125 M"
std::string formatFixed(double value, int decimals); // 0.04321, 3 -> "0.043"
// 1.0052 -> "1.005 s", 0.0123 -> "12.300 ms", 2e-6 -> "2.00 us"; "-" when not finite.
std::string formatSeconds(double seconds);
std::string formatThousands(long long value); // 850000 -> "850,000"
// A time in a schedule as h:mm:ss, with tenths when asked (3725.46 -> "1:02:05.5"), comparable
// down a column; past 10^12 s (a hostile token budget) in seconds ("1.2e+15 s").
std::string formatClock(double seconds, bool tenths = false);

} // namespace waferscope::core
