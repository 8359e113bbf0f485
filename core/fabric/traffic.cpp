#include "core/fabric/traffic.h"

#include "core/common/memorybudget.h"
#include "core/fabric/xyfabric.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <limits>
#include <sstream>

namespace waferscope::core {

namespace {

constexpr EnumName<fabric::TrafficPattern> kTrafficPatterns[] = { { fabric::TrafficPattern::Uniform, "uniform" },
    { fabric::TrafficPattern::Transpose, "transpose" }, { fabric::TrafficPattern::Hotspot, "hotspot" } };
static_assert(inDeclarationOrder(kTrafficPatterns) && namesUnique(kTrafficPatterns));

} // namespace

template <>
std::span<const EnumName<fabric::TrafficPattern>> nameTable<fabric::TrafficPattern>()
{
    return kTrafficPatterns;
}

} // namespace waferscope::core

namespace waferscope::core::fabric {

using trafficrandom::mix;

namespace {

Diagnostic optionError(const std::string& option, const std::string& message)
{
    return { option, 0, 0, message };
}

} // namespace

const char* trafficPatternName(TrafficPattern pattern)
{
    return nameOf(pattern);
}

std::optional<TrafficPattern> parseTrafficPattern(const std::string& name)
{
    return fromName<TrafficPattern>(name);
}

TrafficGenerator::TrafficGenerator(const TrafficConfig& config, std::uint64_t from, std::uint64_t to)
    : pattern(config.pattern)
    , rate(config.rate)
    , logNoPacket(config.rate < 1.0 ? std::log1p(-config.rate) : 0.0)
    , seed(config.seed)
    , streamKeys { 0, mix(config.seed ^ kGapStream), mix(config.seed ^ kDestinationStream),
        mix(config.seed ^ kHotspotStream) }
    , width(config.width)
    , height(config.height)
    , hotspotFraction(config.hotspotFraction)
    , measureFrom(from)
    , measureTo(to)
{
    const auto pes = std::size_t(width) * std::size_t(height);
    headPacket.assign(pes, 0);
    generatePacket.assign(pes, 0);
    headTime.resize(pes);
    keys.resize(pes);
    for (std::size_t pe = 0; pe < pes; ++pe) {
        const auto at = std::int64_t(pe);
        keys[pe] = { trafficrandom::peStream(streamKeys[kGapStream], at),
            trafficrandom::peStream(streamKeys[kDestinationStream], at) };
        headTime[pe] = gap(keys[pe], 0) - 1; // packet 0 comes at cycle gap - 1
    }
    generateTime = headTime;
    rows.assign(std::size_t(height), RowTotals {});
}

TrafficGenerator::RowTotals TrafficGenerator::totals() const
{
    RowTotals sum;
    for (const RowTotals& row : rows)
        sum += row;
    return sum;
}

double estimateTrafficBytes(const TrafficConfig& config)
{
    FabricConfig fabric;
    fabric.width = config.width;
    fabric.height = config.height;
    fabric.queueDepth = config.queueDepth;
    const double pes = double(config.width) * double(config.height);
    // TrafficGenerator: two cycle and two packet counters and the stream keys per PE, a line of
    // totals per row.
    return XyFabric::estimateBytes(fabric) + 2.0 * heapBlockBytes(pes * sizeof(std::uint64_t))
        + 2.0 * heapBlockBytes(pes * sizeof(std::uint32_t)) + heapBlockBytes(pes * sizeof(TrafficGenerator::PeKeys))
        + heapBlockBytes(double(config.height) * sizeof(TrafficGenerator::RowTotals) + 64.0);
}

Expected<TrafficResult> runTraffic(
    const TrafficConfig& config, const FabricObserver& observer, std::uint64_t observeEvery)
{
    const int maxCoord = int(Wavelet::kCoordMask);
    if (config.width < 2 || config.height < 2 || config.width > maxCoord || config.height > maxCoord)
        return optionError("--mesh",
            "mesh " + std::to_string(config.width) + "x" + std::to_string(config.height) + " is outside 2x2.."
                + std::to_string(maxCoord) + "x" + std::to_string(maxCoord));
    if (!(config.rate >= 0.0 && config.rate <= 1.0))
        return optionError("--rate", "injection rate must be between 0 and 1 packets per PE per cycle");
    if (config.cycles < 2 || config.cycles > std::numeric_limits<std::uint32_t>::max())
        return optionError("--cycles", "cycles must be between 2 and 4294967295");
    const std::uint64_t warmup = config.warmup ? config.warmup : config.cycles / 4;
    if (warmup >= config.cycles)
        return optionError("--warmup", "warm-up must be shorter than the run");
    if (config.threads < 1 || config.threads > 1024)
        return optionError("--threads", "threads must be between 1 and 1024");
    if (config.queueDepth < 2 || config.queueDepth > 64)
        return optionError("--queue-depth", "queue depth must be between 2 and 64");
    if (!(config.hotspotFraction >= 0.0 && config.hotspotFraction <= 1.0))
        return optionError("--hotspot-fraction", "hotspot fraction must be between 0 and 1");
    const std::string mesh = std::to_string(config.width) + "x" + std::to_string(config.height);
    const double pes = double(config.width) * double(config.height);
    if (const double routerCycles = double(config.cycles) * pes; routerCycles > kMaxTrafficRouterCycles) {
        std::ostringstream message;
        message << std::setprecision(2) << config.cycles << " cycles of a " << mesh << " mesh are " << routerCycles
                << " router-cycles, more than the " << kMaxTrafficRouterCycles
                << " one run may take (under an hour on one core); this mesh runs at most "
                << std::uint64_t(kMaxTrafficRouterCycles / pes) << " cycles";
        return optionError("--cycles", message.str());
    }
    if (std::optional<Diagnostic> refused
        = checkMemory("the fabric state of a " + mesh + " mesh (queue depth " + std::to_string(config.queueDepth) + ")",
            estimateTrafficBytes(config),
            config.queueDepth > 4 ? "use a smaller --mesh or --queue-depth" : "use a smaller --mesh",
            Diagnostic { "--mesh", 0, 0, {} }))
        return *refused;

    FabricConfig fabricConfig;
    fabricConfig.width = config.width;
    fabricConfig.height = config.height;
    fabricConfig.queueDepth = config.queueDepth;
    XyFabric fabric(fabricConfig);
    fabric.setThreads(config.threads);
    fabric.attachTraffic(std::make_unique<TrafficGenerator>(config, warmup, config.cycles));

    const auto start = std::chrono::steady_clock::now();
    // Runs of `every` cycles (XyFabric::run lets bands drift apart within a run), the observer
    // between two; without an observer, one run.
    const std::uint64_t every = observer ? std::max<std::uint64_t>(1, observeEvery) : config.cycles;
    bool cancelled = false;
    while (fabric.cycle() < config.cycles) {
        const std::uint64_t stop = std::min<std::uint64_t>(config.cycles, (fabric.cycle() / every + 1) * every);
        fabric.run(stop - fabric.cycle());
        if (observer && fabric.cycle() % every == 0 && !observer(fabric)) {
            cancelled = true;
            break;
        }
    }
    if (cancelled)
        return optionError("--cycles", "run cancelled at cycle " + std::to_string(fabric.cycle()));
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    const TrafficGenerator::RowTotals totals = fabric.traffic()->totals();
    const double window = double(config.cycles - warmup) * double(fabric.peCount());
    TrafficResult result;
    result.width = config.width;
    result.height = config.height;
    result.cycles = config.cycles;
    result.warmup = warmup;
    result.avgHops = totals.injected ? double(totals.hops) / double(totals.injected) : 0.0;
    result.avgLatencyCycles = totals.latencyPackets ? double(totals.latencySum) / double(totals.latencyPackets) : 0.0;
    result.offeredRate = double(totals.generated) / window;
    result.acceptedRate = double(totals.ejected) / window;
    result.packetsMeasured = totals.latencyPackets;
    result.wallS = wall;
    result.routerCyclesPerS = wall > 0.0 ? double(config.cycles) * double(fabric.peCount()) / wall : 0.0;
    result.linkWavelets = fabric.totalLinkWavelets();
    return result;
}

} // namespace waferscope::core::fabric
