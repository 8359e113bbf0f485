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

namespace {

// A report whose figures are each a value that occurs once in its text, so that a test can
// change one and find where it is.
report::RunReport plausibleReport()
{
    report::RunReport written;
    written.metrics.stepTimeS = 0.5;
    written.metrics.stepTimesS = { 0.5, 0.375 };
    written.metrics.mfu = 0.125;
    written.metrics.utilization.io = 0.0625;
    engine::LayerMetrics layer;
    layer.name = "layers.0.ffn.up";
    layer.kind = engine::LayerKind::Linear;
    layer.timeS = 0.03125;
    written.metrics.layers.push_back(layer);
    return written;
}

} // namespace

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
    const std::string good = report::reportToJson(plausibleReport());
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
    report::RunReport written = plausibleReport();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    written.metrics.tokensPerS = nan; // a figure of a run whose step was too short to count, say
    written.lanes.push_back({ engine::LaneKind::CsxCompute, 0, "CS-X 0 wafer", 1.0, 0.0, 0.0, { 0.25, nan } });
    const std::string text = report::reportToJson(written);
    const Expected<report::RunReport> read = report::reportFromJson(text, "r.json");
    WS_REQUIRE(read.hasValue());
    WS_CHECK(std::isnan(read->metrics.tokensPerS));
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

WS_TEST(reportReaderRefusesImpossibleFiguresWhereTheyAre)
{
    // A step takes a finite time above 0 (the null the writer uses for a time that was not finite
    // is no step either); times, FLOPs and bytes are at least 0; a share is from 0 to 1; a run
    // uses at least one system. `compare` read such reports and printed their ratios.
    const std::string good = report::reportToJson(plausibleReport());
    WS_REQUIRE(report::reportFromJson(good, "r.json").hasValue());
    const struct {
        std::string from; // as written, the key and its value
        std::string to;
        std::string message;
    } cases[] = {
        { "\"step_time_s\": 0.5", "\"step_time_s\": -0.5", "'step_time_s' is -0.5, expected a finite time above 0" },
        { "\"step_time_s\": 0.5", "\"step_time_s\": null", "'step_time_s' is null, expected a finite time above 0" },
        { "\"step_time_s\": 0.5", "\"step_time_s\": 0", "'step_time_s' is 0, expected a finite time above 0" },
        { "0.375", "-0.375", "'step_times_s' holds -0.375, expected finite times above 0" },
        { "0.375", "null", "'step_times_s' holds null, expected finite times above 0" },
        { "\"mfu\": 0.125", "\"mfu\": 1.5", "'mfu' is 1.5, expected a share from 0 to 1" },
        { "\"io\": 0.0625", "\"io\": -0.0625", "'io' is -0.0625, expected a share from 0 to 1" },
        { "\"time_s\": 0.03125", "\"time_s\": -0.03125", "'time_s' is -0.03125, expected a number of at least 0" },
        { "\"num_systems\": 1", "\"num_systems\": 0", "'num_systems' is 0, expected at least 1" },
    };
    for (const auto& c : cases) {
        std::string bad = good;
        const std::size_t at = bad.find(c.from);
        WS_REQUIRE(at != std::string::npos);
        WS_REQUIRE(bad.find(c.from, at + 1) == std::string::npos); // the one place it is written
        bad.replace(at, c.from.size(), c.to);
        const Expected<report::RunReport> read = report::reportFromJson(bad, "r.json");
        WS_REQUIRE(!read.hasValue());
        WS_CHECK_EQ(read.error().message, c.message);
        // Located at the value: its line, and its column after `"key": ` (or at a list's element).
        const std::size_t value = c.from.find(": ") == std::string::npos ? at : at + c.from.find(": ") + 2;
        WS_CHECK_EQ(read.error().line, 1 + int(std::count(bad.begin(), bad.begin() + std::ptrdiff_t(at), '\n')));
        WS_CHECK_EQ(read.error().column, int(value - bad.rfind('\n', at)));
    }
}

// A layer's kind, a lane and a checkpoint strategy are read back by name: each value written is
// the value read, and a name the writer never writes is an error located at it, listing the names.
WS_TEST(reportReaderReadsNamesBackAndLocatesAnUnknownOne)
{
    report::RunReport written = plausibleReport();
    written.metrics.checkpointStrategy = CheckpointStrategy::EveryK;
    written.metrics.checkpointEvery = 2;
    engine::LayerMetrics link;
    link.name = "wafer 0 -> 1";
    link.kind = engine::LayerKind::WaferLink;
    written.metrics.layers.push_back(link);
    engine::LayerMetrics reduction;
    reduction.name = "gradient reduction across systems";
    reduction.kind = engine::LayerKind::GradientReduction;
    written.metrics.layers.push_back(reduction);
    written.lanes.push_back({ engine::LaneKind::SwarmX, 0, "SwarmX", 1.0, 0.0, 0.0, { 0.5 } });
    const std::string good = report::reportToJson(written);
    const Expected<report::RunReport> read = report::reportFromJson(good, "r.json");
    WS_REQUIRE(read.hasValue());
    WS_CHECK(read->metrics.checkpointStrategy == CheckpointStrategy::EveryK);
    WS_REQUIRE(read->metrics.layers.size() == 3);
    WS_CHECK(read->metrics.layers[0].kind == engine::LayerKind::Linear);
    WS_CHECK(read->metrics.layers[1].kind == engine::LayerKind::WaferLink);
    WS_CHECK(read->metrics.layers[2].kind == engine::LayerKind::GradientReduction);
    WS_REQUIRE(read->lanes.size() == 1);
    WS_CHECK(read->lanes[0].lane == engine::LaneKind::SwarmX);

    // The op kinds a graph holds, in Op::Kind's order, then the engine's two layers of its own.
    const std::string kinds = "embedding, position_embedding, norm, linear, attention_core, activation, moe_router, "
                              "experts, lm_head, pooler, loss, patch_embedding, convolution, pooling, upsampling, "
                              "wafer_link or gradient_reduction";
    const struct {
        std::string from; // as written, the key and its value
        std::string to;
        std::string message;
    } cases[] = {
        { "\"kind\": \"gradient_reduction\"", "\"kind\": \"gradient_sum\"",
            "'kind' is 'gradient_sum', expected " + kinds },
        { "\"kind\": \"linear\"", "\"kind\": \"Linear\"", "'kind' is 'Linear', expected " + kinds }, // exact
        { "\"lane\": \"swarmx\"", "\"lane\": \"swarm\"",
            "'lane' is 'swarm', expected memoryx, swarmx, csx_io, csx, region or wafer_link" },
        { "\"checkpoint_strategy\": \"every_k\"", "\"checkpoint_strategy\": \"every_2\"",
            "'checkpoint_strategy' is 'every_2', expected all_blocks, every_k or memoryx" },
    };
    for (const auto& c : cases) {
        std::string bad = good;
        const std::size_t at = bad.find(c.from);
        WS_REQUIRE(at != std::string::npos);
        WS_REQUIRE(bad.find(c.from, at + 1) == std::string::npos); // the one place it is written
        bad.replace(at, c.from.size(), c.to);
        const Expected<report::RunReport> refused = report::reportFromJson(bad, "r.json");
        WS_REQUIRE(!refused.hasValue());
        WS_CHECK_EQ(refused.error().message, c.message);
        WS_CHECK_EQ(refused.error().file, std::string("r.json"));
        // Located at the value, after `"key": `.
        const std::size_t value = at + c.from.find(": ") + 2;
        WS_CHECK_EQ(refused.error().line, 1 + int(std::count(bad.begin(), bad.begin() + std::ptrdiff_t(at), '\n')));
        WS_CHECK_EQ(refused.error().column, int(value - bad.rfind('\n', at)));
    }
}
