// Broken presets: every mutation of a good preset must fail with a diagnostic located on the
// line of the mutation, computed here from the text rather than taken from the loader.
#include "testing.h"

#include "core/hardware/builtinpresets.h"
#include "core/hardware/presetloader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

using namespace waferscope::core;

namespace {

std::string cs2Text()
{
    for (const EmbeddedPreset& preset : embeddedPresets())
        if (preset.name == "cs2")
            return std::string(preset.text);
    return {};
}

int lineOf(const std::string& text, std::size_t offset)
{
    return 1 + int(std::count(text.begin(), text.begin() + std::ptrdiff_t(offset), '\n'));
}

struct Mutation {
    const char* what;
    std::string from; // unique text in cs2.json
    std::string to;
    const char* expectedMessage;
};

} // namespace

WS_TEST(goodPresetRoundTripsThroughAFile)
{
    const std::string path = std::filesystem::temp_directory_path() / "waferscope-test-cs2.json";
    std::ofstream(path) << cs2Text();
    Expected<SystemSpec> spec = loadPresetFile(path);
    WS_REQUIRE(spec.hasValue());
    WS_CHECK_EQ(spec->wafer.fabricWidth, 757);
    std::filesystem::remove(path);
}

WS_TEST(mutatedPresetsFailOnTheMutatedLine)
{
    const std::string good = cs2Text();
    WS_REQUIRE(!good.empty());
    const Mutation mutations[] = {
        { "negative clock", "\"value\": 1100000000.0", "\"value\": -1.1e9", "expected a value in" },
        { "absurd clock", "\"value\": 1100000000.0", "\"value\": 1e30", "expected a value in" },
        { "string for a number", "\"value\": 1100000000.0", "\"value\": \"fast\"", "must be a number" },
        { "fractional PE count", "\"value\": 757,", "\"value\": 757.5,", "must be an integer" },
        { "zero width", "\"value\": 757,", "\"value\": 0,", "expected an integer in" },
        { "usable wider than fabric", "\"value\": 750,", "\"value\": 760,", "lies inside the fabric" },
        { "more PEs than cores", "\"value\": 850000,", "\"value\": 85000,", "every fabric PE is a core" },
        { "typo in a key", "\"clock_hz\"", "\"clock_hx\"", "unknown key 'wafer.clock_hx'" },
        { "no provenance", "\"source\": \"ALCF Cerebras user guide: 48 KB SRAM per PE\"",
            "\"note\": \"ALCF Cerebras user guide: 48 KB SRAM per PE\"", "unknown key" },
        { "empty source", "\"source\": \"ALCF Cerebras user guide: 48 KB SRAM per PE\"", "\"source\": \"\"",
            "non-empty string" },
        { "wrong schema", "\"waferscope-hardware/1\"", "\"waferscope-hardware/9\"", "unsupported preset schema" },
        { "boolean as string", "\"value\": true", "\"value\": \"yes\"", "must be true or false" },
        { "too many systems", "\"value\": 192,", "\"value\": 0,", "expected an integer in" },
        { "syntax error", "\"cores\": {", "\"cores\" {", "invalid JSON" },
        // nlohmann throws out_of_range, not parse_error, for a number beyond a double: it used to
        // escape the loader and abort the process (found by fuzz_preset).
        { "clock beyond a double", "\"value\": 1100000000.0", "\"value\": 1.1e999", "number overflow" },
        // The optional MemoryX tier keys are checked like the rest once present.
        { "negative bytes per parameter", "\"value\": 50.0", "\"value\": -50", "expected a value in" },
        { "flash rate as a string", "\"value\": 37500000000.0", "\"value\": \"slow\"", "must be a number" },
        // (Flash faster than DRAM: tests/data/hardware/bad/flash_faster_than_dram.json; here the
        // flash rate's range would refuse it first.)
        { "fan-out of one", "\"value\": 4,\n      \"source\": \"Cerebras SwarmX",
            "\"value\": 1,\n      \"source\": \"Cerebras SwarmX", "expected an integer in" },
        // An optional range must hold its value and say why it spans that.
        { "range without the value", "\"range\": [\n        850000000.0", "\"range\": [\n        1150000000.0",
            "range must" },
        { "range as a number", "\"range\": [\n        850000000.0,\n        1100000000.0\n      ]",
            "\"range\": 850000000.0", "range must be [low, high]" },
        { "range without a reason", "\"range_reason\": \"the Cerebras SDK's examples",
            "\"range_why\": \"the Cerebras SDK's examples", "unknown key" },
    };
    for (const Mutation& mutation : mutations) {
        const std::size_t at = good.find(mutation.from);
        WS_REQUIRE(at != std::string::npos);
        std::string bad = good;
        bad.replace(at, mutation.from.size(), mutation.to);
        Expected<SystemSpec> spec = loadPresetText(bad, "bad.json");
        if (spec.hasValue()) {
            ::waferscope::test::reportFailure(__FILE__, __LINE__, std::string("accepted: ") + mutation.what);
            continue;
        }
        const Diagnostic& error = spec.error();
        WS_CHECK_CONTAINS(error.message, mutation.expectedMessage);
        WS_CHECK_EQ(error.line, lineOf(bad, at));
        WS_CHECK(error.column > 0);
        WS_CHECK_CONTAINS(error.format(), "bad.json:" + std::to_string(lineOf(bad, at)) + ":");
    }
}

WS_TEST(presetWithoutTheOptionalTierKeysLoads)
{
    // Users' presets written before MemoryX's tiers were modelled: both tiers read at MemoryX's
    // I/O rate and MemoryX holds the model's own weights and optimizer state.
    std::string text = cs2Text();
    for (const char* key : { "bytes_per_param", "dram_bandwidth_bytes_per_s", "flash_bandwidth_bytes_per_s" }) {
        const std::size_t start = text.find(std::string(",\n    \"") + key + "\"");
        WS_REQUIRE(start != std::string::npos);
        const std::size_t end = text.find('}', start);
        text.erase(start, end + 1 - start);
    }
    Expected<SystemSpec> spec = loadPresetText(text, "old.json");
    WS_REQUIRE(spec.hasValue());
    WS_CHECK_EQ(spec->memoryx.bytesPerParam, 0.0);
    WS_CHECK_EQ(spec->memoryx.dramReadBytesPerS(), spec->memoryx.bandwidthBytesPerS);
    WS_CHECK_EQ(spec->memoryx.flashReadBytesPerS(), spec->memoryx.bandwidthBytesPerS);
    WS_CHECK_EQ(spec->provenance.count("memoryx.flash_bandwidth_bytes_per_s"), std::size_t(0));
}

WS_TEST(numberBeyondADoubleIsLocatedAtItsFirstDigit)
{
    const std::string text = "{\n  \"schema\": [1, 2,\n    -4e400]\n}\n";
    Expected<SystemSpec> spec = loadPresetText(text, "big.json");
    WS_REQUIRE(!spec.hasValue());
    WS_CHECK_EQ(spec.error().line, 3);
    WS_CHECK_EQ(spec.error().column, 5);
    WS_CHECK_CONTAINS(spec.error().message, "-4e400");
}

WS_TEST(deepNestingIsRefusedAtTheFirstBracketTooDeep)
{
    // JsonLocator keeps one JSON pointer per value, as long as the value is deep: 200,000 nested
    // arrays (400 KB) used to take gigabytes to locate an error in.
    const std::size_t depth = 200'000;
    const std::string text = "{\n  \"wafer\": " + std::string(depth, '[') + std::string(depth, ']') + "\n}\n";
    Expected<SystemSpec> spec = loadPresetText(text, "deep.json");
    WS_REQUIRE(!spec.hasValue());
    WS_CHECK_CONTAINS(spec.error().message, "nested deeper than 64 levels");
    // The root object is level 1, so the 64th bracket after `  "wafer": ` (11 bytes) is level 65.
    WS_CHECK_EQ(spec.error().line, 2);
    WS_CHECK_EQ(spec.error().column, 11 + 64);
}

WS_TEST(nulByteIsRefusedWhereItIs)
{
    // nlohmann stops at a NUL as at the end of the text; JsonLocator used to read on into the
    // garbage behind it and write before its stack (found by fuzz_preset).
    using namespace std::string_literals;
    const std::string text = "{\"schema\": \"waferscope-hardware/1\"}\n  \0 {}\""s;
    Expected<SystemSpec> spec = loadPresetText(text, "nul.json");
    WS_REQUIRE(!spec.hasValue());
    WS_CHECK_EQ(spec.error().line, 2);
    WS_CHECK_EQ(spec.error().column, 3);
    WS_CHECK_CONTAINS(spec.error().message, "NUL byte");
}

WS_TEST(missingKeyPointsAtItsObject)
{
    std::string bad = cs2Text();
    const std::size_t start = bad.find("\"routable_colors\"");
    const std::size_t end = bad.find("\"hop_latency_cycles\"");
    WS_REQUIRE(start != std::string::npos && end > start);
    bad.erase(start, end - start);
    Expected<SystemSpec> spec = loadPresetText(bad, "bad.json");
    WS_REQUIRE(!spec.hasValue());
    WS_CHECK_CONTAINS(spec.error().message, "missing key 'wafer.routable_colors'");
    WS_CHECK_EQ(spec.error().line, lineOf(bad, bad.find("\"wafer\": {") + 9));
}

WS_TEST(nonObjectsAndGarbageAreRejected)
{
    for (const char* text : { "", "[]", "42", "\x01\x02\xff garbage", "{\"schema\": \"waferscope-hardware/1\"}" }) {
        Expected<SystemSpec> spec = loadPresetText(text, "x.json");
        WS_REQUIRE(!spec.hasValue());
        WS_CHECK(spec.error().line >= 1);
    }
}

WS_TEST(pathsThatAreNotPresetFiles)
{
    Expected<SystemSpec> missing = loadPresetFile("/nonexistent/waferscope/preset.json");
    WS_REQUIRE(!missing.hasValue());
    WS_CHECK_CONTAINS(missing.error().format(), "/nonexistent/waferscope/preset.json:1:1: error: no such file");
    Expected<SystemSpec> directory = loadPresetFile(std::filesystem::temp_directory_path().string());
    WS_REQUIRE(!directory.hasValue());
    WS_CHECK_CONTAINS(directory.error().message, "is a directory");
}

WS_TEST(checkedInBadPresetsAllFail)
{
    const std::filesystem::path folder = waferscope::test::dataDir() + "/hardware/bad";
    int count = 0;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
        Expected<SystemSpec> spec = loadPresetFile(entry.path().string());
        WS_CHECK(!spec.hasValue());
        if (!spec.hasValue())
            WS_CHECK(spec.error().line > 0);
        ++count;
    }
    WS_CHECK(count >= 3);
}
