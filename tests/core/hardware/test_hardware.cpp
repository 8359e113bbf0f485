// Built-in presets against published facts (Cerebras specifications, documentation and papers), written here
// independently.
#include "testing.h"

#include "core/hardware/builtinpresets.h"
#include "core/hardware/clusterspec.h"

using namespace waferscope::core;

namespace {

SystemSpec builtin(const char* name)
{
    Expected<SystemSpec> spec = loadBuiltinPreset(name);
    if (!spec) {
        ::waferscope::test::reportFailure(__FILE__, __LINE__, spec.error().format());
        throw ::waferscope::test::Abort {};
    }
    return spec.value();
}

} // namespace

WS_TEST(builtinPresetsAllLoadInOrder)
{
    Expected<std::vector<SystemSpec>> systems = loadBuiltinPresets();
    WS_REQUIRE(systems.hasValue());
    WS_REQUIRE(systems->size() == 3);
    WS_CHECK_EQ((*systems)[0].name, std::string("cs1"));
    WS_CHECK_EQ((*systems)[1].name, std::string("cs2"));
    WS_CHECK_EQ((*systems)[2].name, std::string("cs3"));
}

WS_TEST(cs2MatchesPublishedFacts)
{
    const SystemSpec cs2 = builtin("cs2");
    WS_CHECK_EQ(cs2.wafer.name, std::string("WSE-2"));
    WS_CHECK_EQ(cs2.wafer.cores, 850000);
    WS_CHECK_EQ(cs2.wafer.fabricWidth, 757);
    WS_CHECK_EQ(cs2.wafer.fabricHeight, 996);
    // SDK rule: width <= dims - 7, height <= dims - 2.
    WS_CHECK_EQ(cs2.wafer.usableWidth, 757 - 7);
    WS_CHECK_EQ(cs2.wafer.usableHeight, 996 - 2);
    WS_CHECK_EQ(cs2.wafer.sramPerPeBytes, 48 * 1024);
    WS_CHECK_NEAR(cs2.wafer.clockHz, 1.1e9, 1e-12);
    WS_CHECK_EQ(cs2.wafer.fmacPerPePerCycle, 4);
    WS_CHECK_EQ(cs2.wafer.linkBytesPerCycle, 32 / 8);
    WS_CHECK_EQ(cs2.wafer.routableColors, 24);
    WS_CHECK_NEAR(cs2.ioBytesPerS, 1.2e12 / 8, 1e-12); // 1.2 Tb/s
    WS_CHECK(cs2.memoryx.supported);
    WS_CHECK_NEAR(cs2.memoryx.capacityBytes, 2.4e15, 1e-12);
    WS_CHECK_NEAR(cs2.memoryx.maxParams, 120e12, 1e-12);
    WS_CHECK_NEAR(cs2.memoryx.dramBytes, 12e12, 1e-12); // 12 TB of DDR4
    WS_CHECK(cs2.swarmx.supported);
    WS_CHECK_EQ(cs2.swarmx.maxSystems, 192);
    WS_CHECK_EQ(cs2.swarmx.fanOut, 4); // SwarmX nodes: one 1:4 broadcast-reduce each
}

WS_TEST(cs3MatchesPublishedFacts)
{
    const SystemSpec cs3 = builtin("cs3");
    WS_CHECK_EQ(cs3.wafer.name, std::string("WSE-3"));
    WS_CHECK_EQ(cs3.wafer.cores, 900000);
    WS_CHECK_EQ(cs3.wafer.fabricWidth, 762);
    WS_CHECK_EQ(cs3.wafer.fabricHeight, 1172);
    WS_CHECK_EQ(cs3.wafer.usableWidth, 762 - 7);
    WS_CHECK_EQ(cs3.wafer.usableHeight, 1172 - 2);
    WS_CHECK_EQ(cs3.wafer.fmacPerPePerCycle, 8);
    WS_CHECK_NEAR(cs3.memoryx.dramBytes, 36e12, 1e-12);
    WS_CHECK_NEAR(cs3.memoryx.maxParams, 24e12, 1e-12);
    WS_CHECK_EQ(cs3.swarmx.maxSystems, 2048);
    WS_CHECK_EQ(cs3.swarmx.fanOut, 4);
    WS_CHECK_NEAR(cs3.ioBytesPerS, 12 * 100e9 / 8, 1e-12); // 12 x 100 GbE
    // 44 GB of on-chip SRAM is published for all 900k cores; the usable rectangle holds a bit less.
    WS_CHECK(cs3.wafer.usableSramBytes() < 44e9);
    WS_CHECK(cs3.wafer.usableSramBytes() > 0.95 * 44e9);
}

WS_TEST(cs1PredatesWeightStreaming)
{
    const SystemSpec cs1 = builtin("cs1");
    WS_CHECK_EQ(cs1.wafer.cores, 400000);
    WS_CHECK_EQ(cs1.wafer.usableWidth, 600); // SC20 region
    WS_CHECK_EQ(cs1.wafer.usableHeight, 595);
    WS_CHECK(!cs1.memoryx.supported);
    WS_CHECK(!cs1.swarmx.supported);
}

WS_TEST(peakFlopsIsTwoFlopsPerFmacOverTheUsableRectangle)
{
    const SystemSpec cs2 = builtin("cs2");
    WS_CHECK_NEAR(cs2.wafer.peakFlopsPerS(), 750.0 * 994 * 4 * 2 * 1.1e9, 1e-12);
    // The vendor's dense figure counts all cores: about 7.5 PFLOP/s for WSE-2, 15.8 for WSE-3.
    WS_CHECK_NEAR(double(cs2.wafer.cores) * 4 * 2 * cs2.wafer.clockHz, 7.5e15, 0.01);
    const SystemSpec cs3 = builtin("cs3");
    WS_CHECK_NEAR(double(cs3.wafer.cores) * cs3.wafer.fmacPerPePerCycle * 2 * cs3.wafer.clockHz, 15.8e15, 0.01);
}

WS_TEST(everyFactCarriesItsProvenance)
{
    for (const char* name : { "cs1", "cs2", "cs3" }) {
        const SystemSpec spec = builtin(name);
        // 15 wafer facts (the name is not one), 2 system facts, then MemoryX and SwarmX (9 and 5 when supported, else
        // 1).
        const std::size_t expected = 15 + 2 + (spec.memoryx.supported ? 9 : 1) + (spec.swarmx.supported ? 5 : 1);
        WS_CHECK_EQ(spec.provenance.size(), expected);
        for (const auto& [key, origin] : spec.provenance)
            WS_CHECK(origin.text.size() > 10);
    }
    const SystemSpec cs2 = builtin("cs2");
    WS_CHECK(cs2.provenance.at("wafer.fabric_width").kind == Provenance::Kind::Source);
    WS_CHECK(cs2.provenance.at("wafer.hop_latency_cycles").kind == Provenance::Kind::Assumed);
    // The two published clocks of the WSE-2 (Hot Chips 34, the SDK's examples) are named by both
    // generations that use it; the flash tier's rate, unpublished, says it is assumed.
    for (const char* name : { "cs2", "cs3" }) {
        const SystemSpec spec = builtin(name);
        WS_CHECK_CONTAINS(spec.provenance.at("wafer.clock_hz").text, "1.1 GHz");
        WS_CHECK_CONTAINS(spec.provenance.at("wafer.clock_hz").text, "850 MHz");
        WS_CHECK(spec.provenance.at("memoryx.flash_bandwidth_bytes_per_s").kind == Provenance::Kind::Assumed);
        WS_CHECK(spec.provenance.at("swarmx.fan_out").kind == Provenance::Kind::Source);
    }
    WS_CHECK_CONTAINS(builtin("cs3").provenance.at("system.io_bytes_per_s").text, "30%");
}

WS_TEST(unknownBuiltinNamesTheKnownOnes)
{
    Expected<SystemSpec> spec = loadBuiltinPreset("cs9");
    WS_REQUIRE(!spec.hasValue());
    WS_CHECK_CONTAINS(spec.error().message, "cs1, cs2, cs3");
}

WS_TEST(clusterSizeIsBoundedByTheGeneration)
{
    WS_CHECK(ClusterSpec::make(builtin("cs2"), 192).hasValue());
    WS_CHECK(!ClusterSpec::make(builtin("cs2"), 193).hasValue());
    WS_CHECK(ClusterSpec::make(builtin("cs3"), 2048).hasValue());
    WS_CHECK(!ClusterSpec::make(builtin("cs3"), 0).hasValue());
    WS_CHECK(ClusterSpec::make(builtin("cs1"), 1).hasValue());
    Expected<ClusterSpec> tooMany = ClusterSpec::make(builtin("cs1"), 2);
    WS_REQUIRE(!tooMany.hasValue());
    WS_CHECK_CONTAINS(tooMany.error().message, "no SwarmX");
}
