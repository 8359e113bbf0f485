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
    WS_CHECK_EQ(calibration.mechanisms.gemv, std::string("chain_reduced"));
    WS_CHECK_EQ(calibration.mechanisms.speculativeDecoding, std::string("off"));
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
    WS_CHECK_EQ(stacked->mechanisms.regionSizing, std::string("stacked"));
    WS_CHECK_EQ(stacked->mechanisms.gemv, std::string("chain_reduced"));
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
