// The fast dimension-order mesh (XyFabric: byte-vector arbitration, ring slots written by the
// sender, counters modulo 128, bands stepped a cycle apart) against the plain statement of the
// same cycle semantics (XyReferenceFabric): every queue's contents, every counter and the
// traffic totals agree bit for bit, cycle by cycle or at checkpoints of multi-cycle runs, for
// each traffic pattern the other tests use, on square, oblong, one-row and one-column meshes,
// at low and saturating rates, at several queue depths and thread counts.
#include "testing.h"
#include "xyreferencefabric.h"

#include "core/fabric/traffic.h"
#include "core/fabric/xyfabric.h"

#include <memory>
#include <sstream>
#include <string>

using namespace waferscope::core::fabric;
using waferscope::test::XyReferenceFabric;

namespace {

struct Case {
    TrafficPattern pattern = TrafficPattern::Uniform;
    int width = 0;
    int height = 0;
    double rate = 0.0;
    int depth = 4;
    std::uint64_t cycles = 0;
    int threads = 1; // 1: compared after every step(); more: after each run() of a few cycles
    std::uint64_t seed = 1;
    double hotspotFraction = 0.2;
    bool measureFromStart = false;
};

std::string describe(const Case& c)
{
    std::ostringstream text;
    text << trafficPatternName(c.pattern) << " " << c.width << "x" << c.height << " rate " << c.rate << " depth "
         << c.depth << " threads " << c.threads << " seed " << c.seed;
    return text.str();
}

template <typename Fast, typename Reference>
std::string firstDifferentEntry(const char* name, const Fast& fast, const Reference& reference)
{
    if (fast.size() != reference.size())
        return std::string(name) + ": sizes differ";
    for (std::size_t i = 0; i < fast.size(); ++i)
        if (fast[i] != reference[i])
            return std::string(name) + "[" + std::to_string(i) + "]: " + std::to_string(fast[i]) + " vs "
                + std::to_string(reference[i]);
    return {};
}

// Empty if the two meshes hold the same state; else the first difference found.
std::string difference(const XyFabric& fast, const XyReferenceFabric& reference)
{
    if (fast.cycle() != reference.cycle())
        return "cycle";
    for (int y = 0; y < fast.height(); ++y) {
        for (int x = 0; x < fast.width(); ++x) {
            for (int port = 0; port <= Fabric::kRampPort; ++port) {
                const std::vector<Wavelet> queued = fast.queued(x, y, port);
                const std::deque<Wavelet>& expected = reference.queue(x, y, port);
                bool same = queued.size() == expected.size();
                for (std::size_t i = 0; same && i < queued.size(); ++i)
                    same = queued[i].data == expected[i].data && queued[i].tag == expected[i].tag;
                if (!same)
                    return "queue " + std::string(directionName(port)) + " of (" + std::to_string(x) + ", "
                        + std::to_string(y) + "): " + std::to_string(queued.size()) + " wavelets vs "
                        + std::to_string(expected.size()) + (queued.size() == expected.size() ? ", not the same" : "");
            }
        }
    }
    for (const std::string& found : {
             firstDifferentEntry("routed", fast.routedWavelets(), reference.routed),
             firstDifferentEntry("busy", fast.routerBusyCycles(), reference.routerBusy),
             firstDifferentEntry("stall", fast.routerStallCycles(), reference.routerStall),
             firstDifferentEntry("link wavelets", fast.linkWavelets(), reference.linkWavelets),
             firstDifferentEntry("link stall", fast.linkStallCycles(), reference.linkStall),
             firstDifferentEntry("head time", fast.traffic()->headTime, reference.traffic().headTime),
             firstDifferentEntry("head packet", fast.traffic()->headPacket, reference.traffic().headPacket),
             firstDifferentEntry("generate time", fast.traffic()->generateTime, reference.traffic().generateTime),
         })
        if (!found.empty())
            return found;
    const TrafficGenerator::RowTotals a = fast.traffic()->totals();
    const TrafficGenerator::RowTotals b = reference.traffic().totals();
    const std::vector<std::uint64_t> totalsA { a.generated, a.injected, a.hops, a.ejected, a.latencyPackets,
        a.latencySum };
    const std::vector<std::uint64_t> totalsB { b.generated, b.injected, b.hops, b.ejected, b.latencyPackets,
        b.latencySum };
    return firstDifferentEntry("traffic totals", totalsA, totalsB);
}

// Runs both meshes for c.cycles and compares them along the way; returns the number of wavelets
// the routers moved (so that a case is seen to carry traffic). Reports the first difference.
std::uint64_t compare(const Case& c)
{
    TrafficConfig traffic;
    traffic.width = c.width;
    traffic.height = c.height;
    traffic.pattern = c.pattern;
    traffic.rate = c.rate;
    traffic.cycles = c.cycles;
    traffic.queueDepth = c.depth;
    traffic.seed = c.seed;
    traffic.hotspotFraction = c.hotspotFraction;
    const std::uint64_t measureFrom = c.measureFromStart ? 0 : c.cycles / 4;
    FabricConfig config;
    config.width = c.width;
    config.height = c.height;
    config.queueDepth = c.depth;
    XyFabric fast(config);
    fast.setThreads(c.threads);
    fast.attachTraffic(std::make_unique<TrafficGenerator>(traffic, measureFrom, c.cycles));
    XyReferenceFabric reference(
        c.width, c.height, c.depth, std::make_unique<TrafficGenerator>(traffic, measureFrom, c.cycles));
    // Runs of 1, 2, 3, ... 12 cycles in turn: run() lets bands drift apart within each.
    for (std::uint64_t stretch = 1; fast.cycle() < c.cycles; stretch = stretch % 12 + 1) {
        const std::uint64_t cycles = c.threads == 1 ? 1 : std::min(stretch, c.cycles - fast.cycle());
        if (c.threads == 1)
            fast.step();
        else
            fast.run(cycles);
        for (std::uint64_t i = 0; i < cycles; ++i)
            reference.step();
        if (const std::string found = difference(fast, reference); !found.empty()) {
            WS_CHECK_EQ(describe(c) + " at cycle " + std::to_string(fast.cycle()) + ": " + found, std::string());
            return 0;
        }
    }
    return fast.totalRoutedWavelets();
}

} // namespace

WS_TEST(uniformTrafficMatchesTheReferenceRouterBitForBit)
{
    // Low load, saturation and every PE injecting every cycle; the default depth (its own
    // compiled path) and others; meshes of one row, one column, one router, odd sides, and
    // wider than one 16-router vector.
    for (const double rate : { 0.02, 0.3, 1.0 }) {
        for (const int depth : { 2, 3, 4, 5, 8 }) {
            for (const auto& [width, height] :
                { std::pair { 1, 1 }, { 2, 2 }, { 5, 3 }, { 1, 9 }, { 9, 1 }, { 17, 9 }, { 33, 4 } })
                WS_CHECK(compare({ TrafficPattern::Uniform, width, height, rate, depth, 150 }) > 0 || rate < 0.1);
        }
    }
    // The meshes of the theory tests, at their rates.
    WS_CHECK(compare({ TrafficPattern::Uniform, 32, 32, 0.02, 4, 300 }) > 0);
    WS_CHECK(compare({ TrafficPattern::Uniform, 32, 32, 0.3, 4, 300 }) > 0);
    WS_CHECK(compare({ TrafficPattern::Uniform, 16, 16, 0.4, 16, 300 }) > 0);
    WS_CHECK(compare({ TrafficPattern::Uniform, 12, 10, 0.35, 4, 400, 1, 7, 0.2, true }) > 0);
}

WS_TEST(transposeAndHotspotTrafficMatchTheReferenceRouterBitForBit)
{
    for (const double rate : { 0.02, 0.2, 1.0 }) {
        for (const auto& [width, height] : { std::pair { 16, 16 }, { 12, 7 }, { 1, 8 }, { 8, 1 }, { 3, 19 } }) {
            WS_CHECK(compare({ TrafficPattern::Transpose, width, height, rate, 4, 200 }) > 0 || rate < 0.1);
            WS_CHECK(compare({ TrafficPattern::Hotspot, width, height, rate, 3, 200 }) > 0 || rate < 0.1);
        }
    }
    WS_CHECK(compare({ TrafficPattern::Hotspot, 16, 16, 0.05, 4, 400 }) > 0);
    WS_CHECK(compare({ TrafficPattern::Hotspot, 9, 13, 0.2, 4, 300, 1, 3, 0.6 }) > 0);
}

WS_TEST(parallelAndSkewedRunsMatchTheReferenceRouterBitForBit)
{
    // Bands stepped by several threads, with and without the per-cycle barrier, and a band of
    // one row (more threads than rows).
    for (const int threads : { 2, 3, 8 }) {
        WS_CHECK(compare({ TrafficPattern::Uniform, 24, 17, 0.08, 4, 300, threads }) > 0);
        WS_CHECK(compare({ TrafficPattern::Uniform, 19, 5, 0.5, 3, 300, threads }) > 0);
        WS_CHECK(compare({ TrafficPattern::Transpose, 16, 16, 0.2, 4, 200, threads }) > 0);
        WS_CHECK(compare({ TrafficPattern::Hotspot, 13, 11, 0.1, 8, 200, threads }) > 0);
    }
    // The widest mesh a route can address, saturated.
    WS_CHECK(compare({ TrafficPattern::Uniform, 2047, 3, 0.2, 4, 60, 2 }) > 0);
}

WS_TEST(theBuildRunsTheVectorPathsItMeansTo)
{
    // test_fabric_scalar links the fabric compiled with its portable fallbacks in place of the
    // library's: the tests above then hold those to the reference.
#if defined(WAFERSCOPE_EXPECT_FABRIC_SCALAR) || !defined(__SSE2__)
    WS_CHECK(XyFabric::usesPortableFallbacks());
#else
    WS_CHECK(!XyFabric::usesPortableFallbacks());
#endif
}
