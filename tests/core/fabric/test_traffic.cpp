// The mesh against NoC theory (Dally and Towles, Principles and Practices of Interconnection Networks): mean hops of
// uniform and transpose traffic, offered = accepted below saturation, zero-load latency = hops x 1 cycle, saturation
// near the bisection bound 4/k; and the determinism contract: any thread count gives the serial run's state bit for
// bit.
#include "testing.h"

#include "core/fabric/half.h"
#include "core/fabric/traffic.h"
#include "core/fabric/xyfabric.h"

#include <cstdlib>

using namespace waferscope::core;
using namespace waferscope::core::fabric;

namespace {

TrafficResult traffic(int k, double rate, std::uint64_t cycles, TrafficPattern pattern = TrafficPattern::Uniform,
    int threads = 1, int queueDepth = 4)
{
    TrafficConfig config;
    config.width = k;
    config.height = k;
    config.rate = rate;
    config.cycles = cycles;
    config.pattern = pattern;
    config.threads = threads;
    config.queueDepth = queueDepth;
    Expected<TrafficResult> result = runTraffic(config);
    if (!result)
        throw std::runtime_error(result.error().format());
    return *result;
}

// A synthetic-traffic fabric, not yet run, measuring from cycle measureFrom to cycle `cycles`.
std::unique_ptr<XyFabric> trafficFabric(
    int width, int height, double rate, std::uint64_t cycles, int threads, std::uint64_t measureFrom)
{
    TrafficConfig config;
    config.width = width;
    config.height = height;
    config.rate = rate;
    config.cycles = cycles;
    FabricConfig fabricConfig;
    fabricConfig.width = width;
    fabricConfig.height = height;
    auto fabric = std::make_unique<XyFabric>(fabricConfig);
    fabric->setThreads(threads);
    fabric->attachTraffic(std::make_unique<TrafficGenerator>(config, measureFrom, cycles));
    return fabric;
}

std::uint64_t trafficDigest(int width, int height, double rate, std::uint64_t cycles, int threads)
{
    const std::unique_ptr<XyFabric> fabric = trafficFabric(width, height, rate, cycles, threads, cycles / 4);
    fabric->run(cycles);
    return fabric->digest();
}

} // namespace

WS_TEST(halfPrecisionRoundTripsEveryValueAndRoundsToNearestEven)
{
    for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
        const auto half = std::uint16_t(bits);
        if ((half & 0x7c00) == 0x7c00 && (half & 0x3ff)) // NaN payloads are not preserved bit for bit
            continue;
        if (floatToHalf(halfToFloat(half)) != half) {
            WS_CHECK_EQ(floatToHalf(halfToFloat(half)), half);
            return;
        }
    }
    WS_CHECK_EQ(floatToHalf(1.0f), std::uint16_t(0x3c00));
    WS_CHECK_EQ(floatToHalf(65504.0f), std::uint16_t(0x7bff)); // largest finite half
    WS_CHECK_EQ(floatToHalf(65520.0f), std::uint16_t(0x7c00)); // rounds up to infinity
    WS_CHECK_EQ(floatToHalf(std::ldexp(1.0f, -24)), std::uint16_t(0x0001)); // smallest subnormal
    WS_CHECK_EQ(floatToHalf(std::ldexp(1.0f, -25)), std::uint16_t(0x0000)); // tie rounds to even (zero)
    WS_CHECK_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), std::uint16_t(0x3c00)); // tie to even
    WS_CHECK_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), std::uint16_t(0x3c02)); // tie to even (up)
    WS_CHECK_EQ(floatToHalf(-2.0f), std::uint16_t(0xc000));
}

WS_TEST(uniformTrafficMatchesMeshTheoryAtLowLoad)
{
    const int k = 32;
    const TrafficResult result = traffic(k, 0.02, 20000);
    const double theoryHops = 2.0 * (k * k - 1) / (3.0 * k); // 21.3
    WS_CHECK_NEAR(result.avgHops, theoryHops, 0.03);
    WS_CHECK_NEAR(result.acceptedRate, result.offeredRate, 0.05);
    WS_CHECK_NEAR(result.offeredRate, 0.02, 0.05); // Bernoulli process at the configured rate
    // Zero-load latency is hops x 1 cycle per hop (injection and ejection take no extra cycle
    // in this router model); at 2% load queueing adds only a few percent.
    WS_CHECK(result.avgLatencyCycles >= result.avgHops * 0.99);
    WS_CHECK(result.avgLatencyCycles <= result.avgHops * 1.08);
    WS_CHECK(result.packetsMeasured > 100000);
}

WS_TEST(uniformTrafficSaturatesNearTheBisectionBound)
{
    const int k = 32;
    const TrafficResult result = traffic(k, 0.3, 8000);
    const double bound = 4.0 / k;
    WS_CHECK(result.acceptedRate >= 0.6 * bound);
    WS_CHECK(result.acceptedRate <= 1.0 * bound);
    WS_CHECK(result.offeredRate > 0.29); // open loop: the sources keep offering
}

WS_TEST(transposeTrafficTravelsTheExpectedDistance)
{
    const int k = 16;
    double hops = 0.0; // brute force: PE (x, y) sends to (y, x), |x - y| hops in each dimension
    for (int y = 0; y < k; ++y)
        for (int x = 0; x < k; ++x)
            hops += 2.0 * std::abs(x - y);
    hops /= k * k;
    const TrafficResult result = traffic(k, 0.02, 8000, TrafficPattern::Transpose);
    WS_CHECK_NEAR(result.avgHops, hops, 0.03);
    WS_CHECK_NEAR(result.acceptedRate, result.offeredRate, 0.05);
}

WS_TEST(hotspotTrafficIsLimitedByTheHotspotsEjectionPort)
{
    // 20% of 256 PEs x 0.05 = 2.56 packets/cycle aim at one PE that ejects one per cycle, so
    // accepted traffic cannot exceed (1 + uniform share) and stays well below offered.
    TrafficConfig config;
    config.width = 16;
    config.height = 16;
    config.rate = 0.05;
    config.cycles = 6000;
    config.pattern = TrafficPattern::Hotspot;
    const Expected<TrafficResult> result = runTraffic(config);
    WS_REQUIRE(result.hasValue());
    WS_CHECK(result->acceptedRate < 0.6 * result->offeredRate);
    const double perPe = 1.0 / (16 * 16);
    WS_CHECK(result->acceptedRate <= 0.8 * 0.05 + perPe * 1.01);
}

WS_TEST(parallelStepsAreBitIdenticalToTheSerialReference)
{
    const std::uint64_t serial = trafficDigest(24, 17, 0.08, 600, 1);
    WS_CHECK_EQ(trafficDigest(24, 17, 0.08, 600, 2), serial);
    WS_CHECK_EQ(trafficDigest(24, 17, 0.08, 600, 3), serial);
    WS_CHECK_EQ(trafficDigest(24, 17, 0.08, 600, 8), serial);
    WS_CHECK(trafficDigest(24, 17, 0.08, 601, 1) != serial); // the digest does see the state
    const TrafficResult one = traffic(32, 0.05, 3000, TrafficPattern::Uniform, 1);
    const TrafficResult two = traffic(32, 0.05, 3000, TrafficPattern::Uniform, 2);
    WS_CHECK_EQ(one.avgLatencyCycles, two.avgLatencyCycles);
    WS_CHECK_EQ(one.linkWavelets, two.linkWavelets);
}

namespace {

// Where a dimension-order route from (x, y) to (destX, destY) ends when walked hop by hop,
// moving as the port says; hops = -1 if it goes back to X after Y or runs past maxHops.
struct RouteWalk {
    int x = 0;
    int y = 0;
    int hops = 0;
    std::uint32_t payload = 0;
};
RouteWalk walkRoute(int x, int y, int destX, int destY, int maxHops)
{
    const int step[4][2] = { { 0, -1 }, { 0, 1 }, { 1, 0 }, { -1, 0 } }; // N, S, E, W
    Wavelet wavelet = Wavelet::dimensionOrder(x, y, destX, destY, 42);
    RouteWalk walk { x, y, 0, 0 };
    bool turned = false;
    while (wavelet.port() != Wavelet::kRampPort) {
        const int port = wavelet.port();
        turned = turned || port == North || port == South;
        if ((turned && (port == East || port == West)) || walk.hops == maxHops)
            return { walk.x, walk.y, -1, 0 };
        walk.x += step[port][0];
        walk.y += step[port][1];
        wavelet = wavelet.afterHop();
        ++walk.hops;
    }
    walk.payload = wavelet.data;
    return walk;
}

} // namespace

WS_TEST(dimensionOrderRoutesGoAlongXThenYAndEndAtTheDestination)
{
    // Every route of a 9 x 7 mesh: X first, then Y, |dx| + |dy| hops, ending on the ramp of the
    // destination with its payload intact.
    int checked = 0;
    for (int y = 0; y < 7; ++y) {
        for (int x = 0; x < 9; ++x) {
            for (int destY = 0; destY < 7; ++destY) {
                for (int destX = 0; destX < 9; ++destX) {
                    const RouteWalk walk = walkRoute(x, y, destX, destY, 20);
                    const int hops = std::abs(destX - x) + std::abs(destY - y);
                    if (walk.x != destX || walk.y != destY || walk.hops != hops || walk.payload != 42) {
                        WS_CHECK_EQ(walk.x, destX);
                        WS_CHECK_EQ(walk.y, destY);
                        WS_CHECK_EQ(walk.hops, hops);
                        WS_CHECK_EQ(walk.payload, 42u);
                        return;
                    }
                    ++checked;
                }
            }
        }
    }
    WS_CHECK_EQ(checked, 63 * 63);
    // The longest routes a tag holds, corner to corner of a 2047 x 2047 mesh both ways, and the
    // longest single legs.
    const int far = int(Wavelet::kCoordMask) - 1;
    const int corners[][4] = { { 0, 0, far, far }, { far, far, 0, 0 }, { far, 0, 0, far }, { 0, far, far, 0 },
        { 0, 5, far, 5 }, { 7, far, 7, 0 } };
    for (const auto& route : corners) {
        const RouteWalk walk = walkRoute(route[0], route[1], route[2], route[3], 2 * far);
        WS_CHECK_EQ(walk.x, route[2]);
        WS_CHECK_EQ(walk.y, route[3]);
        WS_CHECK_EQ(walk.hops, std::abs(route[2] - route[0]) + std::abs(route[3] - route[1]));
        WS_CHECK_EQ(walk.payload, 42u);
    }
}

WS_TEST(otherQueueDepthsKeepTheTheoryAndTheDeterminism)
{
    // Depth 4 has its own compiled path; these take the general one (ring slots rounded up to
    // a power of two where the depth is not one).
    for (const int depth : { 2, 3, 8 }) {
        const TrafficResult one = traffic(16, 0.02, 6000, TrafficPattern::Uniform, 1, depth);
        const TrafficResult two = traffic(16, 0.02, 6000, TrafficPattern::Uniform, 2, depth);
        WS_CHECK_NEAR(one.avgHops, 2.0 * (16 * 16 - 1) / (3.0 * 16), 0.03);
        WS_CHECK_NEAR(one.acceptedRate, one.offeredRate, 0.05);
        WS_CHECK(one.avgLatencyCycles >= one.avgHops * 0.99);
        WS_CHECK_EQ(one.avgLatencyCycles, two.avgLatencyCycles);
        WS_CHECK_EQ(one.linkWavelets, two.linkWavelets);
    }
    // A shallow queue saturates lower than a deep one: backpressure is real.
    const TrafficResult low = traffic(16, 0.4, 4000, TrafficPattern::Uniform, 1, 2);
    const TrafficResult high = traffic(16, 0.4, 4000, TrafficPattern::Uniform, 1, 16);
    WS_CHECK(low.acceptedRate < high.acceptedRate);
    WS_CHECK(high.acceptedRate <= 4.0 / 16);
}

WS_TEST(theWidestMeshKeepsItsRoutesAndItsDeterminism)
{
    // 2047 routers per row, the most a route tag can address. Below saturation (the three links
    // across the middle carry a quarter of all packets each way: rate < 0.002), the mean hops of
    // uniform traffic are (k^2 - 1) / (3k) along each dimension; saturated, every lane and list
    // of a row step is full, and two threads still give the serial run.
    TrafficConfig config;
    config.width = 2047;
    config.height = 3;
    config.rate = 0.001;
    config.cycles = 2000;
    const Expected<TrafficResult> result = runTraffic(config);
    WS_REQUIRE(result.hasValue());
    const auto meanHops = [](double k) { return (k * k - 1.0) / (3.0 * k); };
    WS_CHECK_NEAR(result->avgHops, meanHops(2047) + meanHops(3), 0.03);
    WS_CHECK_NEAR(result->offeredRate, 0.001, 0.05);
    WS_CHECK_EQ(trafficDigest(2047, 3, 0.2, 300, 2), trafficDigest(2047, 3, 0.2, 300, 1));
}

WS_TEST(routerAndLinkCountersAddUpAndCountCycles)
{
    // A saturated 12 x 10 mesh, measured from cycle 0 so that every ejection is counted. Each
    // wavelet a router moves leaves on a link or on its ramp; busy and stall cycles and link
    // stall cycles are cycles, so none exceeds the cycles run; links off the mesh carry nothing.
    const int width = 12;
    const int height = 10;
    const std::uint64_t cycles = 997;
    const auto run = [&](bool readMidway) {
        std::unique_ptr<XyFabric> fabric = trafficFabric(width, height, 0.35, cycles, 2, 0);
        std::uint64_t midway = 0;
        fabric->runWhile([&] {
            if (readMidway && fabric->cycle() == 501)
                midway = fabric->totalRoutedWavelets();
            return fabric->cycle() < cycles;
        });
        if (readMidway) { // counters read between two steps are exact, and reading them changes nothing
            WS_CHECK(midway > 0);
            WS_CHECK(midway < fabric->totalRoutedWavelets());
        }
        return fabric;
    };
    const std::unique_ptr<XyFabric> fabric = run(true);
    WS_CHECK_EQ(fabric->digest(), run(false)->digest());
    const std::uint64_t ejected = fabric->traffic()->totals().ejected;
    WS_CHECK(ejected > 0);
    WS_CHECK_EQ(fabric->totalRoutedWavelets(), fabric->totalLinkWavelets() + ejected);
    std::uint64_t linkStalls = 0;
    for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
            const auto pe = std::size_t(y * width + x);
            WS_CHECK(fabric->routerBusyCycles()[pe] <= cycles);
            WS_CHECK(fabric->routerStallCycles()[pe] <= cycles);
            for (int direction = 0; direction < kDirections; ++direction) {
                const std::uint32_t stalls = fabric->linkStallCycles()[pe * kDirections + std::size_t(direction)];
                WS_CHECK(stalls <= cycles);
                linkStalls += stalls;
                const bool offMesh = (direction == North && y == 0) || (direction == South && y == height - 1)
                    || (direction == West && x == 0) || (direction == East && x == width - 1);
                if (offMesh)
                    WS_CHECK_EQ(fabric->linkWavelets()[pe * kDirections + std::size_t(direction)], 0u);
            }
        }
    }
    WS_CHECK(linkStalls > 0); // saturated: receivers do run out of room
}

WS_TEST(badTrafficConfigurationsAreNamedErrors)
{
    const auto error = [](TrafficConfig config) {
        const Expected<TrafficResult> result = runTraffic(config);
        return result ? std::string() : result.error().format();
    };
    TrafficConfig config;
    config.rate = 1.5;
    WS_CHECK_CONTAINS(error(config), "--rate: error:");
    config = {};
    config.width = 1;
    WS_CHECK_CONTAINS(error(config), "--mesh: error:");
    config = {};
    config.cycles = 100;
    config.warmup = 100;
    WS_CHECK_CONTAINS(error(config), "--warmup: error:");
    config = {};
    config.width = 5000;
    WS_CHECK_CONTAINS(error(config), "--mesh: error:");
}
