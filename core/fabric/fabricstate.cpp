// Fabric queries that read the whole state: route validation, totals, digest, memory.
#include "core/fabric/fabric.h"

#include "core/fabric/traffic.h"

#include <bit>
#include <cstring>
#include <numeric>

namespace waferscope::core::fabric {

namespace {

std::string at(int x, int y)
{
    return "(" + std::to_string(x) + ", " + std::to_string(y) + ")";
}

// FNV-1a over raw bytes, then a final avalanche: enough to tell two states apart.
struct Hasher {
    std::uint64_t value = 1469598103934665603ull;
    void bytes(const void* data, std::size_t size)
    {
        const auto* p = static_cast<const unsigned char*>(data);
        for (std::size_t i = 0; i < size; ++i)
            value = (value ^ p[i]) * 1099511628211ull;
    }
    template <typename T, typename Allocator>
    void vector(const std::vector<T, Allocator>& values)
    {
        bytes(values.data(), values.size() * sizeof(T));
    }
    template <typename T>
    void scalar(const T& item)
    {
        bytes(&item, sizeof(T));
    }
};

} // namespace

std::optional<std::string> Fabric::validateRoutes() const
{
    if (m_config.routing != Routing::StaticColor)
        return std::nullopt;
    for (int y = 0; y < m_height; ++y) {
        for (int x = 0; x < m_width; ++x) {
            const std::int64_t pe = index(x, y);
            for (int color = 0; color < m_queues; ++color) {
                const auto slot = std::size_t(pe * m_stride + color);
                const int rx = m_routeRx[slot];
                if (rx == 0xff)
                    continue;
                const std::string where = "color " + std::to_string(color) + " at " + at(x, y);
                const std::uint8_t tx = m_routeTx[slot];
                for (int direction = 0; direction < kDirections; ++direction) {
                    if (!(tx & directionBit(direction)))
                        continue;
                    const int nx = x + (direction == East) - (direction == West);
                    const int ny = y + (direction == South) - (direction == North);
                    if (nx < 0 || ny < 0 || nx >= m_width || ny >= m_height)
                        return where + " is sent " + directionName(direction) + " off the mesh";
                    if (m_routeRx[std::size_t(index(nx, ny) * m_stride + color)] != opposite(direction))
                        return where + " is sent " + directionName(direction) + " but " + at(nx, ny)
                            + " does not receive it from the " + directionName(opposite(direction));
                }
                if ((tx & kRampBit) && m_pes[std::size_t(pe)].tasks[std::size_t(color)].kind == TaskKind::None)
                    return where + " is delivered to the PE but no data task is bound to it";
                if (rx == kRampPort)
                    continue;
                const int nx = x + (rx == East) - (rx == West);
                const int ny = y + (rx == South) - (rx == North);
                const bool fromNeighbour = nx >= 0 && ny >= 0 && nx < m_width && ny < m_height
                    && (m_routeTx[std::size_t(index(nx, ny) * m_stride + color)] & directionBit(opposite(rx)));
                bool fromEdge = false;
                if (!m_edgeSourceOf.empty() && m_edgeSourceOf[std::size_t(pe)] >= 0)
                    fromEdge = m_edgeSources[std::size_t(m_edgeSourceOf[std::size_t(pe)])].from == rx;
                if (!fromNeighbour && !fromEdge)
                    return where + " is received from the " + directionName(rx) + " but nothing sends it there";
            }
            const PeState& state = m_pes[std::size_t(pe)];
            const auto rampColor = [&](int color) {
                return color >= 0 && color < m_queues && m_routeRx[std::size_t(pe * m_stride + color)] == kRampPort;
            };
            if (state.send.color != kNoColor && !rampColor(state.send.color))
                return "the send of " + at(x, y) + " uses color " + std::to_string(state.send.color)
                    + ", which is not routed from its ramp";
            for (const DataTask& task : state.tasks) {
                if (task.kind == TaskKind::AddForward && task.outColor != kNoColor && !rampColor(task.outColor))
                    return "a task of " + at(x, y) + " forwards on color " + std::to_string(task.outColor)
                        + ", which is not routed from its ramp";
                if (task.then == ActionKind::StartSend && !rampColor(task.thenColor))
                    return "a task of " + at(x, y) + " starts a send on color " + std::to_string(task.thenColor)
                        + ", which is not routed from its ramp";
            }
        }
    }
    return std::nullopt;
}

int Fabric::pendingResults() const
{
    int pending = 0;
    for (const PeState& state : m_pes)
        pending += state.pendingResults;
    return pending;
}

bool Fabric::quiescent() const
{
    const Buffer& current = m_buffers[m_current];
    for (std::uint8_t active : current.rowActive)
        if (active)
            return false;
    for (const PeState& state : m_pes)
        if (state.send.active() || state.busyUntil > m_cycle)
            return false;
    for (const EdgeSource& source : m_edgeSources)
        if (source.next < source.stream.size())
            return false;
    return !(m_traffic && m_traffic->rate > 0.0);
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

std::uint64_t Fabric::digest() const
{
    Hasher hash;
    hash.scalar(m_cycle);
    hash.scalar(m_current);
    hash.vector(m_arbiter);
    const Buffer& current = m_buffers[m_current];
    // Queue slots outside the live part of a ring hold stale data; only live entries count.
    if (m_config.routing == Routing::DimensionOrder) {
        const std::int64_t writer[5] = { -m_counterRow, m_counterRow, 1, -1, 0 }; // who fills queue N, S, E, W, ramp
        const auto counter
            = [&](int field, std::int64_t pe) { return current.xy[std::size_t(field * m_xyPitch + pe)]; };
        for (int y = 0; y < m_height; ++y) {
            for (int x = 0; x < m_width; ++x) {
                const std::int64_t at = counterIndex(x, y);
                for (int field = 0; field < 10; ++field)
                    hash.scalar(counter(field, at));
                for (int queue = 0; queue < m_queues; ++queue) {
                    const int sentBy = queue == kRampPort ? kRampPort : opposite(queue);
                    const unsigned read = counter(5 + queue, at);
                    const unsigned written = counter(sentBy, at + writer[queue]);
                    for (unsigned i = read; i != written; i = (i + 1) & 0x7fu)
                        hash.scalar(m_queueData[std::size_t(
                            slotPlane(queue, int(i & unsigned(m_ringSlots - 1))) + slotIndex(x, y))]);
                }
            }
        }
    } else {
        hash.vector(m_queueHead);
        hash.vector(m_queueCount);
        for (std::int64_t pe = 0; pe < peCount(); ++pe) {
            for (int queue = 0; queue < m_queues; ++queue) {
                const auto slot = std::size_t(pe * m_stride + queue);
                const auto ring = std::size_t(pe * m_queues + queue) * std::size_t(m_depth);
                for (int i = 0; i < m_queueCount[slot]; ++i)
                    hash.scalar(m_queueData[ring + std::size_t((m_queueHead[slot] + i) % m_depth)]);
            }
        }
        hash.vector(current.out);
        hash.vector(current.occupancy);
    }
    hash.vector(routedWavelets());
    hash.vector(routerBusyCycles());
    hash.vector(routerStallCycles());
    hash.vector(linkWavelets());
    hash.vector(linkStallCycles());
    for (const PeState& state : m_pes) {
        hash.vector(state.f32);
        hash.scalar(state.busyUntil);
        hash.scalar(state.busyCycles);
        hash.scalar(state.fmacs);
        hash.scalar(state.doneAt);
        hash.scalar(state.send.next);
        for (const DataTask& task : state.tasks) {
            hash.scalar(task.received);
            hash.scalar(task.row);
            hash.scalar(task.blocked);
        }
    }
    if (m_traffic) {
        hash.vector(m_traffic->headTime);
        hash.vector(m_traffic->headPacket);
        hash.vector(m_traffic->generateTime);
        const TrafficGenerator::RowTotals totals = m_traffic->totals(); // fields only: it has padding
        for (const std::uint64_t value : { totals.generated, totals.injected, totals.hops, totals.ejected,
                 totals.latencyPackets, totals.latencySum })
            hash.scalar(value);
    }
    return hash.value ^ (hash.value >> 29);
}

std::size_t Fabric::memoryBytes() const
{
    std::size_t bytes = m_queueData.capacity() * sizeof(Wavelet) + m_queueHead.capacity() + m_queueCount.capacity()
        + m_arbiter.capacity() + m_routeTx.capacity() + m_routeRx.capacity() + m_portBits.capacity()
        + m_pendingCounts.capacity();
    for (const Buffer& buffer : m_buffers)
        bytes += buffer.out.capacity() * sizeof(Wavelet) + buffer.occupancy.capacity() + buffer.xy.capacity()
            + buffer.rowActive.capacity() * sizeof(RowFlag);
    bytes += (m_routed.capacity() + m_routerBusy.capacity() + m_routerStall.capacity() + m_linkWavelets.capacity()
                 + m_linkStall.capacity())
        * sizeof(std::uint32_t);
    for (const PeState& state : m_pes)
        bytes += sizeof(PeState) + state.tasks.capacity() * sizeof(DataTask) + state.f32.capacity() * 4
            + state.f16.capacity() * 2;
    return bytes;
}

} // namespace waferscope::core::fabric
