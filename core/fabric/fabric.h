#pragma once

#include "core/fabric/pe.h"
#include "core/fabric/wavelet.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::core::fabric {

struct TrafficGenerator;

// An allocator whose blocks start on a multiple of kAlign bytes, for arrays that threads stepping
// different row bands write every cycle: a band boundary then falls on a cache line (or page)
// boundary whenever a row's share of the array is a whole number of them.
template <typename T, std::size_t kAlign>
struct AlignedAllocator {
    using value_type = T;
    template <typename U>
    struct rebind {
        using other = AlignedAllocator<U, kAlign>;
    };
    static constexpr std::align_val_t kAlignment { kAlign };
    AlignedAllocator() = default;
    template <typename U>
    AlignedAllocator(const AlignedAllocator<U, kAlign>&) noexcept
    {
    }
    T* allocate(std::size_t count) { return static_cast<T*>(::operator new(count * sizeof(T), kAlignment)); }
    void deallocate(T* block, std::size_t) noexcept { ::operator delete(block, kAlignment); }
    template <typename U>
    bool operator==(const AlignedAllocator<U, kAlign>&) const noexcept
    {
        return true;
    }
};
template <typename T>
using CacheLineAllocator = AlignedAllocator<T, 64>;
// Pages: a hardware prefetcher's stream stops at a page boundary, so arrays whose rows are whole
// pages never have one core's prefetches run into the rows of another core's band.
template <typename T>
using PageAllocator = AlignedAllocator<T, 4096>;
using CounterVector = std::vector<std::uint32_t, CacheLineAllocator<std::uint32_t>>;

// How routers pick output ports: statically per color (kernels, as on the WSE), or by the
// destination carried in the wavelet with X-then-Y dimension-order routing (synthetic traffic).
enum class Routing : std::uint8_t { StaticColor, DimensionOrder };

struct FabricConfig {
    int width = 0;
    int height = 0;
    Routing routing = Routing::StaticColor;
    int colors = kMaxColors; // StaticColor: input queues per router, one per color
    int queueDepth = 4; // wavelets per input queue; senders see backpressure when it is full
    int simdWidth = 8; // FP16 FMACs per PE per cycle (from the preset)
};

// The cycle-level PE mesh. Each router has input queues (one per color; with DimensionOrder
// routing one per input port: N, S, E, W, ramp) and one output register per link. A cycle reads
// only the current state and writes the next state of its own PE (its queues are updated in
// place; neighbours see only published occupancies and output registers, which are double
// buffered), so rows can be stepped in parallel and any partition gives the bit-identical state
// of the serial run. The DimensionOrder path (fabricxy.cpp) keeps the same cycle semantics with
// less data movement: a sender writes the wavelet straight into a free slot of the receiver's
// queue, and only per-link counters (sent by the sender, read by the receiver) are double
// buffered.
class Fabric {
public:
    explicit Fabric(const FabricConfig& config);
    ~Fabric();
    Fabric(const Fabric&) = delete;
    Fabric& operator=(const Fabric&) = delete;

    int width() const { return m_width; }
    int height() const { return m_height; }
    std::int64_t peCount() const { return std::int64_t(m_width) * m_height; }
    std::uint64_t cycle() const { return m_cycle; }
    const FabricConfig& config() const { return m_config; }

    // Static routing. rx: the direction a color arrives from (kRampPort for the PE's own
    // sends); tx: directionBit()s and/or kRampBit (several bits multicast).
    static constexpr int kRampPort = Wavelet::kRampPort;
    void setRoute(int x, int y, int color, int rx, std::uint8_t txMask);
    // Checks every route against its neighbours and tasks; a message names the first bad one.
    std::optional<std::string> validateRoutes() const;
    PeState& pe(int x, int y) { return m_pes[std::size_t(index(x, y))]; }
    const PeState& pe(int x, int y) const { return m_pes[std::size_t(index(x, y))]; }
    // A stream entering the mesh from off-wafer I/O through the edge link `from` of PE (x, y).
    void addEdgeSource(int x, int y, int from, std::vector<Wavelet> stream);
    int pendingResults() const;
    bool quiescent() const; // nothing queued, in flight or pending anywhere

    // Synthetic traffic (DimensionOrder routing only).
    void attachTraffic(std::unique_ptr<TrafficGenerator> traffic);
    const TrafficGenerator* traffic() const { return m_traffic.get(); }

    // Threads for step(): 1 runs the serial reference path; more use tbb::parallel_for over
    // row bands inside a private arena.
    void setThreads(int threads);
    int threads() const { return m_threads; }
    void step();
    // Steps `cycles` cycles (at least one). With several threads and dimension-order routing,
    // neighbouring bands run up to a cycle apart in between (fabricrun.cpp); the state is whole
    // at the end.
    void run(std::uint64_t cycles);
    // Steps until continueAfterStep() returns false (it runs between two cycles, on the
    // calling thread). Prefer this to step() in a loop: the worker threads stay with the run.
    void runWhile(const std::function<bool()>& continueAfterStep);

    // Counters since construction, one per PE (router) or per PE and outgoing direction (link,
    // index pe * 4 + direction). A router stall cycle is one in which a queued wavelet could not
    // move; a link stall cycle one in which a wavelet waited for the link and the receiver had no
    // room (with static routing: counted per color). Call between steps, not during one.
    const CounterVector& routedWavelets() const { return settled(m_routed); }
    const CounterVector& routerBusyCycles() const { return settled(m_routerBusy); }
    const CounterVector& routerStallCycles() const { return settled(m_routerStall); }
    const CounterVector& linkWavelets() const { return settled(m_linkWavelets); }
    const CounterVector& linkStallCycles() const { return settled(m_linkStall); }
    // Cycles in which each row was stepped; rows with nothing queued, in flight or pending
    // nearby are skipped, so idle regions cost one flag test per row.
    std::vector<std::uint32_t> rowStepCounts() const;
    std::uint64_t totalLinkWavelets() const;
    std::uint64_t totalRoutedWavelets() const;

    // A hash over every piece of simulation state and every counter (for determinism checks).
    std::uint64_t digest() const;
    std::size_t memoryBytes() const;

private:
    // One flag per row on its own cache line: bands on different cores write them every cycle.
    struct alignas(64) RowFlag {
        std::uint8_t value = 0;
        operator std::uint8_t() const { return value; }
    };
    struct Buffer {
        std::vector<Wavelet> out; // StaticColor, per PE and direction: the wavelet on that link next cycle
        std::vector<std::uint8_t> occupancy; // StaticColor, [pe * stride + queue]: published queue fill
        // DimensionOrder: per-link counters of the padded mesh, structure of arrays (fabricxy.cpp)
        std::vector<std::uint8_t, PageAllocator<std::uint8_t>> xy;
        std::vector<RowFlag> rowActive; // per row: anything queued or in flight
    };
    std::int64_t index(int x, int y) const { return std::int64_t(y) * m_width + x; }
    // DimensionOrder state is kept over a mesh padded by one idle router on each side, so edge
    // routers need no bounds tests (the padding never sends and never receives), row by row: a
    // padded row of an array holds its fields (or ring slot planes) one after the other, each
    // m_xyPitch long, whole cache lines. A band of rows thus owns one contiguous block of each
    // array, and cores stepping different bands share lines, or a hardware prefetcher's run,
    // only at their boundary. Field f of the counters of router (x, y) is at
    // f * m_xyPitch + counterIndex(x, y); slot s of its queue q at slotPlane(q, s) + slotIndex(x, y).
    std::int64_t counterIndex(int x, int y) const { return std::int64_t(y + 1) * m_counterRow + x + 1; }
    std::int64_t slotIndex(int x, int y) const { return std::int64_t(y + 1) * m_slotRow + x + 1; }
    std::int64_t slotPlane(int queue, int slot) const { return (std::int64_t(queue) * m_ringSlots + slot) * m_xyPitch; }
    // Rows [begin, end) of the band [bandBegin, bandEnd), stepped from `cycle` with buffer
    // `current` holding that cycle's state. Another band may step the rows next to the band
    // at the same time.
    struct RowRange {
        int begin = 0;
        int end = 0;
        int bandBegin = 0;
        int bandEnd = 0;
        std::uint64_t cycle = 0;
        int current = 0;
    };
    void stepInArena();
    void finishCycle(); // every band of the cycle stepped: the next buffer becomes the current one
    void stepRows(int rowBegin, int rowEnd); // of the current cycle
    void stepRows(const RowRange& rows);
    void runBandsSkewed(std::uint64_t cycles);
    bool skipRow(int y, const Buffer& current, Buffer& next) const;
    bool stepPeStatic(int x, int y, const Buffer& current, Buffer& next); // fabric.cpp
    void stepRowsDimensionOrder(const RowRange& rows, const Buffer& current, Buffer& next); // fabricxy.cpp
    void injectRowDimensionOrder(int y, std::uint64_t cycle, const Buffer& current, std::uint8_t* injected);
    void flushPendingCounts(int y) const; // adds row y's pending byte counts to the counters
    const CounterVector& settled(const CounterVector& counters) const;

    FabricConfig m_config;
    int m_width = 0;
    int m_height = 0;
    int m_queues = 0; // input queues per router
    int m_stride = 0; // per-router stride of the count/head/occupancy arrays (queues rounded up to 8)
    int m_depth = 0;
    int m_ringSlots = 0; // DimensionOrder: slots per queue ring, the depth rounded up to a power of two
    // DimensionOrder: padded row length of a counter array, whole cache lines with room for a
    // whole vector past the last router
    std::int64_t m_xyPitch = 0;
    std::int64_t m_counterRow = 0; // DimensionOrder: padded row of Buffer::xy and the pending counts
    std::int64_t m_slotRow = 0; // DimensionOrder: padded row of the ring slots and their port bits
    std::uint64_t m_cycle = 0;
    int m_threads = 1;
    struct Arena; // a tbb::task_arena sized to m_threads
    std::unique_ptr<Arena> m_arena;
    // Band b covers rows [split[b], split[b + 1]); the runners keep the split they balanced for
    // the next run (a run cut into stretches, an observer between two).
    std::vector<int> m_bandSplit;
    std::vector<int>& bandSplit(int bands); // m_bandSplit, split evenly if the band count changed

    // Router state, structure of arrays.
    // [pe][queue][depth] ring buffers; DimensionOrder: ring slots (slotPlane + slotIndex)
    std::vector<Wavelet, PageAllocator<Wavelet>> m_queueData;
    // StaticColor: [pe * stride + queue]; padded so that one router's counts are whole 8-byte words
    std::vector<std::uint8_t> m_queueHead;
    std::vector<std::uint8_t> m_queueCount;
    std::vector<std::uint8_t> m_arbiter; // StaticColor: round-robin start queue per router
    std::vector<std::uint8_t> m_routeTx; // StaticColor: [pe * stride + color] tx mask
    std::vector<std::uint8_t> m_routeRx; // StaticColor: [pe * stride + color] rx port, 0xff = unrouted
    // DimensionOrder: the output-port bit of the wavelet in each ring slot (slotPlane +
    // slotIndex), so that routers arbitrate 16 at a time.
    std::vector<std::uint8_t, PageAllocator<std::uint8_t>> m_portBits;
    Buffer m_buffers[2];
    int m_current = 0;

public:
    // Pending byte counts: routed, busy, stall, then wavelets and stall cycles per link direction.
    static constexpr int kPendingFields = 11;

private:
    // The counters; DimensionOrder adds to them from per-row byte counts (kPendingFields byte
    // planes laid out like the link counters) every few dozen cycles and before they are read.
    mutable CounterVector m_routed;
    mutable CounterVector m_routerBusy;
    mutable CounterVector m_routerStall;
    mutable CounterVector m_linkWavelets;
    mutable CounterVector m_linkStall;
    mutable std::vector<std::uint8_t, PageAllocator<std::uint8_t>> m_pendingCounts;
    mutable bool m_countsPending = false;
    struct alignas(64) RowCount { // one line per row, like RowFlag
        std::uint32_t value = 0;
    };
    std::vector<RowCount> m_rowSteps;

    std::vector<PeState> m_pes; // StaticColor only
    struct EdgeSource {
        std::int64_t pe;
        int from;
        std::vector<Wavelet> stream;
        std::size_t next = 0;
    };
    std::vector<EdgeSource> m_edgeSources;
    std::vector<std::int32_t> m_edgeSourceOf; // per PE, -1 for none (allocated on first use)
    std::unique_ptr<TrafficGenerator> m_traffic;
};

// Called every few cycles of a run (traffic or kernel) with the fabric as it is, between two
// steps; returning false cancels the run. Used for progress and to publish frames to a GUI.
using FabricObserver = std::function<bool(const Fabric&)>;

} // namespace waferscope::core::fabric
