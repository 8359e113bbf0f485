// XyFabric: its state, the injection of synthetic traffic, and the step of a band of rows (the
// routers themselves: xyrowswitch.cpp).
#include "core/fabric/xyfabric.h"

#include "core/common/memorybudget.h"
#include "core/fabric/fabricsimd.h"
#include "core/fabric/statehasher.h"
#include "core/fabric/traffic.h"
#include "core/fabric/xyrowswitch.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

#if WAFERSCOPE_FABRIC_SSE42
#include <immintrin.h>
#endif

namespace waferscope::core::fabric {

using namespace xy;

namespace {

// Bit i set where times[i] <= now, for count <= 64 (times below 2^63).
std::uint64_t dueBits(const std::uint64_t* times, int count, std::uint64_t now)
{
    std::uint64_t bits = 0;
    int i = 0;
#if WAFERSCOPE_FABRIC_SSE42
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

// The layout of the state arrays: padded rows with room for a whole vector past the last router,
// and slack for whole-vector reads past the last row.
struct XyFabric::Layout {
    std::int64_t pitch = 0;
    std::int64_t counterRow = 0;
    std::int64_t slotRow = 0;
    std::size_t counterBytes = 0; // of each counter array and of the pending counts
    std::size_t slotBytes = 0; // ring slots (Wavelets) and their port bits
};

XyFabric::Layout XyFabric::layoutOf(const FabricConfig& config)
{
    Layout layout;
    const auto ringSlots = std::int64_t(std::bit_ceil(unsigned(config.queueDepth)));
    layout.pitch = (std::int64_t(config.width) + 2 + kLanes + 63) & ~std::int64_t(63);
    // Rows of whole pages (PageAllocator): no prefetch stream crosses from one row to the next.
    constexpr std::int64_t kPage = 4096;
    layout.counterRow = (layout.pitch * kPendingFields + kPage - 1) / kPage * kPage; // the counters use ten fields
    layout.slotRow = (layout.pitch * kQueues * ringSlots + kPage - 1) / kPage * kPage;
    layout.counterBytes = std::size_t(layout.counterRow * (config.height + 2) + 64);
    layout.slotBytes = std::size_t(layout.slotRow * (config.height + 2) + 64);
    return layout;
}

XyFabric::XyFabric(const FabricConfig& config)
    : Fabric(config)
    , m_depth(config.queueDepth)
    , m_ringSlots(int(std::bit_ceil(unsigned(config.queueDepth))))
{
    const Layout layout = layoutOf(config);
    m_pitch = layout.pitch;
    m_counterRow = layout.counterRow;
    m_slotRow = layout.slotRow;
    for (auto& counters : m_counters)
        counters.assign(layout.counterBytes, 0);
    m_rings.resize(layout.slotBytes);
    m_portBits.assign(layout.slotBytes, 0);
    m_pendingCounts.assign(layout.counterBytes, 0);
}

double XyFabric::estimateBytes(const FabricConfig& config)
{
    const Layout layout = layoutOf(config);
    // Page-aligned blocks (PageAllocator) may start up to a page into what they take.
    const auto pages = [](double bytes) { return heapBlockBytes(bytes + 4096.0); };
    return sharedBytesFor(config) + 3.0 * pages(double(layout.counterBytes))
        + pages(double(layout.slotBytes) * sizeof(Wavelet)) + pages(double(layout.slotBytes));
}

XyFabric::~XyFabric() = default;

void XyFabric::attachTraffic(std::unique_ptr<TrafficGenerator> traffic)
{
    if (traffic && (traffic->width != width() || traffic->height != height()))
        throw std::invalid_argument("the traffic generator is for another mesh");
    m_traffic = std::move(traffic);
}

unsigned XyFabric::counter(int field, int x, int y) const
{
    return m_counters[currentBuffer()][std::size_t(field * m_pitch + counterIndex(x, y))];
}

std::vector<Wavelet> XyFabric::queued(int x, int y, int port) const
{
    if (x < 0 || y < 0 || x >= width() || y >= height() || port < 0 || port > kRamp)
        throw std::invalid_argument("no such queue");
    // The queue's writer: the neighbour the port faces (its sent counter towards us), or the ramp.
    const int writerX = x + (port == East) - (port == West);
    const int writerY = y + (port == South) - (port == North);
    const unsigned written
        = port == kRamp ? counter(kSentField + kRamp, x, y) : counter(kSentField + opposite(port), writerX, writerY);
    std::vector<Wavelet> wavelets;
    for (unsigned i = counter(kReadField + port, x, y); i != written; i = (i + 1) & kCounterMask)
        wavelets.push_back(m_rings[std::size_t(slotPlane(port, int(i & unsigned(m_ringSlots - 1))) + slotIndex(x, y))]);
    return wavelets;
}

bool XyFabric::usesPortableFallbacks()
{
    return !WAFERSCOPE_FABRIC_SSE2;
}

bool XyFabric::quiescent() const
{
    return !anyRowActive() && !(m_traffic && m_traffic->rate > 0.0);
}

void XyFabric::stepRows(const RowRange& rows)
{
    const std::uint64_t cycle = rows.cycle;
    const int current = rows.current;
    const int next = current ^ 1;
    CyclePlan plan;
    plan.width = width();
    plan.depth = m_depth;
    plan.slots = m_ringSlots;
    plan.field = m_pitch;
    plan.cycle = cycle;
    const std::int64_t field = m_pitch;
    const std::int64_t neighbour[kDirections] = { -m_counterRow, m_counterRow, 1, -1 }; // counter offsets
    const std::int64_t slotNeighbour[kDirections] = { -m_slotRow, m_slotRow, 1, -1 };
    const std::uint8_t* counters = m_counters[current].data();
    std::uint8_t* nextCounters = m_counters[next].data();
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
    plan.rings = m_rings.data();
    plan.portBits = m_portBits.data();
    plan.measure = m_traffic && m_traffic->measuring(cycle) ? m_traffic.get() : nullptr;

    std::uint8_t injected[kMaxWidth + kLanes];
    std::uint16_t moves[kQueues * kMaxWidth + kLanes];
    const bool injecting = m_traffic && m_traffic->rate > 0.0;
    for (int y = rows.begin; y < rows.end; ++y) {
        if (!injecting && rowAndNeighboursIdle(y, current)) {
            // Nothing can arrive and nothing is queued: the counters carry over.
            for (int counterField = 0; counterField < kCounterFields; ++counterField) {
                const std::int64_t first = counterField * field + counterIndex(0, y);
                std::copy_n(m_counters[current].begin() + first, width(), m_counters[next].begin() + first);
            }
            setRowActive(next, y, false);
            continue;
        }
        const std::uint32_t steps = countRowStep(y);
        std::memset(injected, 0, std::size_t(width()) + kLanes); // the vector pass reads whole vectors
        if (m_traffic)
            injectRow(y, cycle, current, injected);
        RowStep row;
        row.first = counterIndex(0, y);
        row.firstSlot = slotIndex(0, y);
        row.injected = injected;
        row.northShared = y == rows.bandBegin && y > 0;
        row.southShared = y + 1 == rows.bandEnd && y + 1 < height();
        row.moves = moves;
        const RowOutcome outcome = switchRow(plan, row);
        if (steps % kFlushEvery == 0)
            flushPendingCounts(y);

        setRowActive(next, y, outcome.active);
        if (m_traffic) {
            TrafficGenerator::RowTotals& totals = m_traffic->rows[std::size_t(y)];
            totals.ejected += outcome.ejected;
            totals.latencyPackets += outcome.latencyPackets;
            totals.latencySum += outcome.latencySum;
        }
    }
}

void XyFabric::injectRow(int y, std::uint64_t cycle, int current, std::uint8_t* injected)
{
    const TrafficGenerator& traffic = *m_traffic;
    const unsigned depth = unsigned(m_depth);
    const unsigned slotMask = unsigned(m_ringSlots - 1);
    const std::int64_t field = m_pitch;
    // The row's share of every array, so that no store through one reloads another.
    const std::int64_t firstPe = index(0, y);
    std::uint64_t* __restrict generateTime = m_traffic->generateTime.data() + firstPe;
    std::uint32_t* __restrict generatePacket = m_traffic->generatePacket.data() + firstPe;
    std::uint64_t* __restrict headTime = m_traffic->headTime.data() + firstPe;
    std::uint32_t* __restrict headPacket = m_traffic->headPacket.data() + firstPe;
    const TrafficGenerator::PeKeys* __restrict keys = m_traffic->keys.data() + firstPe;
    const std::uint8_t* rampSent = m_counters[current].data() + (kSentField + kRamp) * field + counterIndex(0, y);
    const std::uint8_t* rampRead = m_counters[current].data() + (kReadField + kRamp) * field + counterIndex(0, y);
    Wavelet* __restrict rampSlots = m_rings.data() + slotPlane(kRamp, 0) + slotIndex(0, y);
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
    for (int x0 = 0; x0 < width(); x0 += 64) {
        for (std::uint64_t due = dueBits(headTime + x0, std::min(64, width() - x0), cycle); due; due &= due - 1)
            injectDue(x0 + std::countr_zero(due));
    }
    m_traffic->rows[std::size_t(y)] += totals;
}

void XyFabric::flushPendingCounts(int y) const
{
    std::uint8_t* pending = m_pendingCounts.data() + counterIndex(0, y);
    const auto count = [&](int countField, int x) { return pending[countField * m_pitch + x]; };
    const std::int64_t first = index(0, y);
    for (int x = 0; x < width(); ++x) {
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
        std::memset(pending + countField * m_pitch, 0, std::size_t(width()));
}

void XyFabric::settleCounters() const
{
    if (m_settledCycle == cycle())
        return;
    for (int y = 0; y < height(); ++y)
        flushPendingCounts(y);
    m_settledCycle = cycle();
}

std::uint64_t XyFabric::digest() const
{
    StateHasher hash;
    hashClockAndCounters(hash);
    for (int y = 0; y < height(); ++y) {
        for (int x = 0; x < width(); ++x) {
            for (int field = 0; field < kCounterFields; ++field)
                hash.scalar(std::uint8_t(counter(field, x, y)));
            for (int port = 0; port < kQueues; ++port)
                for (const Wavelet& wavelet : queued(x, y, port))
                    hash.scalar(wavelet);
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
    return hash.result();
}

std::size_t XyFabric::memoryBytes() const
{
    return sharedMemoryBytes() + m_counters[0].capacity() + m_counters[1].capacity()
        + m_rings.capacity() * sizeof(Wavelet) + m_portBits.capacity() + m_pendingCounts.capacity();
}

} // namespace waferscope::core::fabric
