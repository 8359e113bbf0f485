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
#include <cstddef>
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

static_assert(std::endian::native == std::endian::little && sizeof(Wavelet) == 8 && offsetof(Wavelet, tag) == 4,
    "the move loop handles a wavelet as one 64-bit word with the tag in its upper half");

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

// Appends first + lane + (high[lane] << kQueueShift) for every lane set in `bits` (16 lanes) to
// `list`, which has room for 16 entries past `count`; returns the new count. No branch per lane.
int appendLanes(std::uint16_t* list, int count, unsigned bits, std::uint16_t first, Bytes high)
{
#if defined(__SSSE3__)
    __m128i above;
    std::memcpy(&above, &high, sizeof above);
    const __m128i lanes = _mm_add_epi16(_mm_set1_epi16(short(first)), _mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7));
    const __m128i zero = _mm_setzero_si128();
    const __m128i low8 = _mm_add_epi16(lanes, _mm_slli_epi16(_mm_unpacklo_epi8(above, zero), kQueueShift));
    const __m128i high8 = _mm_add_epi16(
        _mm_add_epi16(lanes, _mm_set1_epi16(8)), _mm_slli_epi16(_mm_unpackhi_epi8(above, zero), kQueueShift));
    __m128i pack;
    std::memcpy(&pack, kPackLanes[bits & 0xffu].data(), sizeof pack);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(list + count), _mm_shuffle_epi8(low8, pack));
    count += std::popcount(bits & 0xffu);
    std::memcpy(&pack, kPackLanes[(bits >> 8) & 0xffu].data(), sizeof pack);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(list + count), _mm_shuffle_epi8(high8, pack));
    return count + std::popcount((bits >> 8) & 0xffu);
#else
    for (; bits; bits &= bits - 1) {
        const int lane = std::countr_zero(bits);
        list[count++] = std::uint16_t(first + lane + (high[lane] << kQueueShift));
    }
    return count;
#endif
}

// Where one cycle's state lives, for every row alike: each array at counter index 0 (a row's
// routers are at its first index + x), for the current and the next buffer.
struct CyclePlan {
    int width = 0;
    int depth = 0;
    int slots = 0;
    std::int64_t field = 0; // distance between two fields of a row (or two ring slot planes)
    std::uint64_t cycle = 0;
    const std::uint8_t* read[kQueues] {}; // wavelets taken from queue q
    std::uint8_t* nextRead[kQueues] {};
    const std::uint8_t* written[kQueues] {}; // wavelets put into it, by the neighbour it comes from or the ramp
    const std::uint8_t* heads[kQueues] {}; // the queue's slot-0 port-bit plane, at slot index 0
    const std::uint8_t* sent[kQueues] {}; // wavelets sent on each link, and put into the ramp queue
    std::uint8_t* nextSent[kQueues] {};
    const std::uint8_t* receiverRead[kDirections] {}; // the neighbour's counter of the queue a link fills
    std::uint8_t* pending[Fabric::kPendingFields] {};
    std::int64_t queuePlane[kQueues] {}; // the queue's slot-0 plane in the rings, at slot index 0
    std::int64_t receiverPlane[kDirections] {}; // the slot-0 plane of the queue a link fills, relative to the sender
    int order[kQueues] {}; // round-robin priority: the queue served first turns every cycle, the same for all routers
    Wavelet* rings = nullptr;
    std::uint8_t* portBits = nullptr;
    const TrafficGenerator* measure = nullptr; // set when this cycle is in the measurement window
};

// One row of a cycle.
struct RowStep {
    std::int64_t first = 0; // counter index of the row's first router
    std::int64_t firstSlot = 0; // its slot index
    const std::uint8_t* injected = nullptr; // per x: 1 where the PE put a packet into its ramp queue
    bool northShared = false; // the row above (below) is stepped by another band at the same time
    bool southShared = false;
    std::uint16_t* moves = nullptr; // scratch: room for kQueues * width + kLanes entries
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
RowOutcome switchRow(const CyclePlan& plan, const RowStep& row)
{
    const int slots = kSlots > 0 ? kSlots : plan.slots;
    // With the ring size known, a move names its source's ring slot plane (queue * slots + slot,
    // five bits) instead of its queue, and the move loop need not read the queue's counter again.
    constexpr bool kSlotPlaneInMove = kSlots > 0;
    static_assert(kQueues * kSlots <= 1 << (16 - kQueueShift));
    const std::int64_t field = plan.field;
    const std::int64_t first = row.first;
    const std::int64_t firstSlot = row.firstSlot;
    const int width = plan.width;
    // Restrict: the byte stores below could otherwise alias the plan, which would then be reloaded.
    const CyclePlan& __restrict p = plan;
    bool shared[kQueues] = {};
    shared[North] = row.northShared;
    shared[South] = row.southShared;
    std::uint16_t* moves = row.moves;
    const auto count = [&](int countField, std::int64_t at, Bytes increment) {
        store(p.pending[countField] + at, load(p.pending[countField] + at) + increment);
    };

    const Bytes laneIndex = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
    const Bytes counterMask = splat(kCounterMask);
    const SignedBytes depth = (SignedBytes)splat(unsigned(plan.depth));
    Bytes queued {};
    int moveCount = 0;
    for (int x0 = 0; x0 < width; x0 += kLanes) {
        const std::int64_t at = first + x0;
        const std::int64_t atSlot = firstSlot + x0;
        const Bytes inRow
            = (Bytes)((SignedBytes)laneIndex < (SignedBytes)splat(unsigned(std::min(kLanes, width - x0))));
        // Sixteen routers with nothing queued (most of them, in a sparse run) only carry their
        // counters over; a busy run pays this test once per 16 routers, and it predicts well.
        Bytes readOf[kQueues]; // each queue's read counter, and the lanes where it holds a wavelet
        Bytes nonEmptyOf[kQueues];
        Bytes anything {};
        for (int queue = 0; queue < kQueues; ++queue) {
            readOf[queue] = load(p.read[queue] + at);
            const Bytes written = load(p.written[queue] + at) + (queue == kRamp ? load(row.injected + x0) : Bytes {});
            nonEmptyOf[queue] = inRow & ~(Bytes)(written == readOf[queue]); // and-not: one operation
            anything |= nonEmptyOf[queue];
        }
        if (laneBits(anything) == 0) {
            for (int i = 0; i < kQueues; ++i) { // nothing injected either: that would be queued
                store(p.nextRead[i] + at, readOf[i]);
                store(p.nextSent[i] + at, load(p.sent[i] + at));
            }
            continue;
        }
        Bytes roomy = splat(1u << kRamp); // ports whose receiver has room; the PE always takes
        for (int port = 0; port < kDirections; ++port) {
            const Bytes fill = (load(p.sent[port] + at) - load(p.receiverRead[port] + at)) & counterMask;
            roomy |= (Bytes)((SignedBytes)fill < depth) & splat(1u << port);
        }
        // The queues in priority order: a head moves if no queue served before it took its port
        // and its receiver has room. Each queue's vectors die in its iteration (16 registers).
        Bytes taken {};
        Bytes blocked {}; // ports a head found free but whose receiver was full
        Bytes stalled {};
        Bytes routed {};
        for (const int queue : p.order) {
            const Bytes readNow = readOf[queue];
            const Bytes nonEmpty = nonEmptyOf[queue];
            if (laneBits(nonEmpty) == 0) { // empty in all 16: common in a sparse run, rare in a busy one
                store(p.nextRead[queue] + at, readNow);
                continue;
            }
            queued |= nonEmpty;
            const Bytes wants // the port bit of the head
                = headPortBits<kSlots>(p.heads[queue] + atSlot, field, slots, readNow, nonEmpty, shared[queue]);
            const Bytes tries = (Bytes)((taken & wants) == Bytes {}) & nonEmpty;
            const Bytes full = (Bytes)((roomy & wants) == Bytes {});
            const Bytes granted = tries & ~full;
            taken |= granted & wants;
            blocked |= tries & full & wants;
            stalled |= nonEmpty & ~granted;
            routed -= granted; // granted lanes are 0xff: - -1
            store(p.nextRead[queue] + at, (readNow - granted) & counterMask);
            // The move's source: its ring slot plane, or its queue (then its slot is read again).
            moveCount = kSlotPlaneInMove
                ? appendLanes(moves, moveCount, laneBits(granted), std::uint16_t(x0 | queue * kSlots << kQueueShift),
                    readNow & splat(unsigned(kSlots - 1)))
                : appendLanes(moves, moveCount, laneBits(granted), std::uint16_t(x0 | queue << kQueueShift), Bytes {});
        }
        for (int port = 0; port < kDirections; ++port) {
            const Bytes moved = nonZero(taken & splat(1u << port));
            store(p.nextSent[port] + at, (load(p.sent[port] + at) - moved) & counterMask);
            count(kLinkCount + port, at, -moved);
            count(kLinkStallCount + port, at, -nonZero(blocked & splat(1u << port)));
        }
        store(p.nextSent[kRamp] + at, (load(p.sent[kRamp] + at) + load(row.injected + x0)) & counterMask);
        count(kRoutedCount, at, routed);
        count(kBusyCount, at, -nonZero(taken));
        count(kStallCount, at, -stalled);
    }

    RowOutcome outcome;
    outcome.active = laneBits(nonZero(queued)) != 0;
    // The moves: the head's slot selects its plane, and the link's free slot the receiver's.
    const unsigned slotMask = unsigned(slots - 1);
    Wavelet* __restrict rings = p.rings;
    std::uint8_t* __restrict portBits = p.portBits;
    // In batches: first every move's source is read and its destination found, then the
    // wavelets are written, so that no load of a batch waits behind a store of it.
    constexpr int kBatch = 32;
    struct Hop {
        std::int64_t to;
        std::uint64_t wavelet;
    };
    Hop hops[kBatch];
    for (int i0 = 0; i0 < moveCount; i0 += kBatch) {
        const int batchEnd = std::min(moveCount, i0 + kBatch);
        int hopCount = 0;
        for (int i = i0; i < batchEnd; ++i) {
            const int lane = moves[i] & ((1 << kQueueShift) - 1);
            const std::int64_t x = first + lane; // its counters
            const std::int64_t xSlot = firstSlot + lane; // its ring slots
            const int source = moves[i] >> kQueueShift;
            const std::int64_t from = kSlotPlaneInMove
                ? source * field + xSlot // slotPlane(queue, slot)
                : p.queuePlane[source] + std::int64_t(p.read[source][x] & slotMask) * field + xSlot;
            const unsigned bit = portBits[from];
            const auto wavelet
                = std::bit_cast<std::uint64_t>(rings[from]); // data, then tag: a hop changes only the tag
            if (bit == kRampBit) {
                const auto injectedAt = std::uint32_t(wavelet); // the payload
                if (p.measure) {
                    ++outcome.ejected;
                    if (p.measure->measuring(injectedAt)) {
                        ++outcome.latencyPackets;
                        outcome.latencySum += p.cycle - injectedAt;
                    }
                }
                continue;
            }
            const int port = __builtin_ctz(bit); // a link: one bit of 0xf
            hops[hopCount].to = p.receiverPlane[port] + std::int64_t(p.sent[port][x] & slotMask) * field + xSlot;
            // The tag, one hop nearer (Wavelet::dimensionOrder).
            hops[hopCount++].wavelet = wavelet - (std::uint64_t(Wavelet::kHop) << 32);
        }
        for (int k = 0; k < hopCount; ++k) {
            const std::uint64_t wavelet = hops[k].wavelet;
            rings[hops[k].to] = std::bit_cast<Wavelet>(wavelet);
            portBits[hops[k].to] = std::uint8_t(Wavelet { 0, std::uint32_t(wavelet >> 32) }.portBit());
        }
    }
    return outcome;
}

// Bit i set where times[i] <= now, for count <= 64 (times below 2^63).
std::uint64_t dueBits(const std::uint64_t* times, int count, std::uint64_t now)
{
    std::uint64_t bits = 0;
    int i = 0;
#if defined(__SSE4_2__)
    const __m128i cycle = _mm_set1_epi64x(std::int64_t(now));
    const auto later = [&](int at) {
        return _mm_castsi128_ps(_mm_cmpgt_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(times + at)), cycle));
    };
    for (; i + 4 <= count; i += 4) // the upper halves of four 64-bit compares, as four float signs
        bits |= std::uint64_t(~_mm_movemask_ps(_mm_shuffle_ps(later(i), later(i + 2), 0xdd)) & 15) << i;
#endif
    for (; i < count; ++i)
        bits |= std::uint64_t(times[i] <= now) << i;
    return bits;
}

} // namespace

// Generation (counted for the offered rate) and injection of each PE's oldest packet into its
// ramp queue, for one row: sets injected[x] (cleared by the caller) where PE x injected.
void Fabric::injectRowDimensionOrder(int y, std::uint64_t cycle, const Buffer& current, std::uint8_t* injected)
{
    const TrafficGenerator& traffic = *m_traffic;
    const unsigned depth = unsigned(m_depth);
    const unsigned slotMask = unsigned(m_ringSlots - 1);
    const std::int64_t field = m_xyPitch;
    // The row's share of every array, so that no store through one reloads another.
    const std::int64_t firstPe = index(0, y);
    std::uint64_t* __restrict generateTime = m_traffic->generateTime.data() + firstPe;
    std::uint32_t* __restrict generatePacket = m_traffic->generatePacket.data() + firstPe;
    std::uint64_t* __restrict headTime = m_traffic->headTime.data() + firstPe;
    std::uint32_t* __restrict headPacket = m_traffic->headPacket.data() + firstPe;
    const TrafficGenerator::PeKeys* __restrict keys = m_traffic->keys.data() + firstPe;
    const std::uint8_t* rampSent = current.xy.data() + (kSentField + kRamp) * field + counterIndex(0, y);
    const std::uint8_t* rampRead = current.xy.data() + (kReadField + kRamp) * field + counterIndex(0, y);
    Wavelet* __restrict rampSlots = m_queueData.data() + slotPlane(kRamp, 0) + slotIndex(0, y);
    std::uint8_t* __restrict rampPortBits = m_portBits.data() + slotPlane(kRamp, 0) + slotIndex(0, y);
    TrafficGenerator::RowTotals totals;
    const auto injectDue = [&](int x) {
        const std::int64_t pe = firstPe + x;
        while (generateTime[x] <= cycle) {
            totals.generated += traffic.measuring(generateTime[x]) ? 1 : 0;
            generateTime[x] += traffic.gap(keys[x], ++generatePacket[x]);
        }
        const unsigned sent = rampSent[x];
        if (((sent - rampRead[x]) & kCounterMask) >= depth)
            return; // the ramp queue is full: the packet waits in its source queue
        int destX = 0;
        int destY = 0;
        traffic.destination(keys[x], pe, headPacket[x], x, y, destX, destY);
        const Wavelet wavelet = Wavelet::dimensionOrder(x, y, destX, destY, std::uint32_t(headTime[x]));
        const std::int64_t slot = std::int64_t(sent & slotMask) * field + x;
        rampSlots[slot] = wavelet;
        rampPortBits[slot] = std::uint8_t(wavelet.portBit());
        injected[x] = 1;
        if (traffic.measuring(headTime[x])) {
            ++totals.injected;
            totals.hops += std::uint64_t(std::abs(destX - x) + std::abs(destY - y));
        }
        // The generation pass above has usually just computed this packet's time.
        const std::uint32_t packet = ++headPacket[x];
        headTime[x] = packet == generatePacket[x] ? generateTime[x] : headTime[x] + traffic.gap(keys[x], packet);
    };
    // The PEs with a packet due, 64 at a time: the oldest packet waiting is never younger than
    // the next one to be generated, so nothing else has anything to do.
    for (int x0 = 0; x0 < m_width; x0 += 64) {
        for (std::uint64_t due = dueBits(headTime + x0, std::min(64, m_width - x0), cycle); due; due &= due - 1)
            injectDue(x0 + std::countr_zero(due));
    }
    m_traffic->rows[std::size_t(y)] += totals;
}

void Fabric::stepRowsDimensionOrder(const RowRange& rows, const Buffer& current, Buffer& next)
{
    const std::uint64_t cycle = rows.cycle;
    CyclePlan plan;
    plan.width = m_width;
    plan.depth = m_depth;
    plan.slots = m_ringSlots;
    plan.field = m_xyPitch;
    plan.cycle = cycle;
    const std::int64_t field = m_xyPitch;
    const std::int64_t neighbour[kDirections] = { -m_counterRow, m_counterRow, 1, -1 }; // counter offsets
    const std::int64_t slotNeighbour[kDirections] = { -m_slotRow, m_slotRow, 1, -1 };
    const std::uint8_t* counters = current.xy.data();
    std::uint8_t* nextCounters = next.xy.data();
    for (int queue = 0; queue < kQueues; ++queue) {
        plan.read[queue] = counters + (kReadField + queue) * field;
        plan.nextRead[queue] = nextCounters + (kReadField + queue) * field;
        plan.written[queue] = queue == kRamp ? counters + (kSentField + kRamp) * field
                                             : counters + (kSentField + opposite(queue)) * field + neighbour[queue];
        plan.heads[queue] = m_portBits.data() + slotPlane(queue, 0);
        plan.queuePlane[queue] = slotPlane(queue, 0);
        plan.sent[queue] = counters + (kSentField + queue) * field;
        plan.nextSent[queue] = nextCounters + (kSentField + queue) * field;
    }
    for (int port = 0; port < kDirections; ++port) {
        plan.receiverRead[port] = counters + (kReadField + opposite(port)) * field + neighbour[port];
        plan.receiverPlane[port] = slotPlane(opposite(port), 0) + slotNeighbour[port];
    }
    for (int countField = 0; countField < kPendingFields; ++countField)
        plan.pending[countField] = m_pendingCounts.data() + countField * field;
    const int start = int(cycle % kQueues);
    for (int k = 0; k < kQueues; ++k)
        plan.order[k] = start + k < kQueues ? start + k : start + k - kQueues;
    plan.rings = m_queueData.data();
    plan.portBits = m_portBits.data();
    plan.measure = m_traffic && m_traffic->measuring(cycle) ? m_traffic.get() : nullptr;

    std::uint8_t injected[kMaxWidth + kLanes];
    std::uint16_t moves[kQueues * kMaxWidth + kLanes];
    for (int y = rows.begin; y < rows.end; ++y) {
        if (skipRow(y, current, next))
            continue;
        const std::uint32_t steps = ++m_rowSteps[std::size_t(y)].value;
        std::memset(injected, 0, std::size_t(m_width) + kLanes); // the vector pass reads whole vectors
        if (m_traffic)
            injectRowDimensionOrder(y, cycle, current, injected);
        RowStep row;
        row.first = counterIndex(0, y);
        row.firstSlot = slotIndex(0, y);
        row.injected = injected;
        row.northShared = y == rows.bandBegin && y > 0;
        row.southShared = y + 1 == rows.bandEnd && y + 1 < m_height;
        row.moves = moves;
        const RowOutcome outcome = m_ringSlots == 4 ? switchRow<4>(plan, row) : switchRow<0>(plan, row);
        if (steps % kFlushEvery == 0)
            flushPendingCounts(y);

        next.rowActive[std::size_t(y)] = RowFlag { std::uint8_t(outcome.active ? 1 : 0) };
        if (m_traffic) {
            TrafficGenerator::RowTotals& totals = m_traffic->rows[std::size_t(y)];
            totals.ejected += outcome.ejected;
            totals.latencyPackets += outcome.latencyPackets;
            totals.latencySum += outcome.latencySum;
        }
    }
}

void Fabric::flushPendingCounts(int y) const
{
    static_assert(kPendingFields == kLinkStallCount + kDirections);
    std::uint8_t* pending = m_pendingCounts.data() + counterIndex(0, y);
    const auto count = [&](int countField, int x) { return pending[countField * m_xyPitch + x]; };
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
        std::memset(pending + countField * m_xyPitch, 0, std::size_t(m_width));
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
