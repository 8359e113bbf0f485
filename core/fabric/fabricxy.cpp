// The synthetic-traffic hot path: one row of routers with dimension-order (X then Y) routing.
//
// Same cycle semantics as the static-color path in fabric.cpp: a wavelet sent in cycle t is in
// the receiver's queue in cycle t + 1 and may leave it in that same cycle; a sender only sends
// when the receiver's queue, counting the wavelet still in flight, has room; the router serves
// its queues in round-robin order, one wavelet per output port per cycle.
//
// The representation is built for speed. A sender writes the wavelet straight into the free
// ring slot of the receiver's queue (a slot the receiver cannot be reading: the queue has
// room), with its route, so the next router only decrements a hop count. What the receiver must
// not see before the next cycle is the sender's count, so only per-link counters are double
// buffered, as ten byte arrays over the padded mesh (Buffer::xy):
//
//   field d     (d < 4)  wavelets the router has sent on its link in direction d,
//   field 4              wavelets it has put into its own ramp queue,
//   field 5 + q          wavelets it has taken from its queue q (N, S, E, W, ramp),
//
// each counting modulo 128, so queue q of a router holds (writer's sent - read) & 127
// wavelets. A router reads its neighbours' current counters and writes only its own next ones;
// the padding ring of idle routers spares edge routers any bounds test.
//
// A row is stepped in phases: inject new packets (traffic); compute every router's queue
// fills, 16 routers per vector operation, and list the routers with anything queued; switch
// only those, one scalar loop over the list that notes which queues each router took from and
// on which links it sent; then compute the row's next counters, again 16 routers at a time.
#include "core/fabric/fabric.h"

#include "core/fabric/traffic.h"

#include <array>
#include <bit>
#include <cstring>

namespace waferscope::core::fabric {

namespace {

constexpr int kQueues = 5; // input ports N, S, E, W and the ramp, indexed like Direction
constexpr int kRamp = Fabric::kRampPort;
constexpr int kSentField = 0; // + direction, or + kRamp
constexpr int kReadField = 5; // + queue
constexpr unsigned kCounterMask = 0x7f; // counters count modulo 128
constexpr int kLanes = 16;

using Bytes = std::uint8_t __attribute__((vector_size(kLanes)));

// Per 5-bit set of non-empty queues: 1 where it holds exactly one queue, or several.
constexpr auto kOneQueue = [] {
    std::array<std::uint8_t, 32> table {};
    for (unsigned set = 0; set < 32; ++set)
        table[set] = std::popcount(set) == 1 ? 1 : 0;
    return table;
}();
constexpr auto kSeveralQueues = [] {
    std::array<std::uint8_t, 32> table {};
    for (unsigned set = 0; set < 32; ++set)
        table[set] = std::popcount(set) > 1 ? 1 : 0;
    return table;
}();

Bytes loadBytes(const std::uint8_t* at)
{
    Bytes bytes;
    std::memcpy(&bytes, at, sizeof bytes);
    return bytes;
}

// What the routers of a row need from the counters, per row: where each field of the router at
// x = 0 lives in the current and next arrays.
struct RowCounters {
    const std::uint8_t* current = nullptr;
    std::uint8_t* next = nullptr;
    std::int64_t field = 0; // length of one field array
    std::int64_t first = 0; // counter index of the row's first router
    std::int64_t pitch = 0; // padded row length of a field array
};

// Per router of a row, filled by the phases of one cycle.
struct RowScratch {
    static constexpr int kSize = int(Wavelet::kCoordMask) + 1 + kLanes; // whole vectors past the row
    std::uint8_t injected[kSize]; // 1 where the PE put a packet into its ramp queue
    std::uint8_t nonEmpty[kSize]; // bit q: queue q holds a wavelet
    std::uint8_t popped[kSize]; // bit q: a wavelet left queue q
    std::uint8_t sent[kSize]; // bit d: a wavelet left on the link in direction d
    // The x of each router with one queue holding wavelets, then of each with several.
    std::uint16_t single[kSize];
    std::uint16_t several[kSize];
    int singles = 0;
    int severals = 0;
};

struct RowStep {
    RowCounters counters;
    int width = 0;
    std::int64_t dataFirst = 0; // padded index of the row's first router in the queue rings
    std::int64_t rowStride = 0; // padded row length of the queue rings
    int depth = 0;
    int slots = 0;
    std::uint64_t cycle = 0;
    Wavelet* queueData = nullptr;
    std::uint32_t* routed = nullptr; // this row's, like the counters below
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

// The routers of a row with anything queued (x, in order: those with one non-empty queue and
// those with several) and each one's non-empty queues, 16 routers per step; clears their
// popped and sent notes. The written counts come from the
// writers' current sent counters, plus this cycle's injections for the ramp queue.
void listBusyRouters(const RowStep& row, RowScratch& scratch)
{
    const RowCounters& c = row.counters;
    const std::int64_t stride = c.pitch;
    const std::uint8_t* writers[kQueues] = {
        c.current + (kSentField + South) * c.field + c.first - stride, // north neighbour, sending south
        c.current + (kSentField + North) * c.field + c.first + stride,
        c.current + (kSentField + West) * c.field + c.first + 1,
        c.current + (kSentField + East) * c.field + c.first - 1,
        c.current + (kSentField + kRamp) * c.field + c.first,
    };
    const Bytes mask = Bytes {} + std::uint8_t(kCounterMask);
    const Bytes zero = Bytes {};
    scratch.singles = 0;
    scratch.severals = 0;
    for (int x0 = 0; x0 < row.width; x0 += kLanes) {
        Bytes bits = zero;
        for (int queue = 0; queue < kQueues; ++queue) {
            Bytes written = loadBytes(writers[queue] + x0);
            if (queue == kRamp)
                written += loadBytes(scratch.injected + x0);
            const Bytes read = loadBytes(c.current + (kReadField + queue) * c.field + c.first + x0);
            const Bytes filled = (Bytes)(((written - read) & mask) != zero); // 0xff per lane with wavelets
            bits |= filled & std::uint8_t(1u << queue);
        }
        std::memcpy(scratch.nonEmpty + x0, &bits, sizeof bits);
        std::memcpy(scratch.popped + x0, &zero, sizeof zero);
        std::memcpy(scratch.sent + x0, &zero, sizeof zero);
        const int lanes = std::min(kLanes, row.width - x0);
        for (int lane = 0; lane < lanes; ++lane) { // appends without branches: a table, not a test
            scratch.single[scratch.singles] = std::uint16_t(x0 + lane);
            scratch.several[scratch.severals] = std::uint16_t(x0 + lane);
            scratch.singles += kOneQueue[bits[lane]];
            scratch.severals += kSeveralQueues[bits[lane]];
        }
    }
}

// The row's next counters: the current ones plus what the switch and the injection noted.
void publishCounters(const RowStep& row, const RowScratch& scratch)
{
    const RowCounters& c = row.counters;
    const Bytes mask = Bytes {} + std::uint8_t(kCounterMask);
    const Bytes one = Bytes {} + std::uint8_t(1);
    for (int x0 = 0; x0 < row.width; x0 += kLanes) {
        const Bytes popped = loadBytes(scratch.popped + x0);
        const Bytes sent = loadBytes(scratch.sent + x0);
        const auto publish = [&](int field, Bytes increment) {
            const std::int64_t at = field * c.field + c.first + x0;
            const Bytes value = (loadBytes(c.current + at) + increment) & mask;
            if (row.width - x0 >= kLanes)
                std::memcpy(c.next + at, &value, sizeof value);
            else // the last, partial vector: the bytes past the row belong to the next row
                std::memcpy(c.next + at, &value, std::size_t(row.width - x0));
        };
        for (int queue = 0; queue < kQueues; ++queue)
            publish(kReadField + queue, (popped >> queue) & one);
        for (int direction = 0; direction < kDirections; ++direction)
            publish(kSentField + direction, (sent >> direction) & one);
        publish(kSentField + kRamp, loadBytes(scratch.injected + x0));
    }
}

// One cycle of the routers of a row with anything queued. kDepth > 0 fixes the queue depth at
// compile time (the default depth, the hot case); 0 takes it from the row. Routers with one
// non-empty queue (most of them) take a path without the round-robin loop, whose length would
// be a branch the processor cannot predict.
template <int kDepth>
RowOutcome switchRow(const RowStep& row, RowScratch& scratch)
{
    const unsigned depth = kDepth > 0 ? unsigned(kDepth) : unsigned(row.depth);
    const int slots = kDepth > 0 ? int(std::bit_ceil(unsigned(kDepth))) : row.slots;
    const unsigned slotMask = unsigned(slots - 1);
    const RowCounters& c = row.counters;
    // Per output port, relative to this router: the neighbour's read counter of the queue the
    // port feeds, and that queue's ring.
    const std::int64_t counterOffset[kDirections] = { -c.pitch, c.pitch, 1, -1 };
    const std::int64_t dataOffset[kDirections] = { -row.rowStride, row.rowStride, 1, -1 };
    std::int64_t neighbourRead[kDirections];
    std::int64_t neighbourRing[kDirections];
    for (int port = 0; port < kDirections; ++port) {
        neighbourRead[port] = (kReadField + opposite(port)) * c.field + counterOffset[port];
        neighbourRing[port] = (dataOffset[port] * kQueues + opposite(port)) * slots;
    }
    const std::uint8_t* __restrict current = c.current;
    std::uint32_t* __restrict linkWavelets = row.linkWavelets;
    RowOutcome outcome;
    outcome.active = scratch.singles + scratch.severals > 0;

    // Moves the head wavelet of `queue` of router x if its output port is still free this cycle
    // and the receiver has room; false is a stall.
    const auto serve = [&](int x, int queue, unsigned& freePorts) {
        const std::int64_t p = c.first + x;
        Wavelet* __restrict data = row.queueData + (row.dataFirst + x) * kQueues * slots;
        const unsigned read = current[(kReadField + queue) * c.field + p];
        const Wavelet wavelet = data[queue * slots + int(read & slotMask)];
        const int port = wavelet.port();
        if (!(freePorts & (1u << port)))
            return false;
        if (port != kRamp) {
            const unsigned onLink = current[(kSentField + port) * c.field + p];
            if (((onLink - current[neighbourRead[port] + p]) & kCounterMask) >= depth) {
                ++row.linkStall[x * kDirections + port];
                return false;
            }
            data[neighbourRing[port] + int(onLink & slotMask)] = wavelet.afterHop();
            ++linkWavelets[x * kDirections + port];
        } else if (row.measure) {
            ++outcome.ejected;
            if (row.measure->measuring(wavelet.data)) {
                ++outcome.latencyPackets;
                outcome.latencySum += row.cycle - wavelet.data;
            }
        }
        freePorts &= ~(1u << port);
        return true;
    };
    const auto finish = [&](int x, unsigned popped, unsigned freePorts, unsigned stalled) {
        scratch.popped[x] = std::uint8_t(popped);
        scratch.sent[x] = std::uint8_t(~freePorts & 0xfu);
        const int moved = std::popcount(popped);
        row.routed[x] += unsigned(moved);
        row.routerBusy[x] += moved ? 1 : 0;
        row.routerStall[x] += stalled;
    };

    for (int i = 0; i < scratch.singles; ++i) {
        const int x = scratch.single[i];
        const int queue = std::countr_zero(unsigned(scratch.nonEmpty[x]));
        unsigned freePorts = 0x1f;
        const unsigned moved = serve(x, queue, freePorts) ? 1u : 0u;
        finish(x, moved << queue, freePorts, moved ^ 1u);
    }
    // Round-robin priority: the queue served first turns every cycle, the same for all routers.
    const int start = int(row.cycle % kQueues);
    for (int i = 0; i < scratch.severals; ++i) {
        const int x = scratch.several[i];
        const unsigned nonEmpty = scratch.nonEmpty[x];
        unsigned order = ((nonEmpty >> start) | (nonEmpty << (kQueues - start))) & 0x1fu;
        unsigned freePorts = 0x1f;
        unsigned popped = 0;
        unsigned stalled = 0;
        while (order) {
            int queue = std::countr_zero(order) + start;
            order &= order - 1;
            queue -= queue >= kQueues ? kQueues : 0;
            if (serve(x, queue, freePorts))
                popped |= 1u << queue;
            else
                stalled = 1;
        }
        finish(x, popped, freePorts, stalled);
    }
    return outcome;
}

} // namespace

// Generation (counted for the offered rate) and injection of each PE's oldest packet into its
// ramp queue, for one row: sets injected[x] (cleared by the caller) where PE x injected.
void Fabric::injectRowDimensionOrder(int y, const Buffer& current, std::uint8_t* injected)
{
    TrafficGenerator& traffic = *m_traffic;
    const std::uint64_t cycle = m_cycle;
    const unsigned depth = unsigned(m_depth);
    const unsigned slotMask = unsigned(m_ringSlots - 1);
    const std::uint8_t* rampSent = current.xy.data() + (kSentField + kRamp) * m_xyField;
    const std::uint8_t* rampRead = current.xy.data() + (kReadField + kRamp) * m_xyField;
    TrafficGenerator::RowTotals totals;
    // The PEs with a packet due: the oldest packet waiting is never younger than the next one to
    // be generated, so nothing else has anything to do. Listed without a branch per PE.
    const std::uint64_t* headTime = traffic.headTime.data() + index(0, y);
    std::uint16_t due[Wavelet::kCoordMask + 1];
    int dueCount = 0;
    for (int x = 0; x < m_width; ++x) {
        due[dueCount] = std::uint16_t(x);
        dueCount += headTime[x] <= cycle ? 1 : 0;
    }
    for (int i = 0; i < dueCount; ++i) {
        const int x = due[i];
        const std::int64_t pe = index(x, y);
        const auto source = std::size_t(pe);
        while (traffic.generateTime[source] <= cycle) {
            totals.generated += traffic.measuring(traffic.generateTime[source]) ? 1 : 0;
            traffic.generateTime[source] += traffic.gap(pe, ++traffic.generatePacket[source]);
        }
        const std::int64_t at = counterIndex(x, y);
        const unsigned sent = rampSent[at];
        if (((sent - rampRead[at]) & kCounterMask) >= depth)
            continue; // the ramp queue is full: the packet waits in its source queue
        int destX = 0;
        int destY = 0;
        traffic.destination(pe, traffic.headPacket[source], x, y, destX, destY);
        m_queueData[std::size_t((paddedIndex(x, y) * kQueues + kRamp) * m_ringSlots + int(sent & slotMask))]
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
    RowStep row;
    row.counters = { current.xy.data(), next.xy.data(), m_xyField, counterIndex(0, y), m_xyPitch };
    row.dataFirst = paddedIndex(0, y);
    row.width = m_width;
    row.rowStride = m_width + 2;
    row.depth = m_depth;
    row.slots = m_ringSlots;
    row.cycle = m_cycle;
    row.queueData = m_queueData.data();
    const std::int64_t rowBase = index(0, y);
    row.routed = m_routed.data() + rowBase;
    row.routerBusy = m_routerBusy.data() + rowBase;
    row.routerStall = m_routerStall.data() + rowBase;
    row.linkWavelets = m_linkWavelets.data() + rowBase * kDirections;
    row.linkStall = m_linkStall.data() + rowBase * kDirections;
    row.measure = m_traffic && m_traffic->measuring(m_cycle) ? m_traffic.get() : nullptr;

    RowScratch scratch;
    std::memset(scratch.injected, 0, std::size_t(m_width) + kLanes); // the vector phases read whole vectors
    if (m_traffic)
        injectRowDimensionOrder(y, current, scratch.injected);
    listBusyRouters(row, scratch);
    const RowOutcome outcome = m_depth == 4 ? switchRow<4>(row, scratch) : switchRow<0>(row, scratch);
    publishCounters(row, scratch);

    next.rowActive[std::size_t(y)] = RowFlag { std::uint8_t(outcome.active ? 1 : 0) };
    if (m_traffic) {
        TrafficGenerator::RowTotals& totals = m_traffic->rows[std::size_t(y)];
        totals.ejected += outcome.ejected;
        totals.latencyPackets += outcome.latencyPackets;
        totals.latencySum += outcome.latencySum;
    }
}

} // namespace waferscope::core::fabric
