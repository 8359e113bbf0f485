#pragma once

#include "core/fabric/fabric.h"

#include <memory>
#include <vector>

namespace waferscope::core::fabric {

struct TrafficGenerator;

// The mesh of synthetic traffic: routers with five input queues (N, S, E, W and the ramp from
// the PE) and dimension-order routing (X, then Y, then the ramp), the route carried in the
// wavelet (Wavelet::dimensionOrder). Each cycle, a router serves its non-empty queues in
// round-robin order, the queue served first turning with the cycle (cycle % 5, the same for
// every router): a head leaves if no queue served before it took its output port this cycle and
// the receiving queue has room, counting by its fill at the start of the cycle (the ramp always
// takes). The PE first injects its oldest waiting packet into the ramp queue if that queue has
// room at the start of the cycle; it may leave in the same cycle.
//
// The implementation is built for speed (xyfabric.cpp, xyrowswitch.cpp): a sender writes the
// wavelet straight into a free slot of the receiver's queue, routers decide 16 at a time in
// byte vectors, and only per-link counters are double buffered. XyReferenceFabric in the tests
// is the plain statement of the same semantics, and the two agree bit for bit.
//
// Thread: as Fabric; a run steps rows on the runner's threads.
class XyFabric final : public Fabric {
public:
    // Validates the configuration (std::invalid_argument); colors and simdWidth are not used.
    explicit XyFabric(const FabricConfig& config);
    ~XyFabric() override;
    // The heap memory the constructor allocates for a mesh of this shape (the padded counter,
    // ring-slot and port-bit arrays below, and Fabric's counters), before anything is allocated.
    // The traffic generator's per-PE streams are the caller's to count.
    static double estimateBytes(const FabricConfig& config);

    void attachTraffic(std::unique_ptr<TrafficGenerator> traffic);
    const TrafficGenerator* traffic() const { return m_traffic.get(); }
    // The wavelets in an input queue (a Direction or kRampPort), oldest first, with the routes
    // they carry there. Between steps.
    std::vector<Wavelet> queued(int x, int y, int port) const;

    bool quiescent() const override;
    std::uint64_t digest() const override;
    std::size_t memoryBytes() const override;

    // True if this build compiled the portable fallbacks of the vector paths (without SSE2, or
    // with WAFERSCOPE_FABRIC_SCALAR); they compute the same values.
    static bool usesPortableFallbacks();

    // Pending byte counts: routed, busy, stall, then wavelets and stall cycles per link direction.
    static constexpr int kPendingFields = 11;

protected:
    void stepRows(const RowRange& rows) override;
    bool allowsSkewedRuns() const override { return true; }
    void settleCounters() const override;

private:
    struct Layout;
    static Layout layoutOf(const FabricConfig& config);

    // State is kept over a mesh padded by one idle router on each side, so edge routers need no
    // bounds tests (the padding never sends and never receives), row by row: a padded row of an
    // array holds its fields (or ring slot planes) one after the other, each m_pitch long, whole
    // cache lines. A band of rows thus owns one contiguous block of each array, and cores
    // stepping different bands share lines, or a hardware prefetcher's run, only at their
    // boundary. Field f of the counters of router (x, y) is at f * m_pitch + counterIndex(x, y);
    // slot s of its queue q at slotPlane(q, s) + slotIndex(x, y).
    std::int64_t counterIndex(int x, int y) const { return std::int64_t(y + 1) * m_counterRow + x + 1; }
    std::int64_t slotIndex(int x, int y) const { return std::int64_t(y + 1) * m_slotRow + x + 1; }
    std::int64_t slotPlane(int queue, int slot) const { return (std::int64_t(queue) * m_ringSlots + slot) * m_pitch; }
    unsigned counter(int field, int x, int y) const; // of the current buffer
    // Generation (counted for the offered rate) and injection of each PE's oldest packet into its
    // ramp queue, for row y: sets injected[x] (cleared by the caller) where PE x injected.
    void injectRow(int y, std::uint64_t cycle, int current, std::uint8_t* injected);
    void flushPendingCounts(int y) const; // adds row y's pending byte counts to the counters

    int m_depth = 0;
    int m_ringSlots = 0; // slots per queue ring, the depth rounded up to a power of two
    // Padded row length of a counter array, whole cache lines with room for a whole vector past
    // the last router.
    std::int64_t m_pitch = 0;
    std::int64_t m_counterRow = 0; // padded row of m_counters and the pending counts
    std::int64_t m_slotRow = 0; // padded row of the ring slots and their port bits
    // Per buffer: per-link counters (xyrowswitch.h), structure of arrays.
    std::vector<std::uint8_t, PageAllocator<std::uint8_t>> m_counters[2];
    std::vector<Wavelet, PageAllocator<Wavelet>> m_rings; // ring slots (slotPlane + slotIndex)
    // The output-port bit of the wavelet in each ring slot, so that routers arbitrate 16 at a time.
    std::vector<std::uint8_t, PageAllocator<std::uint8_t>> m_portBits;
    // Per-router statistics as byte counts (kPendingFields planes laid out like the counters),
    // added to Fabric's counters every few dozen steps of a row and before they are read.
    mutable std::vector<std::uint8_t, PageAllocator<std::uint8_t>> m_pendingCounts;
    mutable std::uint64_t m_settledCycle = 0; // the cycle up to which every row's counts are added
    std::unique_ptr<TrafficGenerator> m_traffic;
};

} // namespace waferscope::core::fabric
