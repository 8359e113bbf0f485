#include "core/fabric/fabric.h"

#include "core/common/memorybudget.h"
#include "core/fabric/statehasher.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace waferscope::core::fabric {

const char* directionName(int direction)
{
    static constexpr const char* names[] = { "north", "south", "east", "west", "ramp" };
    return direction >= 0 && direction <= 4 ? names[direction] : "?";
}

Fabric::Fabric(const FabricConfig& config)
    : m_config(config)
    , m_width(config.width)
    , m_height(config.height)
    , m_runner(config.height)
{
    const int maxCoord = int(Wavelet::kCoordMask);
    if (m_width < 1 || m_height < 1 || m_width > maxCoord || m_height > maxCoord)
        throw std::invalid_argument("fabric dimensions must be 1.." + std::to_string(maxCoord));
    if (config.queueDepth < 2 || config.queueDepth > 64)
        throw std::invalid_argument("queue depth must be 2..64");
    const auto pes = std::size_t(peCount());
    m_routed.assign(pes, 0);
    m_routerBusy.assign(pes, 0);
    m_routerStall.assign(pes, 0);
    m_linkWavelets.assign(pes * kDirections, 0);
    m_linkStall.assign(pes * kDirections, 0);
    for (std::vector<RowFlag>& flags : m_rowActive)
        flags.assign(std::size_t(m_height), RowFlag { 1, 0, std::int16_t(m_width) });
    m_rowSteps.assign(std::size_t(m_height), RowCount {});
}

Fabric::~Fabric() = default;

bool Fabric::rowAndNeighboursIdle(int y, int current) const
{
    const std::vector<RowFlag>& active = m_rowActive[current];
    return !active[std::size_t(y)].value && !(y > 0 && active[std::size_t(y - 1)].value)
        && !(y + 1 < m_height && active[std::size_t(y + 1)].value);
}

bool Fabric::anyRowActive() const
{
    const std::vector<RowFlag>& active = m_rowActive[currentBuffer()];
    return std::any_of(active.begin(), active.end(), [](const RowFlag& flag) { return flag.value != 0; });
}

void Fabric::setAllRowsActive()
{
    std::fill(m_rowActive[currentBuffer()].begin(), m_rowActive[currentBuffer()].end(),
        RowFlag { 1, 0, std::int16_t(m_width) });
}

std::vector<std::uint32_t> Fabric::rowStepCounts() const
{
    std::vector<std::uint32_t> counts;
    counts.reserve(m_rowSteps.size());
    for (const RowCount& count : m_rowSteps)
        counts.push_back(count.value);
    return counts;
}

std::uint64_t Fabric::totalLinkWavelets() const
{
    const CounterVector& links = linkWavelets();
    return std::accumulate(links.begin(), links.end(), std::uint64_t(0));
}

std::uint64_t Fabric::totalRoutedWavelets() const
{
    const CounterVector& routed = routedWavelets();
    return std::accumulate(routed.begin(), routed.end(), std::uint64_t(0));
}

void Fabric::hashClockAndCounters(StateHasher& hash) const
{
    hash.scalar(cycle());
    hash.scalar(currentBuffer());
    hash.vector(routedWavelets());
    hash.vector(routerBusyCycles());
    hash.vector(routerStallCycles());
    hash.vector(linkWavelets());
    hash.vector(linkStallCycles());
}

std::size_t Fabric::sharedMemoryBytes() const
{
    std::size_t bytes = (m_routed.capacity() + m_routerBusy.capacity() + m_routerStall.capacity()
                            + m_linkWavelets.capacity() + m_linkStall.capacity())
        * sizeof(std::uint32_t);
    for (const std::vector<RowFlag>& flags : m_rowActive)
        bytes += flags.capacity() * sizeof(RowFlag);
    return bytes + m_rowSteps.capacity() * sizeof(RowCount);
}

double Fabric::sharedBytesFor(const FabricConfig& config)
{
    const double pes = double(config.width) * double(config.height);
    const double rows = double(config.height);
    // Counters start on a cache line (CacheLineAllocator): up to 64 bytes more per block.
    const auto counters = [](double bytes) { return heapBlockBytes(bytes + 64.0); };
    return 3.0 * counters(pes * sizeof(std::uint32_t)) + 2.0 * counters(pes * kDirections * sizeof(std::uint32_t))
        + 2.0 * counters(rows * sizeof(RowFlag)) + counters(rows * sizeof(RowCount))
        + heapBlockBytes(rows * sizeof(double)); // BandRunner's row weights
}

} // namespace waferscope::core::fabric
