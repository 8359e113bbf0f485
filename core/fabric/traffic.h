#pragma once

#include "core/common/expected.h"
#include "core/common/names.h"
#include "core/fabric/fabric.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::core::fabric {

enum class TrafficPattern : std::uint8_t { Uniform, Transpose, Hotspot };
const char* trafficPatternName(TrafficPattern pattern); // "uniform", "transpose", "hotspot"
std::optional<TrafficPattern> parseTrafficPattern(const std::string& name);

// An open-loop synthetic-traffic run: every PE generates single-wavelet packets as a Bernoulli
// process of `rate` per cycle into an unbounded source queue; the ramp injects at most one per
// cycle when its router queue has room. Statistics cover the cycles after `warmup`.
struct TrafficConfig {
    int width = 32;
    int height = 32;
    TrafficPattern pattern = TrafficPattern::Uniform;
    double rate = 0.02; // packets per PE per cycle, 0..1
    std::uint64_t cycles = 10000; // total simulated cycles, warm-up included
    std::uint64_t warmup = 0; // 0: a quarter of `cycles`
    int threads = 1;
    int queueDepth = 4;
    std::uint64_t seed = 1;
    double hotspotFraction = 0.2; // Hotspot: share of packets sent to the centre PE
};

struct TrafficResult {
    int width = 0;
    int height = 0;
    std::uint64_t cycles = 0;
    std::uint64_t warmup = 0;
    double avgHops = 0.0; // over packets generated in the measurement window
    double avgLatencyCycles = 0.0; // generation to ejection, packets generated and ejected in the window
    double offeredRate = 0.0; // generated packets per PE per cycle in the window
    double acceptedRate = 0.0; // ejected packets per PE per cycle in the window
    std::uint64_t packetsMeasured = 0;
    double routerCyclesPerS = 0.0;
    double wallS = 0.0;
    std::uint64_t linkWavelets = 0;
};

// The most router-cycles one traffic run may take (kMaxRouterCyclesPerRun). Statistics settle
// within thousands of cycles; a longer run is refused at --cycles (the CLI took up to 4294967295
// cycles: 10 to 24 hours on 32 x 32 PEs, a year on a whole wafer).
inline constexpr double kMaxTrafficRouterCycles = kMaxRouterCyclesPerRun;

// The heap memory a run of this configuration holds: the mesh (XyFabric::estimateBytes) and the
// traffic generator's per-PE streams and per-row totals, counted before anything is allocated.
double estimateTrafficBytes(const TrafficConfig& config);

// Validates the configuration (a message on error; a mesh whose state exceeds the memory budget
// is exit 3 at --mesh) and runs it, calling `observer` (if any) every `observeEvery` cycles.
Expected<TrafficResult> runTraffic(
    const TrafficConfig& config, const FabricObserver& observer = {}, std::uint64_t observeEvery = 4096);

// Counter-based random numbers for the traffic generator.
namespace trafficrandom {

inline std::uint64_t mix(std::uint64_t value)
{
    value += 0x9e3779b97f4a7c15ull;
    value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
    value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
    return value ^ (value >> 31);
}

// The same (seed, pe, packet, stream) always gives the same bits,
// mix(mix(mix(seed ^ stream) ^ pe) ^ packet); `streamKey` is the innermost mix, and peStream()
// the middle one, the same for all of a PE's packets.
inline std::uint64_t peStream(std::uint64_t streamKey, std::int64_t pe)
{
    return mix(streamKey ^ std::uint64_t(pe));
}
inline std::uint64_t randomBits(std::uint64_t streamKey, std::int64_t pe, std::uint32_t packet)
{
    return mix(peStream(streamKey, pe) ^ packet);
}

inline double unitInterval(std::uint64_t bits)
{
    return double(bits >> 11) * 0x1.0p-53;
}

} // namespace trafficrandom

// The injection process and the measurement totals, attached to an XyFabric.
// Random numbers are a pure function of (seed, PE, packet index), so the run is identical
// for any thread count or row partition.
struct TrafficGenerator {
    TrafficGenerator(const TrafficConfig& config, std::uint64_t measureFrom, std::uint64_t measureTo);

    struct alignas(64) RowTotals { // one cache line per row: rows are written by different threads
        std::uint64_t generated = 0;
        std::uint64_t injected = 0;
        std::uint64_t hops = 0;
        std::uint64_t ejected = 0;
        std::uint64_t latencyPackets = 0;
        std::uint64_t latencySum = 0;

        RowTotals& operator+=(const RowTotals& other)
        {
            generated += other.generated;
            injected += other.injected;
            hops += other.hops;
            ejected += other.ejected;
            latencyPackets += other.latencyPackets;
            latencySum += other.latencySum;
            return *this;
        }
    };

    // A PE's gap and destination streams (trafficrandom::peStream), kept: they serve every packet.
    struct PeKeys {
        std::uint64_t gap = 0;
        std::uint64_t destination = 0;
    };
    std::uint64_t gap(const PeKeys& streams, std::uint32_t packet) const; // cycles from packet - 1 to packet
    void destination(
        const PeKeys& streams, std::int64_t pe, std::uint32_t packet, int x, int y, int& destX, int& destY) const;
    bool measuring(std::uint64_t cycle) const { return cycle >= measureFrom && cycle < measureTo; }
    RowTotals totals() const;

    TrafficPattern pattern;
    double rate;
    double logNoPacket; // log(1 - rate)
    std::uint64_t seed;
    // Random streams (numbered as they always were, so runs repeat across versions) and their keys.
    static constexpr std::uint64_t kGapStream = 1;
    static constexpr std::uint64_t kDestinationStream = 2;
    static constexpr std::uint64_t kHotspotStream = 3;
    std::uint64_t streamKeys[4]; // [stream]: mix(seed ^ stream)
    int width;
    int height;
    double hotspotFraction;
    std::uint64_t measureFrom;
    std::uint64_t measureTo;
    std::vector<std::uint64_t> headTime; // generation cycle of the next packet to inject
    std::vector<std::uint32_t> headPacket;
    std::vector<std::uint64_t> generateTime; // generation cycle of the next packet to count
    std::vector<std::uint32_t> generatePacket;
    std::vector<PeKeys> keys;
    std::vector<RowTotals> rows;
};

// Per packet, on the stepping threads' hot path: inline.
// Cycles between packet `packet - 1` and `packet` of a Bernoulli(rate) process: geometric.
inline std::uint64_t TrafficGenerator::gap(const PeKeys& streams, std::uint32_t packet) const
{
    constexpr std::uint64_t never = std::uint64_t(1) << 62;
    if (rate <= 0.0)
        return never;
    if (rate >= 1.0)
        return 1;
    const double u = 1.0 - trafficrandom::unitInterval(trafficrandom::mix(streams.gap ^ packet)); // (0, 1]
    const double cycles = std::floor(std::log(u) / logNoPacket);
    return cycles >= double(never) ? never : 1 + std::uint64_t(cycles);
}

inline void TrafficGenerator::destination(
    const PeKeys& streams, std::int64_t pe, std::uint32_t packet, int x, int y, int& destX, int& destY) const
{
    const std::uint64_t bits = trafficrandom::mix(streams.destination ^ packet);
    switch (pattern) {
    case TrafficPattern::Transpose:
        // (x, y) -> (y, x), scaled to the other side's length on a non-square mesh.
        destX = int(std::int64_t(y) * width / height);
        destY = int(std::int64_t(x) * height / width);
        return;
    case TrafficPattern::Hotspot:
        if (trafficrandom::unitInterval(trafficrandom::randomBits(streamKeys[kHotspotStream], pe, packet))
            < hotspotFraction) {
            destX = width / 2;
            destY = height / 2;
            return;
        }
        [[fallthrough]];
    case TrafficPattern::Uniform:
        destX = int(std::uint32_t(bits) % std::uint32_t(width)); // 32-bit divisions: the same values
        destY = int(std::uint32_t(bits >> 32) % std::uint32_t(height));
        return;
    }
}

} // namespace waferscope::core::fabric

namespace waferscope::core {

template <>
std::span<const EnumName<fabric::TrafficPattern>> nameTable<fabric::TrafficPattern>();

} // namespace waferscope::core
