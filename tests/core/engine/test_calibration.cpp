// The calibration file: shared constants, software profiles (a release's mechanisms and its one
// fitted overhead), the older single-profile schema, and located errors for malformed files.
#include "testing.h"

#include "core/engine/calibration.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

using namespace waferscope::core;
using namespace waferscope::core::engine;

namespace {

// A two-profile file; `mechanism` is the second profile's GEMV mapping.
std::string twoProfiles(const std::string& mechanism = "chain_reduced", const std::string& launch = "250")
{
    return R"({
  "schema": "waferscope-calibration/2",
  "version": "t-1",
  "default_profile": "old",
  "constants": {
    "reduce_add_cycles": { "value": 2, "fitted_to": "a figure of the shared constants" },
    "stream_marker_cycles": { "value": 3, "fitted_to": "another figure" }
  },
  "profiles": {
    "old": {
      "release": "the first release", "fitted_figure": "figure_a",
      "constants": { "region_launch_cycles": { "value": 100, "fitted_to": "figure a" } }
    },
    "new": {
      "release": "a later release", "fitted_figure": "figure_b",
      "mechanisms": { "gemv": ")"
        + mechanism + R"(" },
      "constants": { "region_launch_cycles": { "value": )"
        + launch + R"(, "fitted_to": "figure b" } }
    }
  }
})";
}

} // namespace

WS_TEST(theBuiltInProfileIsTheLaunchReleaseFittedToOneFigure)
{
    const Calibration& calibration = builtinCalibration();
    WS_CHECK_EQ(calibration.profile, std::string("2024-08-launch"));
    WS_CHECK_EQ(calibration.defaultProfile, std::string("2024-08-launch"));
    WS_CHECK_EQ(calibration.fittedFigure, std::string("llama3p1_8b_decode_cs3"));
    WS_CHECK(calibration.mechanisms.gemv == GemvReduction::Chain);
    WS_CHECK(calibration.mechanisms.speculativeDecoding == SpeculativeDecoding::Off);
    WS_CHECK(calibration.regionLaunchCycles > 0.0);
    WS_CHECK(calibration.release.find("2024") != std::string::npos);
    // Every constant carries a plausible range around its value, with the reason.
    for (const auto& [name, figure] : calibration.fittedTo) {
        WS_REQUIRE(calibration.ranges.count(name) == 1);
        const Calibration::Range& range = calibration.ranges.at(name);
        WS_CHECK(!range.reason.empty());
        WS_CHECK(range.low < range.high);
    }
}

WS_TEST(aProfileIsChosenByNameAndSharesTheTrainingConstants)
{
    const Expected<Calibration> first = parseCalibration(twoProfiles(), "cal.json");
    WS_REQUIRE(first.hasValue());
    WS_CHECK_EQ(first->profile, std::string("old"));
    WS_CHECK_EQ(first->regionLaunchCycles, 100.0);
    WS_CHECK_EQ(first->reduceAddCycles, 2.0);
    WS_CHECK_EQ(first->profiles.size(), std::size_t(2));
    const Expected<Calibration> second = parseCalibration(twoProfiles(), "cal.json", "new");
    WS_REQUIRE(second.hasValue());
    WS_CHECK_EQ(second->regionLaunchCycles, 250.0);
    WS_CHECK_EQ(second->streamMarkerCycles, 3.0);
    WS_CHECK_EQ(second->release, std::string("a later release"));
    WS_CHECK_EQ(second->fittedTo.at("region_launch_cycles"), std::string("figure b"));
}

WS_TEST(theFirstSchemaReadsAsOneCustomProfile)
{
    const Expected<Calibration> old = parseCalibration(R"({"schema": "waferscope-calibration/1", "constants": {
        "reduce_add_cycles": {"value": 1, "fitted_to": "x"},
        "stream_marker_cycles": {"value": 1, "fitted_to": "y"},
        "region_launch_cycles": {"value": 1850, "fitted_to": "z"}}})",
        "old.json");
    WS_REQUIRE(old.hasValue());
    WS_CHECK_EQ(old->profile, std::string("custom"));
    WS_CHECK_EQ(old->regionLaunchCycles, 1850.0);
}

WS_TEST(aMalformedCalibrationIsALocatedError)
{
    // A mechanism the engine does not build is refused, never ignored.
    const Expected<Calibration> unbuilt = parseCalibration(twoProfiles("mesh_gemv_unknown"), "cal.json", "new");
    WS_REQUIRE(!unbuilt.hasValue());
    WS_CHECK_EQ(unbuilt.error().file, std::string("cal.json"));
    WS_CHECK_EQ(unbuilt.error().line, 16); // the "mechanisms" line of the second profile
    WS_CHECK_CONTAINS(unbuilt.error().message, "mechanisms.gemv");
    // Stacked inference tiers are built: a profile may ask for them.
    std::string tiers = twoProfiles();
    const std::string gemv = "\"gemv\": \"chain_reduced\"";
    tiers.replace(tiers.find(gemv), gemv.size(), "\"region_sizing\": \"stacked\"");
    const Expected<Calibration> stacked = parseCalibration(tiers, "cal.json", "new");
    WS_REQUIRE(stacked.hasValue());
    WS_CHECK(stacked->mechanisms.regionSizing == RegionSizing::Stacked);
    WS_CHECK(stacked->mechanisms.gemv == GemvReduction::Chain);
    // So are tree-reduced GEMVs.
    const Expected<Calibration> trees = parseCalibration(twoProfiles("tree_reduced"), "cal.json", "new");
    WS_REQUIRE(trees.hasValue());
    WS_CHECK(trees->mechanisms.gemv == GemvReduction::Tree);
    // A negative overhead.
    const Expected<Calibration> negative = parseCalibration(twoProfiles("chain_reduced", "-5"), "cal.json", "new");
    WS_REQUIRE(!negative.hasValue());
    WS_CHECK_EQ(negative.error().line, 17);
    // A profile the file does not have, and a default that names none.
    const Expected<Calibration> missing = parseCalibration(twoProfiles(), "cal.json", "2030");
    WS_REQUIRE(!missing.hasValue());
    WS_CHECK_CONTAINS(missing.error().message, "new, old");
    std::string text = twoProfiles();
    text.replace(text.find("\"old\","), 6, "\"gone\",");
    const Expected<Calibration> badDefault = parseCalibration(text, "cal.json");
    WS_REQUIRE(!badDefault.hasValue());
    WS_CHECK_EQ(badDefault.error().line, 4);
    // A range that leaves out its value.
    std::string ranged = twoProfiles();
    ranged.replace(ranged.find("\"value\": 100,"), 13, "\"value\": 100, \"range\": [1, 50], \"range_reason\": \"r\",");
    const Expected<Calibration> badRange = parseCalibration(ranged, "cal.json");
    WS_REQUIRE(!badRange.hasValue());
    WS_CHECK_CONTAINS(badRange.error().message, "range");
    WS_CHECK_EQ(badRange.error().line, 12);
    WS_CHECK(!parseCalibration("[1, 2]", "cal.json").hasValue());
    WS_CHECK(!parseCalibration("{\"schema\": \"waferscope-calibration/2\"}", "cal.json").hasValue());
}

WS_TEST(calibrationResolvesAProfileNameOrAFile)
{
    WS_REQUIRE(resolveCalibration("2024-08-launch").hasValue());
    const Expected<Calibration> unknown = resolveCalibration("no-such-profile");
    WS_REQUIRE(!unknown.hasValue());
    WS_CHECK_CONTAINS(unknown.error().message, "2024-08-launch");
    const std::filesystem::path file = std::filesystem::temp_directory_path() / "waferscope-test-calibration.json";
    {
        std::ofstream out(file);
        out << twoProfiles();
    }
    const Expected<Calibration> fromFile = resolveCalibration(file.string() + "#new");
    WS_REQUIRE(fromFile.hasValue());
    WS_CHECK_EQ(fromFile->profile, std::string("new"));
    const Expected<Calibration> byDefault = resolveCalibration(file.string());
    WS_REQUIRE(byDefault.hasValue());
    WS_CHECK_EQ(byDefault->profile, std::string("old"));
    std::filesystem::remove(file);
}

namespace {

// The two-profile file with speculative decoding in its second profile; `speculative` is the
// profile's "speculative" object.
std::string drafting(const std::string& speculative)
{
    std::string text = twoProfiles();
    const std::string gemv = "\"gemv\": \"chain_reduced\" },";
    text.replace(text.find(gemv), gemv.size(),
        "\"region_sizing\": \"stacked\", \"speculative_decoding\": \"draft_model\" },\n      \"speculative\": "
            + speculative + ",");
    return text;
}

const std::string kDraft = R"({ "draft_params": "llama3p2_1b.yaml", "draft_why": "the smallest of the family",
        "max_draft_tokens": 6,
        "acceptance_rate": { "value": 0.7, "source": "a paper", "range": [0.6, 0.8], "range_reason": "its spread" } })";

} // namespace

WS_TEST(theNovemberProfileDraftsWithAPublishedModelAndRate)
{
    const Expected<Calibration> november = resolveCalibration("2024-11");
    WS_REQUIRE(november.hasValue());
    WS_CHECK_EQ(november->fittedFigure, std::string("llama3p1_405b_decode_cs3"));
    WS_CHECK(november->mechanisms.regionSizing == RegionSizing::Stacked);
    WS_CHECK(november->mechanisms.speculativeDecoding == SpeculativeDecoding::DraftModel);
    const Speculation& speculation = november->speculation;
    WS_CHECK_EQ(speculation.draftParams, std::string("llama3_8b.yaml"));
    WS_CHECK(speculation.acceptanceRate > 0.0 && speculation.acceptanceRate < 1.0);
    WS_CHECK_CONTAINS(speculation.acceptanceSource, "Leviathan");
    // The acceptance rate and the overhead each carry a range (the sensitivity sweep varies both);
    // the launch overhead of the default profile is not this profile's.
    WS_REQUIRE(november->ranges.count("acceptance_rate") == 1);
    WS_CHECK(november->ranges.at("acceptance_rate").low < speculation.acceptanceRate);
    WS_REQUIRE(november->ranges.count("region_launch_cycles") == 1);
    WS_CHECK(november->regionLaunchCycles < builtinCalibration().regionLaunchCycles);
    WS_CHECK_EQ(november->reduceAddCycles, builtinCalibration().reduceAddCycles);
}

WS_TEST(aSpeculativeProfileIsReadAndItsMistakesAreLocated)
{
    const Expected<Calibration> read = parseCalibration(drafting(kDraft), "cal.json", "new");
    WS_REQUIRE(read.hasValue());
    WS_CHECK_EQ(read->speculation.draftParams, std::string("llama3p2_1b.yaml"));
    WS_CHECK_EQ(read->speculation.maxDraftTokens, 6);
    WS_CHECK_EQ(read->speculation.acceptanceRate, 0.7);
    WS_CHECK_EQ(read->ranges.at("acceptance_rate").high, 0.8);
    WS_CHECK_EQ(read->fittedTo.at("acceptance_rate"), std::string("a paper"));
    // The other profile of the same file does not draft.
    const Expected<Calibration> other = parseCalibration(drafting(kDraft), "cal.json", "old");
    WS_REQUIRE(other.hasValue());
    WS_CHECK(other->mechanisms.speculativeDecoding == SpeculativeDecoding::Off);
    const auto refused = [](const std::string& text) {
        const Expected<Calibration> parsed = parseCalibration(text, "cal.json", "new");
        WS_REQUIRE(!parsed.hasValue());
        WS_CHECK_EQ(parsed.error().file, std::string("cal.json"));
        WS_CHECK(parsed.error().line > 1);
        return parsed.error().message;
    };
    const auto with = [](std::string text, const std::string& from, const std::string& to) {
        text.replace(text.find(from), from.size(), to);
        return text;
    };
    // draft_model without its object, a draft that is not a built-in sample, a rate of 1 (outside the
    // geometric series the engine sums), a range outside [0, 1), no source, too many tokens.
    WS_CHECK_CONTAINS(refused(with(drafting(kDraft), "\"speculative\":", "\"unrelated\":")), "\"speculative\" object");
    WS_CHECK_CONTAINS(refused(drafting(with(kDraft, "llama3p2_1b.yaml", "my_model.yaml"))), "llama3_8b.yaml");
    WS_CHECK_CONTAINS(refused(drafting(with(kDraft, "\"value\": 0.7", "\"value\": 1.0"))), "below 1");
    WS_CHECK_CONTAINS(refused(drafting(with(kDraft, "[0.6, 0.8]", "[0.6, 1.2]"))), "within [0, 1)");
    WS_CHECK_CONTAINS(refused(drafting(with(kDraft, "\"source\"", "\"where\""))), "source");
    WS_CHECK_CONTAINS(
        refused(drafting(with(kDraft, "\"max_draft_tokens\": 6", "\"max_draft_tokens\": 40"))), "1 to 16");
    WS_CHECK_CONTAINS(refused(with(drafting(kDraft), "\"draft_model\"", "\"medusa\"")), "\"off\", \"draft_model\"");
}
