// The synthetic-traffic hot path: one row of routers with dimension-order (X then Y) routing.
//
// Same cycle semantics as the static-color path in fabric.cpp: a wavelet sent in cycle t is in
// the receiver's queue in cycle t + 1 and may leave it in that same cycle; a sender only sends
// when the receiver's queue, counting the wavelet still in flight, has room; the router serves
// its queues in round-robin order, one wavelet per output port per cycle.
//
// The representation is built for speed. A sender writes the wavelet straight into the free
// ring slot of the receiver's queue (a slot the receiver cannot be reading: the queue has room),
// with the port it will take there already computed. What the receiver must not see before the
// next cycle is the sender's count, so only the per-link counters are double buffered
// (XyCounters): a router reads its neighbours' current counters and writes only its own
// next ones. There are no output registers to copy and no arrival branches: a queue's fill is a
// bytewise difference of two counter words. The mesh is padded by a ring of idle routers, so
// edge routers need no bounds tests.
#include "core/fabric/fabric.h"

#include "core/fabric/traffic.h"

#include <array>
#include <bit>
#include <cstring>

namespace waferscope::core::fabric {

namespace {

constexpr int kQueues = 5; // input ports N, S, E, W and the ramp, indexed like Direction
constexpr std::uint64_t kLow7 = 0x7f7f7f7f7f7f7f7full; // counters count modulo 128
constexpr std::uint64_t kHigh = ~kLow7;

// Bit i set where byte i of `word` is non-zero (SWAR: no loop, no branches).
unsigned nonZeroBytes(std::uint64_t word)
{
    word |= word >> 4;
    word |= word >> 2;
    word |= word >> 1;
    word &= 0x0101010101010101ull;
    return unsigned((word * 0x0102040810204080ull) >> 56);
}

// Byte q = 1 for each bit q of a 5-bit queue mask.
constexpr std::array<std::uint64_t, 32> kMaskBytes = [] {
    std::array<std::uint64_t, 32> bytes {};
    for (unsigned mask = 0; mask < 32; ++mask)
        for (int q = 0; q < kQueues; ++q)
            if (mask & (1u << q))
                bytes[mask] |= std::uint64_t(1) << (8 * q);
    return bytes;
}();

std::uint64_t load8(const std::uint8_t* bytes)
{
    std::uint64_t word = 0;
    std::memcpy(&word, bytes, 8);
    return word;
}

struct RowStep {
    int y = 0;
    int width = 0;
    std::int64_t paddedBase = 0; // padded index of the row's first router
    std::int64_t rowStride = 0; // padded row length
    int depth = 0;
    int slots = 0;
    std::uint64_t cycle = 0;
    const XyCounters* counters = nullptr;
    XyCounters* nextCounters = nullptr;
    Wavelet* queueData = nullptr;
    const std::uint8_t* injected = nullptr;
    std::uint32_t* routed = nullptr;
    std::uint32_t* routerBusy = nullptr;
    std::uint32_t* routerStall = nullptr;
    std::uint32_t* linkWavelets = nullptr;
    std::uint32_t* linkStall = nullptr;
    const TrafficGenerator* measure = nullptr; // set when this cycle is in the measurement window
};

struct RowOutcome {
    bool active = false;
    std::uint64_t ejected = 0;
    std::uint64_t latencyPackets = 0;
    std::uint64_t latencySum = 0;
};

// One cycle of one row of routers. kDepth > 0 fixes the queue depth at compile time (the
// default depth, the hot case); 0 takes it from the row.
template <int kDepth>
RowOutcome stepRow(const RowStep& row)
{
    const unsigned depth = kDepth > 0 ? unsigned(kDepth) : unsigned(row.depth);
    const int slots = kDepth > 0 ? int(std::bit_ceil(unsigned(kDepth))) : row.slots;
    const unsigned slotMask = unsigned(slots - 1);
    const std::int64_t stride = row.rowStride;
    // Per output port: the neighbour's offset in the padded mesh, then (relative to this
    // router) the byte of the neighbour's read counter for the queue the port feeds, and the
    // ring of that queue.
    const std::int64_t offset[kDirections] = { -stride, stride, 1, -1 };
    std::int64_t readAt[kDirections];
    std::int64_t ringAt[kDirections];
    for (int port = 0; port < kDirections; ++port) {
        readAt[port] = offset[port] * std::int64_t(sizeof(XyCounters)) + 8 + opposite(port);
        ringAt[port] = (offset[port] * kQueues + opposite(port)) * slots;
    }
    const auto* __restrict counterBytes = reinterpret_cast<const std::uint8_t*>(row.counters);
    std::uint32_t* __restrict linkWavelets = row.linkWavelets;
    // Round-robin priority: the queue served first turns every cycle, the same for all routers.
    const int start = int(row.cycle % kQueues);
    RowOutcome outcome;

    for (int x = 0; x < row.width; ++x) {
        const std::int64_t p = row.paddedBase + x;
        const std::uint8_t* __restrict own = counterBytes + p * std::int64_t(sizeof(XyCounters));
        // sent: byte d per outgoing link, byte 4 the ramp; read: byte q per queue.
        std::uint64_t sent = load8(own) + (std::uint64_t(row.injected[x]) << 32);
        const std::uint64_t read = load8(own + 8);
        // What the writers of this router's queues had sent by the end of the last cycle.
        constexpr std::int64_t kSize = sizeof(XyCounters);
        const std::uint64_t written = std::uint64_t(own[-stride * kSize + South])
            | std::uint64_t(own[stride * kSize + North]) << 8 | std::uint64_t(own[kSize + West]) << 16
            | std::uint64_t(own[-kSize + East]) << 24 | (sent & (std::uint64_t(0xff) << 32));
        const std::uint64_t fill = ((written | kHigh) - read) & kLow7;
        Wavelet* __restrict data = row.queueData + p * kQueues * slots;

        // Switch over the non-empty queues in round-robin order.
        unsigned freePorts = 0x1f;
        unsigned popped = 0;
        unsigned stalled = 0;
        const unsigned nonEmpty = nonZeroBytes(fill);
        unsigned order = ((nonEmpty >> start) | (nonEmpty << (kQueues - start))) & 0x1fu;
        while (order) {
            int queue = std::countr_zero(order) + start;
            order &= order - 1;
            queue -= queue >= kQueues ? kQueues : 0;
            const Wavelet wavelet = data[queue * slots + int(unsigned(read >> (8 * queue)) & slotMask)];
            const int port = wavelet.port();
            if (!(freePorts & (1u << port))) {
                stalled = 1;
                continue;
            }
            if (port != Fabric::kRampPort) {
                const unsigned onLink = unsigned(sent >> (8 * port)) & 0x7fu;
                if (((onLink - own[readAt[port]]) & 0x7fu) >= depth) {
                    ++row.linkStall[x * kDirections + port];
                    stalled = 1;
                    continue;
                }
                data[ringAt[port] + int(onLink & slotMask)] = wavelet.afterHop();
                sent += std::uint64_t(1) << (8 * port); // at most 0x80 in that byte: no carry
                ++linkWavelets[x * kDirections + port];
            } else if (row.measure) {
                ++outcome.ejected;
                if (row.measure->measuring(wavelet.data)) {
                    ++outcome.latencyPackets;
                    outcome.latencySum += row.cycle - wavelet.data;
                }
            }
            freePorts &= ~(1u << port);
            popped |= 1u << queue;
        }
        const int moved = std::popcount(popped);
        row.routed[x] += unsigned(moved);
        row.routerBusy[x] += moved ? 1 : 0;
        row.routerStall[x] += stalled;

        // Publish this router's counters.
        const std::uint64_t nextSent = sent & kLow7;
        const std::uint64_t nextRead = (read + kMaskBytes[popped]) & kLow7;
        std::memcpy(row.nextCounters[p].sent, &nextSent, 8);
        std::memcpy(row.nextCounters[p].read, &nextRead, 8);
        outcome.active = outcome.active || fill != kMaskBytes[popped] || moved != 0;
    }
    return outcome;
}

} // namespace

// Generation (counted for the offered rate) and injection of each PE's oldest packet into its
// ramp queue, for one row: injected[x] is 1 where PE x injected this cycle. Kept apart from
// the router loop, which it would otherwise crowd out of registers.
void Fabric::injectRowDimensionOrder(int y, const Buffer& current, std::uint8_t* injected)
{
    TrafficGenerator& traffic = *m_traffic;
    const std::uint64_t cycle = m_cycle;
    const int depth = m_depth;
    const unsigned slotMask = unsigned(m_ringSlots - 1);
    TrafficGenerator::RowTotals totals;
    for (int x = 0; x < m_width; ++x) {
        const std::int64_t pe = index(x, y);
        const auto source = std::size_t(pe);
        injected[x] = 0;
        while (traffic.generateTime[source] <= cycle) {
            totals.generated += traffic.measuring(traffic.generateTime[source]) ? 1 : 0;
            traffic.generateTime[source] += traffic.gap(pe, ++traffic.generatePacket[source]);
        }
        if (traffic.headTime[source] > cycle)
            continue;
        const std::int64_t p = paddedIndex(x, y);
        const XyCounters& own = current.counters[std::size_t(p)];
        const unsigned sent = own.sent[kRampPort];
        if (((sent - own.read[kRampPort]) & 0x7fu) >= unsigned(depth))
            continue; // the ramp queue is full: the packet waits in its source queue
        int destX = 0;
        int destY = 0;
        traffic.destination(pe, traffic.headPacket[source], x, y, destX, destY);
        m_queueData[std::size_t((p * kQueues + kRampPort) * m_ringSlots + int(sent & slotMask))]
            = Wavelet::dimensionOrder(x, y, destX, destY, std::uint32_t(traffic.headTime[source]));
        injected[x] = 1;
        if (traffic.measuring(traffic.headTime[source])) {
            ++totals.injected;
            totals.hops += std::uint64_t(std::abs(destX - x) + std::abs(destY - y));
        }
        // The generation pass above has usually just computed this packet's time.
        const std::uint32_t packet = ++traffic.headPacket[source];
        traffic.headTime[source] = packet == traffic.generatePacket[source]
            ? traffic.generateTime[source]
            : traffic.headTime[source] + traffic.gap(pe, packet);
    }
    traffic.rows[std::size_t(y)] += totals;
}

void Fabric::stepRowDimensionOrder(int y, const Buffer& current, Buffer& next)
{
    std::uint8_t injected[Wavelet::kCoordMask + 1];
    if (m_traffic)
        injectRowDimensionOrder(y, current, injected);
    else
        std::memset(injected, 0, std::size_t(m_width));

    const std::int64_t rowBase = index(0, y);
    RowStep row;
    row.y = y;
    row.width = m_width;
    row.paddedBase = paddedIndex(0, y);
    row.rowStride = m_width + 2;
    row.depth = m_depth;
    row.slots = m_ringSlots;
    row.cycle = m_cycle;
    row.counters = current.counters.data();
    row.nextCounters = next.counters.data();
    row.queueData = m_queueData.data();
    row.injected = injected;
    row.routed = m_routed.data() + rowBase;
    row.routerBusy = m_routerBusy.data() + rowBase;
    row.routerStall = m_routerStall.data() + rowBase;
    row.linkWavelets = m_linkWavelets.data() + rowBase * kDirections;
    row.linkStall = m_linkStall.data() + rowBase * kDirections;
    row.measure = m_traffic && m_traffic->measuring(m_cycle) ? m_traffic.get() : nullptr;
    const RowOutcome outcome = m_depth == 4 ? stepRow<4>(row) : stepRow<0>(row);

    next.rowActive[std::size_t(y)] = RowFlag { std::uint8_t(outcome.active ? 1 : 0) };
    if (m_traffic) {
        TrafficGenerator::RowTotals& totals = m_traffic->rows[std::size_t(y)];
        totals.ejected += outcome.ejected;
        totals.latencyPackets += outcome.latencyPackets;
        totals.latencySum += outcome.latencySum;
    }
}

} // namespace waferscope::core::fabric
