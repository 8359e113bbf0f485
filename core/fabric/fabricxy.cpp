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
// Routers decide 16 at a time, in byte vectors: which queues hold a wavelet, which port each
// queue's head wants (a byte plane per queue and ring slot holds the port bit of the wavelet in
// that slot), whose receiver has room, and the round-robin arbitration itself, which is the same
// for every router (the queue served first turns with the cycle). The same pass writes the next
// counters and the per-router statistics, as byte counts that are added to the 32-bit counters
// every few dozen cycles. Only the moves themselves are scalar: one loop over the row's granted
// queues, listed without branches, reads each head, decrements its route and writes it into the
// receiver's ring.
#include "core/fabric/fabric.h"

#include "core/fabric/traffic.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace waferscope::core::fabric {

namespace {

constexpr int kQueues = 5; // input ports N, S, E, W and the ramp, indexed like Direction
constexpr int kRamp = Fabric::kRampPort;
constexpr int kSentField = 0; // + direction, or + kRamp
constexpr int kReadField = 5; // + queue
constexpr unsigned kCounterMask = 0x7f; // counters count modulo 128
constexpr int kLanes = 16;
constexpr int kMaxWidth = int(Wavelet::kCoordMask) + 1;
// Pending byte counts (Fabric::m_pendingCounts), one plane each: a router adds at most 5 a cycle
// to any of them, so a row's counts are flushed every kFlushEvery steps of the row.
constexpr int kRoutedCount = 0;
constexpr int kBusyCount = 1;
constexpr int kStallCount = 2;
constexpr int kLinkCount = 3; // + direction
constexpr int kLinkStallCount = 7; // + direction
constexpr std::uint32_t kFlushEvery = 32;
// A granted move, as listed for the scalar pass: the router's x, and the queue above it.
constexpr int kQueueShift = 11;
static_assert(kMaxWidth <= 1 << kQueueShift);

using Bytes = std::uint8_t __attribute__((vector_size(kLanes)));
using SignedBytes = std::int8_t __attribute__((vector_size(kLanes)));

Bytes load(const std::uint8_t* at)
{
    Bytes bytes;
    std::memcpy(&bytes, at, sizeof bytes);
    return bytes;
}

void store(std::uint8_t* at, Bytes bytes)
{
    std::memcpy(at, &bytes, sizeof bytes);
}

Bytes splat(unsigned value)
{
    return Bytes {} + std::uint8_t(value);
}

// 0xff in the lanes where `bytes` is not zero.
Bytes nonZero(Bytes bytes)
{
    return (Bytes)(bytes != Bytes {});
}

// Bit i set where lane i is 0xff (lanes are 0 or 0xff).
unsigned laneBits(Bytes lanes)
{
#if defined(__SSE2__)
    __m128i vector;
    std::memcpy(&vector, &lanes, sizeof vector);
    return unsigned(_mm_movemask_epi8(vector));
#else
    unsigned bits = 0;
    for (int lane = 0; lane < kLanes; ++lane)
        bits |= unsigned(lanes[lane] >> 7) << lane;
    return bits;
#endif
}

#if defined(__SSSE3__)
// Per 8-bit lane set, the byte shuffle that packs the selected 16-bit lanes to the front.
constexpr auto kPackLanes = [] {
    std::array<std::array<std::uint8_t, 16>, 256> table {};
    for (unsigned set = 0; set < 256; ++set) {
        int packed = 0;
        for (int lane = 0; lane < 8; ++lane) {
            if (set & (1u << lane)) {
                table[set][std::size_t(2 * packed)] = std::uint8_t(2 * lane);
                table[set][std::size_t(2 * packed + 1)] = std::uint8_t(2 * lane + 1);
                ++packed;
            }
        }
        for (; packed < 8; ++packed)
            table[set][std::size_t(2 * packed)] = table[set][std::size_t(2 * packed + 1)] = 0x80;
    }
    return table;
}();
#endif

// Appends first + lane for every lane set in `bits` (16 lanes) to `list`, which has room for 16
// entries past `count`; returns the new count. No branch per lane.
int appendLanes(std::uint16_t* list, int count, unsigned bits, std::uint16_t first)
{
#if defined(__SSSE3__)
    const __m128i low = _mm_add_epi16(_mm_set1_epi16(short(first)), _mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7));
    const __m128i high = _mm_add_epi16(low, _mm_set1_epi16(8));
    __m128i pack;
    std::memcpy(&pack, kPackLanes[bits & 0xffu].data(), sizeof pack);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(list + count), _mm_shuffle_epi8(low, pack));
    count += std::popcount(bits & 0xffu);
    std::memcpy(&pack, kPackLanes[(bits >> 8) & 0xffu].data(), sizeof pack);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(list + count), _mm_shuffle_epi8(high, pack));
    return count + std::popcount((bits >> 8) & 0xffu);
#else
    for (; bits; bits &= bits - 1)
        list[count++] = std::uint16_t(first + std::countr_zero(bits));
    return count;
#endif
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

struct RowStep {
    RowCounters counters;
    int width = 0;
    int depth = 0;
    int slots = 0;
    std::uint64_t cycle = 0;
    Wavelet* rings = nullptr; // + (queue * slots + slot) * field + counter index
    std::uint8_t* portBits = nullptr; // the same
    std::uint8_t* pending = nullptr; // + count field * field + counter index
    bool northShared = false; // the row above (below) is stepped by another band at the same time
    bool southShared = false;
    const TrafficGenerator* measure = nullptr; // set when this cycle is in the measurement window
};

struct RowOutcome {
    bool active = false;
    std::uint64_t ejected = 0;
    std::uint64_t latencyPackets = 0;
    std::uint64_t latencySum = 0;
};

// The port bits of the heads of one queue of 16 routers: `planes` points at the queue's slot-0
// plane at the first router. Lanes whose queue is empty get whatever their slot holds. On a row
// whose neighbour another band steps, the queue that neighbour fills is read only where it holds
// a wavelet: elsewhere the neighbour may be writing that very slot.
template <int kSlots>
Bytes headPortBits(const std::uint8_t* planes, std::int64_t field, int slots, Bytes read, Bytes nonEmpty, bool shared)
{
    const unsigned slotMask = unsigned((kSlots > 0 ? kSlots : slots) - 1);
    if (shared) {
        static constexpr std::uint8_t kNothing = 0;
        Bytes bits {};
        for (int lane = 0; lane < kLanes; ++lane) {
            const std::uint8_t* at = planes + std::int64_t(read[lane] & slotMask) * field + lane;
            bits[lane] = *(nonEmpty[lane] ? at : &kNothing);
        }
        return bits;
    }
    const Bytes slot = read & splat(slotMask);
    Bytes bits {};
    for (int s = 0; s < (kSlots > 0 ? kSlots : slots); ++s)
        bits |= (Bytes)(slot == splat(unsigned(s))) & load(planes + s * field);
    return bits;
}

// One cycle of the routers of a row: decide every router's moves 16 at a time, write the row's
// next counters and pending statistics, then make the moves. kSlots > 0 fixes the ring size at
// compile time (the default depth, the hot case); 0 takes it from the row.
template <int kSlots>
RowOutcome switchRow(const RowStep& row, const std::uint8_t* injected, std::uint16_t* moves)
{
    const int slots = kSlots > 0 ? kSlots : row.slots;
    const RowCounters& c = row.counters;
    const std::int64_t field = c.field;
    // Per direction: the counter offset of the neighbour there.
    const std::int64_t neighbour[kDirections] = { -c.pitch, c.pitch, 1, -1 };
    const std::uint8_t* read[kQueues]; // wavelets taken from queue q
    const std::uint8_t* written[kQueues]; // wavelets put into it, by the neighbour it comes from or the ramp
    std::uint8_t* nextRead[kQueues];
    const std::uint8_t* heads[kQueues];
    bool shared[kQueues] = {};
    for (int queue = 0; queue < kQueues; ++queue) {
        read[queue] = c.current + (kReadField + queue) * field + c.first;
        nextRead[queue] = c.next + (kReadField + queue) * field + c.first;
        written[queue] = queue == kRamp
            ? c.current + (kSentField + kRamp) * field + c.first
            : c.current + (kSentField + opposite(queue)) * field + c.first + neighbour[queue];
        heads[queue] = row.portBits + queue * slots * field + c.first;
    }
    shared[North] = row.northShared;
    shared[South] = row.southShared;
    const std::uint8_t* sent[kQueues]; // wavelets sent on each link, and put into the ramp queue
    std::uint8_t* nextSent[kQueues];
    const std::uint8_t* receiverRead[kDirections]; // the neighbour's counter of the queue a link fills
    for (int port = 0; port < kQueues; ++port) {
        sent[port] = c.current + (kSentField + port) * field + c.first;
        nextSent[port] = c.next + (kSentField + port) * field + c.first;
        if (port < kDirections)
            receiverRead[port] = c.current + (kReadField + opposite(port)) * field + c.first + neighbour[port];
    }
    std::uint8_t* const pending = row.pending + c.first;
    const auto count = [&](int countField, int x0, Bytes increment) {
        std::uint8_t* at = pending + countField * field + x0;
        store(at, load(at) + increment);
    };
    // Round-robin priority: the queue served first turns every cycle, the same for all routers.
    int order[kQueues];
    const int start = int(row.cycle % kQueues);
    for (int k = 0; k < kQueues; ++k)
        order[k] = start + k < kQueues ? start + k : start + k - kQueues;

    const Bytes laneIndex = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
    const Bytes counterMask = splat(kCounterMask);
    const SignedBytes depth = (SignedBytes)splat(unsigned(row.depth));
    Bytes queued {};
    int moveCount = 0;
    for (int x0 = 0; x0 < row.width; x0 += kLanes) {
        const Bytes inRow
            = (Bytes)((SignedBytes)laneIndex < (SignedBytes)splat(unsigned(std::min(kLanes, row.width - x0))));
        const Bytes newPackets = load(injected + x0);
        Bytes readNow[kQueues];
        Bytes nonEmpty[kQueues];
        Bytes wants[kQueues]; // the port bit of each queue's head
        for (int queue = 0; queue < kQueues; ++queue) {
            readNow[queue] = load(read[queue] + x0);
            Bytes writtenNow = load(written[queue] + x0);
            if (queue == kRamp)
                writtenNow += newPackets;
            nonEmpty[queue] = (Bytes)(writtenNow != readNow[queue]) & inRow;
            queued |= nonEmpty[queue];
            wants[queue]
                = headPortBits<kSlots>(heads[queue] + x0, field, slots, readNow[queue], nonEmpty[queue], shared[queue]);
        }
        Bytes roomy = splat(1u << kRamp); // ports whose receiver has room; the PE always takes
        Bytes sentNow[kDirections];
        for (int port = 0; port < kDirections; ++port) {
            sentNow[port] = load(sent[port] + x0);
            const Bytes fill = (sentNow[port] - load(receiverRead[port] + x0)) & counterMask;
            roomy |= (Bytes)((SignedBytes)fill < depth) & splat(1u << port);
        }
        // A head moves if no queue served before it took its port and its receiver has room.
        Bytes taken {};
        Bytes blocked {}; // ports a head found free but whose receiver was full
        Bytes stalled {};
        Bytes granted[kQueues];
        for (const int queue : order) {
            const Bytes tries = (Bytes)((taken & wants[queue]) == Bytes {}) & nonEmpty[queue];
            const Bytes full = (Bytes)((roomy & wants[queue]) == Bytes {});
            granted[queue] = tries & ~full;
            taken |= granted[queue] & wants[queue];
            blocked |= tries & full & wants[queue];
            stalled |= nonEmpty[queue] & ~granted[queue];
        }

        Bytes routed {};
        for (int queue = 0; queue < kQueues; ++queue) {
            store(
                nextRead[queue] + x0, (readNow[queue] - granted[queue]) & counterMask); // granted lanes are 0xff: - -1
            routed -= granted[queue];
        }
        for (int port = 0; port < kDirections; ++port) {
            const Bytes moved = nonZero(taken & splat(1u << port));
            store(nextSent[port] + x0, (sentNow[port] - moved) & counterMask);
            count(kLinkCount + port, x0, -moved);
            count(kLinkStallCount + port, x0, -nonZero(blocked & splat(1u << port)));
        }
        store(nextSent[kRamp] + x0, (load(sent[kRamp] + x0) + newPackets) & counterMask);
        count(kRoutedCount, x0, routed);
        count(kBusyCount, x0, -nonZero(taken));
        count(kStallCount, x0, -stalled);
        for (int queue = 0; queue < kQueues; ++queue)
            moveCount
                = appendLanes(moves, moveCount, laneBits(granted[queue]), std::uint16_t(x0 | queue << kQueueShift));
    }

    RowOutcome outcome;
    outcome.active = laneBits(nonZero(queued)) != 0;
    // The moves. Each queue's ring slot planes and the receiving ones of each link, at the first
    // router of the row (the head's slot and the link's free slot then select the plane).
    const unsigned slotMask = unsigned(slots - 1);
    std::int64_t queuePlane[kQueues];
    for (int queue = 0; queue < kQueues; ++queue)
        queuePlane[queue] = queue * slots * field + c.first;
    std::int64_t receiverPlane[kDirections];
    for (int port = 0; port < kDirections; ++port)
        receiverPlane[port] = opposite(port) * slots * field + c.first + neighbour[port];
    // Locals only: the byte stores below could alias anything reached through a reference.
    Wavelet* __restrict rings = row.rings;
    std::uint8_t* __restrict portBits = row.portBits;
    const TrafficGenerator* measure = row.measure;
    const std::uint64_t cycle = row.cycle;
    for (int i = 0; i < moveCount; ++i) {
        const int x = moves[i] & ((1 << kQueueShift) - 1);
        const int queue = moves[i] >> kQueueShift;
        const std::int64_t head = std::int64_t(read[queue][x] & slotMask);
        const Wavelet wavelet = rings[queuePlane[queue] + head * field + x];
        const int port = wavelet.port();
        if (port == kRamp) {
            if (measure) {
                ++outcome.ejected;
                if (measure->measuring(wavelet.data)) {
                    ++outcome.latencyPackets;
                    outcome.latencySum += cycle - wavelet.data;
                }
            }
            continue;
        }
        const std::int64_t to = receiverPlane[port] + std::int64_t(sent[port][x] & slotMask) * field + x;
        const Wavelet hopped = wavelet.afterHop();
        rings[to] = hopped;
        portBits[to] = std::uint8_t(1u << hopped.port());
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
    std::uint16_t due[kMaxWidth];
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
        const Wavelet wavelet = Wavelet::dimensionOrder(x, y, destX, destY, std::uint32_t(traffic.headTime[source]));
        const auto slot = std::size_t(slotPlane(kRamp, int(sent & slotMask)) + at);
        m_queueData[slot] = wavelet;
        m_portBits[slot] = std::uint8_t(1u << wavelet.port());
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

void Fabric::stepRowDimensionOrder(int y, const Buffer& current, Buffer& next, bool northShared, bool southShared)
{
    RowStep row;
    row.counters = { current.xy.data(), next.xy.data(), m_xyField, counterIndex(0, y), m_xyPitch };
    row.width = m_width;
    row.depth = m_depth;
    row.slots = m_ringSlots;
    row.cycle = m_cycle;
    row.rings = m_queueData.data();
    row.portBits = m_portBits.data();
    row.pending = m_pendingCounts.data();
    row.northShared = northShared;
    row.southShared = southShared;
    row.measure = m_traffic && m_traffic->measuring(m_cycle) ? m_traffic.get() : nullptr;

    std::uint8_t injected[kMaxWidth + kLanes];
    std::memset(injected, 0, std::size_t(m_width) + kLanes); // the vector pass reads whole vectors
    if (m_traffic)
        injectRowDimensionOrder(y, current, injected);
    std::uint16_t moves[kQueues * kMaxWidth + kLanes];
    const RowOutcome outcome
        = m_ringSlots == 4 ? switchRow<4>(row, injected, moves) : switchRow<0>(row, injected, moves);
    if (m_rowSteps[std::size_t(y)].value % kFlushEvery == 0)
        flushPendingCounts(y);

    next.rowActive[std::size_t(y)] = RowFlag { std::uint8_t(outcome.active ? 1 : 0) };
    if (m_traffic) {
        TrafficGenerator::RowTotals& totals = m_traffic->rows[std::size_t(y)];
        totals.ejected += outcome.ejected;
        totals.latencyPackets += outcome.latencyPackets;
        totals.latencySum += outcome.latencySum;
    }
}

void Fabric::flushPendingCounts(int y) const
{
    static_assert(kPendingFields == kLinkStallCount + kDirections);
    std::uint8_t* pending = m_pendingCounts.data() + counterIndex(0, y);
    const auto count = [&](int countField, int x) { return pending[countField * m_xyField + x]; };
    const std::int64_t first = index(0, y);
    for (int x = 0; x < m_width; ++x) {
        const auto pe = std::size_t(first + x);
        m_routed[pe] += count(kRoutedCount, x);
        m_routerBusy[pe] += count(kBusyCount, x);
        m_routerStall[pe] += count(kStallCount, x);
        for (int direction = 0; direction < kDirections; ++direction) {
            m_linkWavelets[pe * kDirections + std::size_t(direction)] += count(kLinkCount + direction, x);
            m_linkStall[pe * kDirections + std::size_t(direction)] += count(kLinkStallCount + direction, x);
        }
    }
    for (int countField = 0; countField < kPendingFields; ++countField)
        std::memset(pending + countField * m_xyField, 0, std::size_t(m_width));
}

const CounterVector& Fabric::settled(const CounterVector& counters) const
{
    if (m_countsPending) {
        for (int y = 0; y < m_height; ++y)
            flushPendingCounts(y);
        m_countsPending = false;
    }
    return counters;
}

} // namespace waferscope::core::fabric
