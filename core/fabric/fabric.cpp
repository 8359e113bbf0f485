#include "core/fabric/fabric.h"

#include "core/fabric/fabricarena.h"
#include "core/fabric/traffic.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <numeric>
#include <stdexcept>

namespace waferscope::core::fabric {

Fabric::~Fabric() = default;

const char* directionName(int direction)
{
    static constexpr const char* names[] = { "north", "south", "east", "west", "ramp" };
    return direction >= 0 && direction <= 4 ? names[direction] : "?";
}

Fabric::Fabric(const FabricConfig& config)
    : m_config(config)
    , m_width(config.width)
    , m_height(config.height)
    , m_depth(config.queueDepth)
{
    const int maxCoord = int(Wavelet::kCoordMask);
    if (m_width < 1 || m_height < 1 || m_width > maxCoord || m_height > maxCoord)
        throw std::invalid_argument("fabric dimensions must be 1.." + std::to_string(maxCoord));
    if (m_depth < 2 || m_depth > 64)
        throw std::invalid_argument("queue depth must be 2..64");
    if (config.colors < 1 || config.colors > kMaxColors)
        throw std::invalid_argument("colors must be 1..24");
    if (config.simdWidth < 1)
        throw std::invalid_argument("SIMD width must be positive");
    m_queues = config.routing == Routing::DimensionOrder ? 5 : config.colors;
    m_stride = (m_queues + 7) & ~7;
    const auto pes = std::size_t(peCount());
    const auto slots = pes * std::size_t(m_stride);
    if (config.routing == Routing::DimensionOrder) {
        m_ringSlots = int(std::bit_ceil(unsigned(m_depth)));
        // Ten counter arrays (sent per outgoing link and the ramp, read per queue), the ring slot
        // planes and the pending counts: padded rows with room for a whole vector past the last
        // router, and slack for whole-vector reads past the last row.
        m_xyPitch = (std::int64_t(m_width) + 2 + 16 + 63) & ~std::int64_t(63);
        // Rows of whole pages (PageAllocator): no prefetch stream crosses from one row to the next.
        constexpr std::int64_t kPage = 4096;
        m_counterRow = (m_xyPitch * kPendingFields + kPage - 1) / kPage * kPage; // Buffer::xy uses ten fields
        m_slotRow = (m_xyPitch * m_queues * m_ringSlots + kPage - 1) / kPage * kPage; // ring slots: 8 x this
        const auto counterBytes = std::size_t(m_counterRow * (m_height + 2) + 64);
        const auto slotBytes = std::size_t(m_slotRow * (m_height + 2) + 64);
        for (Buffer& buffer : m_buffers)
            buffer.xy.assign(counterBytes, 0);
        m_queueData.resize(slotBytes);
        m_portBits.assign(slotBytes, 0);
        m_pendingCounts.assign(counterBytes, 0);
    } else {
        m_queueData.resize(pes * std::size_t(m_queues) * std::size_t(m_depth));
        m_queueHead.assign(slots, 0);
        m_queueCount.assign(slots, 0);
        m_arbiter.assign(pes, 0);
        for (Buffer& buffer : m_buffers) {
            buffer.out.assign(pes * kDirections, Wavelet {});
            buffer.occupancy.assign(slots, 0);
        }
    }
    for (Buffer& buffer : m_buffers)
        buffer.rowActive.assign(std::size_t(m_height), RowFlag { 1 });
    m_routed.assign(pes, 0);
    m_routerBusy.assign(pes, 0);
    m_routerStall.assign(pes, 0);
    m_linkWavelets.assign(pes * kDirections, 0);
    m_linkStall.assign(pes * kDirections, 0);
    m_rowSteps.assign(std::size_t(m_height), RowCount {});
    if (config.routing == Routing::StaticColor) {
        m_routeTx.assign(slots, 0);
        m_routeRx.assign(slots, 0xff);
        m_pes.resize(pes);
        for (PeState& state : m_pes)
            state.tasks.resize(std::size_t(m_queues));
    }
}

void Fabric::setRoute(int x, int y, int color, int rx, std::uint8_t txMask)
{
    if (m_config.routing != Routing::StaticColor || x < 0 || y < 0 || x >= m_width || y >= m_height || color < 0
        || color >= m_queues || rx < 0 || rx > kRampPort || txMask == 0 || txMask > 0x1f)
        throw std::invalid_argument("bad route");
    const auto slot = std::size_t(index(x, y) * m_stride + color);
    m_routeRx[slot] = std::uint8_t(rx);
    m_routeTx[slot] = txMask;
}

void Fabric::addEdgeSource(int x, int y, int from, std::vector<Wavelet> stream)
{
    const bool onEdge = (from == North && y == 0) || (from == South && y == m_height - 1) || (from == West && x == 0)
        || (from == East && x == m_width - 1);
    if (!onEdge || m_config.routing != Routing::StaticColor)
        throw std::invalid_argument("an edge source must enter through a mesh boundary link");
    if (m_edgeSourceOf.empty())
        m_edgeSourceOf.assign(std::size_t(peCount()), -1);
    m_edgeSourceOf[std::size_t(index(x, y))] = std::int32_t(m_edgeSources.size());
    m_edgeSources.push_back({ index(x, y), from, std::move(stream), 0 });
    std::fill(m_buffers[m_current].rowActive.begin(), m_buffers[m_current].rowActive.end(), RowFlag { 1 });
}

void Fabric::attachTraffic(std::unique_ptr<TrafficGenerator> traffic)
{
    if (m_config.routing != Routing::DimensionOrder)
        throw std::invalid_argument("synthetic traffic needs dimension-order routing");
    m_traffic = std::move(traffic);
}

bool Fabric::skipRow(int y, const Buffer& current, Buffer& next) const
{
    const bool needed = current.rowActive[std::size_t(y)] || (y > 0 && current.rowActive[std::size_t(y - 1)])
        || (y + 1 < m_height && current.rowActive[std::size_t(y + 1)]) || (m_traffic && m_traffic->rate > 0.0);
    if (needed)
        return false;
    // Nothing can arrive and nothing is queued: the row's next state is empty. Clear it only if
    // that buffer still holds state from two cycles ago, so an idle row costs one byte read.
    if (m_config.routing == Routing::DimensionOrder) {
        // The counters are not all zero when idle: the row's next state is its current one.
        for (int field = 0; field < 10; ++field) {
            const auto first = std::ptrdiff_t(field * m_xyPitch + counterIndex(0, y));
            std::copy_n(current.xy.begin() + first, m_width, next.xy.begin() + first);
        }
        next.rowActive[std::size_t(y)] = RowFlag { 0 };
    } else if (next.rowActive[std::size_t(y)]) {
        const auto first = std::size_t(index(0, y));
        std::fill_n(next.out.begin() + std::ptrdiff_t(first * kDirections), m_width * kDirections, Wavelet {});
        std::fill_n(next.occupancy.begin() + std::ptrdiff_t(first * std::size_t(m_stride)), m_width * m_stride, 0);
        next.rowActive[std::size_t(y)] = RowFlag { 0 };
    }
    return true;
}

void Fabric::stepRows(int rowBegin, int rowEnd)
{
    stepRows(RowRange { rowBegin, rowEnd, rowBegin, rowEnd, m_cycle, m_current });
}

void Fabric::stepRows(const RowRange& rows)
{
    const Buffer& current = m_buffers[rows.current];
    Buffer& next = m_buffers[rows.current ^ 1];
    if (m_config.routing == Routing::DimensionOrder) {
        stepRowsDimensionOrder(rows, current, next);
        return;
    }
    assert(rows.cycle == m_cycle); // tasks read the fabric's cycle
    const int rowBegin = rows.begin;
    const int rowEnd = rows.end;
    for (int y = rowBegin; y < rowEnd; ++y) {
        if (skipRow(y, current, next))
            continue;
        ++m_rowSteps[std::size_t(y)].value;
        bool active = false;
        for (int x = 0; x < m_width; ++x)
            active |= stepPeStatic(x, y, current, next);
        next.rowActive[std::size_t(y)] = RowFlag { std::uint8_t(active ? 1 : 0) };
    }
}

// One router and PE with static per-color routes: multicast, data tasks on the ramp, the PE's
// asynchronous send and off-wafer edge streams. The dimension-order path is in fabricxy.cpp.
bool Fabric::stepPeStatic(int x, int y, const Buffer& current, Buffer& next)
{
    const std::int64_t pe = index(x, y);
    const int colors = m_queues;
    const int depth = m_depth;
    const std::size_t slot = std::size_t(pe * m_stride);
    std::uint8_t* count = &m_queueCount[slot];
    std::uint8_t* head = &m_queueHead[slot];
    Wavelet* data = &m_queueData[std::size_t(pe * colors) * std::size_t(depth)];
    const auto append = [&](const Wavelet& wavelet) {
        const int color = wavelet.color();
        int position = head[color] + count[color];
        if (position >= depth)
            position -= depth;
        data[color * depth + position] = wavelet;
        ++count[color];
    };

    // 1. Arrivals: what the neighbours put on their links towards this PE last cycle. Their
    // senders checked our published occupancy, so there is room.
    const Wavelet* out = current.out.data();
    if (y > 0 && out[std::size_t(pe - m_width) * kDirections + South].valid())
        append(out[std::size_t(pe - m_width) * kDirections + South]);
    if (y + 1 < m_height && out[std::size_t(pe + m_width) * kDirections + North].valid())
        append(out[std::size_t(pe + m_width) * kDirections + North]);
    if (x > 0 && out[std::size_t(pe - 1) * kDirections + East].valid())
        append(out[std::size_t(pe - 1) * kDirections + East]);
    if (x + 1 < m_width && out[std::size_t(pe + 1) * kDirections + West].valid())
        append(out[std::size_t(pe + 1) * kDirections + West]);

    // 2. Injection: an off-wafer edge stream and the PE's asynchronous send, one wavelet each.
    bool pending = false;
    PeState& state = m_pes[std::size_t(pe)];
    if (!m_edgeSourceOf.empty() && m_edgeSourceOf[std::size_t(pe)] >= 0) {
        EdgeSource& source = m_edgeSources[std::size_t(m_edgeSourceOf[std::size_t(pe)])];
        if (source.next < source.stream.size() && count[source.stream[source.next].color()] < depth)
            append(source.stream[source.next++]);
        pending = source.next < source.stream.size();
    }
    SendStream& send = state.send;
    if (send.active()) {
        if (count[send.color] < depth) {
            append(Wavelet::colored(send.color, std::bit_cast<std::uint32_t>(state.f32[send.offset + send.next])));
            ++send.next;
        }
        pending = pending || send.active();
    }

    // 3. Switch: round-robin over the colors; a head moves when every port it needs (all of them
    // for a multicast) is free this cycle, every receiver has room and, for the ramp, the PE's
    // task for the color can take it now.
    std::uint8_t freePorts = 0x1f;
    Wavelet sent[kDirections] = {};
    bool stalled = false;
    bool moved = false;
    const std::uint8_t* occupancy = current.occupancy.data();
    const int start = m_arbiter[std::size_t(pe)];
    for (int i = 0; i < colors; ++i) {
        const int color = start + i < colors ? start + i : start + i - colors;
        if (count[color] == 0)
            continue;
        const Wavelet wavelet = data[color * depth + head[color]];
        const std::uint8_t ports = m_routeTx[slot + std::size_t(color)];
        bool ready = ports != 0 && (ports & freePorts) == ports;
        for (int direction = 0; ready && direction < kDirections; ++direction) {
            if (!(ports & directionBit(direction)))
                continue;
            static constexpr int dx[] = { 0, 0, 1, -1 };
            static constexpr int dy[] = { -1, 1, 0, 0 };
            const std::int64_t neighbour = pe + dy[direction] * m_width + dx[direction];
            const Wavelet& onLink = out[std::size_t(pe) * kDirections + std::size_t(direction)];
            const int inFlight = onLink.valid() && onLink.color() == color ? 1 : 0;
            if (occupancy[std::size_t(neighbour * m_stride + color)] + inFlight >= depth) {
                ++m_linkStall[std::size_t(pe) * kDirections + std::size_t(direction)];
                ready = false;
            }
        }
        if (ready && (ports & kRampBit)) {
            const DataTask& task = state.tasks[std::size_t(color)];
            const bool full
                = task.kind == TaskKind::FmacStream ? task.row >= task.expected : task.received >= task.expected;
            ready = state.busyUntil <= m_cycle && task.kind != TaskKind::None && !task.blocked && !full
                && (task.kind != TaskKind::AddForward || task.outColor == kNoColor || count[task.outColor] < depth);
        }
        if (!ready) {
            stalled = true;
            continue;
        }
        freePorts &= std::uint8_t(~ports);
        head[color] = std::uint8_t(head[color] + 1 == depth ? 0 : head[color] + 1);
        --count[color];
        moved = true;
        ++m_routed[std::size_t(pe)];
        for (int direction = 0; direction < kDirections; ++direction) {
            if (ports & directionBit(direction)) {
                sent[direction] = wavelet;
                ++m_linkWavelets[std::size_t(pe) * kDirections + std::size_t(direction)];
            }
        }
        if (ports & kRampBit) {
            const Wavelet emitted = executeTask(state, color, wavelet.data, m_cycle, m_config.simdWidth);
            if (emitted.valid())
                append(emitted);
        }
    }
    m_arbiter[std::size_t(pe)] = std::uint8_t(start + 1 == colors ? 0 : start + 1);
    m_routerBusy[std::size_t(pe)] += moved ? 1 : 0;
    m_routerStall[std::size_t(pe)] += stalled ? 1 : 0;

    // 4. Publish the next state that neighbours read. A task that completed this cycle may
    // have started a send, which keeps the row active although nothing was pending before.
    bool active = pending || state.send.active();
    for (int direction = 0; direction < kDirections; ++direction) {
        next.out[std::size_t(pe) * kDirections + std::size_t(direction)] = sent[direction];
        active = active || sent[direction].valid();
    }
    for (int color = 0; color < colors; ++color) {
        next.occupancy[slot + std::size_t(color)] = count[color];
        active = active || count[color] != 0;
    }
    return active;
}

} // namespace waferscope::core::fabric
