// The synthetic-traffic hot path: one cycle of a row of XyFabric's routers.
//
// Routers decide 16 at a time, in byte vectors: which queues hold a wavelet, which port each
// queue's head wants (a byte plane per queue and ring slot holds the port bit of the wavelet in
// that slot), whose receiver has room, and the round-robin arbitration itself, which is the same
// for every router (the queue served first turns with the cycle). The same pass writes the next
// counters and the per-router statistics, as byte counts that are added to the 32-bit counters
// every few dozen cycles. Only the moves themselves are scalar: one loop over the row's granted
// queues, listed without branches, reads each head, decrements its route and writes it into the
// receiver's ring (a slot the receiver cannot be reading: the queue has room), with its port bit.
#include "core/fabric/xyrowswitch.h"

#include "core/fabric/fabricsimd.h"
#include "core/fabric/traffic.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstring>

#if WAFERSCOPE_FABRIC_SSE2
#include <immintrin.h>
#endif

namespace waferscope::core::fabric::xy {

namespace {

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
#if WAFERSCOPE_FABRIC_SSE2
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

#if WAFERSCOPE_FABRIC_SSSE3
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
#if WAFERSCOPE_FABRIC_SSSE3
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

// Per-cycle loop: the innermost loop of the XY mesh, run for every row of every cycle. It stays
// whole because its decide and move phases share the row's vector registers (each queue's read
// counters and lanes, 16 routers at a time) and the compile-time ring size; split, they would
// be spilled to memory between calls in the hot path the kSlots specialisation exists for.
//
// One cycle of the routers of a row: decide every router's moves 16 at a time, write the row's
// next counters and pending statistics, then make the moves. kSlots > 0 fixes the ring size at
// compile time (the default depth, the hot case); 0 takes it from the row.
template <int kSlots>
RowOutcome switchRowOf(const CyclePlan& plan, const RowStep& row)
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

} // namespace

RowOutcome switchRow(const CyclePlan& plan, const RowStep& row)
{
    return plan.slots == 4 ? switchRowOf<4>(plan, row) : switchRowOf<0>(plan, row);
}

} // namespace waferscope::core::fabric::xy
