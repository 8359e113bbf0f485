// The report reader against hostile input (inputs from fuzz_report and review): numbers
// beyond a double, deep nesting, wide objects, out-of-range integers, NUL bytes, and the nulls the
// writer uses for values that are not finite.
#include "testing.h"

#include "core/report/runreport.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

using namespace waferscope::core;

WS_TEST(reportReaderLocatesANumberBeyondADouble)
{
    // nlohmann throws out_of_range, not parse_error, for "1e999": it used to escape the reader
    // and abort `waferscope-cli compare` (found by fuzz_report).
    const Expected<report::RunReport> read = report::reportFromJson("{\n  \"report_version\": 1e999\n}\n", "r.json");
    WS_REQUIRE(!read.hasValue());
    WS_CHECK_EQ(read.error().line, 2);
    WS_CHECK_EQ(read.error().column, 21); // after `  "report_version": ` (20 bytes)
    WS_CHECK_CONTAINS(read.error().message, "1e999");
}

WS_TEST(reportReaderRefusesDeepNestingAtTheFirstBracketTooDeep)
{
    // 200,000 nested arrays (400 KB) used to take gigabytes in JsonLocator.
    const std::size_t depth = 200'000;
    const std::string text = "{\"timeline\": " + std::string(depth, '[') + std::string(depth, ']') + "}";
    const Expected<report::RunReport> read = report::reportFromJson(text, "r.json");
    WS_REQUIRE(!read.hasValue());
    WS_CHECK_CONTAINS(read.error().message, "nested deeper than 64 levels");
    WS_CHECK_EQ(read.error().line, 1);
    WS_CHECK_EQ(read.error().column, 13 + 64); // the root is level 1: the 64th '[' is level 65
}

WS_TEST(reportReaderReadsAWideObjectInLinearTime)
{
    // An object of 100,000 keys (1 MB) took a minute with ordered_json's linear key lookup.
    std::string text = "{";
    for (int i = 0; i < 100'000; ++i)
        text += (i > 0 ? ",\"k" : "\"k") + std::to_string(i) + "\":0";
    text += "}";
    const Expected<report::RunReport> read = report::reportFromJson(text, "r.json");
    WS_REQUIRE(!read.hasValue());
    WS_CHECK_CONTAINS(read.error().message, "missing key 'report_version'");
}

WS_TEST(reportReaderRefusesIntegersItsFieldsCannotHold)
{
    const std::string good = report::reportToJson(report::RunReport {});
    WS_REQUIRE(report::reportFromJson(good, "r.json").hasValue());
    const struct {
        std::string from;
        std::string to;
        std::string message;
    } cases[] = {
        { "\"num_csx\": 1", "\"num_csx\": 4294967297", "expected an integer in [-2147483648, 2147483647]" },
        { "\"seed\": 0", "\"seed\": -1", "expected an integer in [0, 18446744073709551615]" },
        { "\"batch_size\": 0", "\"batch_size\": 9223372036854775808",
            "expected an integer in [-9223372036854775808, 9223372036854775807]" },
    };
    for (const auto& c : cases) {
        std::string bad = good;
        const std::size_t at = bad.find(c.from);
        WS_REQUIRE(at != std::string::npos);
        bad.replace(at, c.from.size(), c.to);
        const Expected<report::RunReport> read = report::reportFromJson(bad, "r.json");
        WS_REQUIRE(!read.hasValue());
        WS_CHECK_CONTAINS(read.error().message, c.message);
        WS_CHECK_EQ(read.error().line, 1 + int(std::count(bad.begin(), bad.begin() + std::ptrdiff_t(at), '\n')));
    }
}

WS_TEST(reportReaderReadsBackTheNullItWritesForNonFiniteFigures)
{
    report::RunReport written;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    written.metrics.stepTimesS = { 0.5, nan };
    written.lanes.push_back({ "csx", 0, "CS-X 0 wafer", 1.0, 0.0, 0.0, { 0.25, nan } });
    const std::string text = report::reportToJson(written);
    const Expected<report::RunReport> read = report::reportFromJson(text, "r.json");
    WS_REQUIRE(read.hasValue());
    WS_CHECK_EQ(read->metrics.stepTimesS.size(), std::size_t(2));
    WS_CHECK(std::isnan(read->metrics.stepTimesS[1]));
    WS_CHECK_EQ(read->lanes.at(0).occupancy.at(0), 0.25);
    WS_CHECK(std::isnan(read->lanes.at(0).occupancy.at(1)));
    WS_CHECK_EQ(report::reportToJson(read.value()), text);
}

WS_TEST(reportReaderRefusesANulByteWhereItIs)
{
    // nlohmann stops at a NUL as at the end of the text; JsonLocator used to read on into the
    // garbage behind it and write before its stack (found by fuzz_report).
    using namespace std::string_literals;
    const Expected<report::RunReport> read = report::reportFromJson("{\"report_version\": 1}\n  \0 {}\""s, "r.json");
    WS_REQUIRE(!read.hasValue());
    WS_CHECK_EQ(read.error().line, 2);
    WS_CHECK_EQ(read.error().column, 3);
    WS_CHECK_CONTAINS(read.error().message, "NUL byte");
}
