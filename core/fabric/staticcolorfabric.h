#pragma once

#include "core/fabric/fabric.h"
#include "core/fabric/pe.h"

#include <optional>
#include <span>
#include <string>

namespace waferscope::core::fabric {

// The mesh as kernels run on the WSE: each router has one input queue per color and static
// per-color routes (a set of output ports per input port, so multicast is native); the ramp
// delivers to the PE's data tasks, and the PE sends asynchronously. A router publishes, for the
// next cycle, the wavelet on each outgoing link and the fill of each of its queues; neighbours
// read only those (double buffered), and a router updates its own queues in place.
//
// Thread: as Fabric; a run steps rows on the runner's threads.
class StaticColorFabric final : public Fabric {
public:
    // Validates the configuration (std::invalid_argument).
    explicit StaticColorFabric(const FabricConfig& config);
    ~StaticColorFabric() override;
    // The heap memory the constructor allocates for a fabric of this shape, counted from the
    // arrays below (per PE, per queue slot and per link) before anything is allocated, and that of
    // `edgeSources` edge sources (addEdgeSource) without their streams. What the PEs' programs and
    // operands and the streams add later is the caller's to count.
    static double estimateBytes(const FabricConfig& config, std::int64_t edgeSources = 0);

    // rx: the direction a color arrives from (kRampPort for the PE's own sends); tx:
    // directionBit()s and/or kRampBit (several bits multicast).
    void setRoute(int x, int y, int color, int rx, std::uint8_t txMask);
    // Checks every route against its neighbours and tasks; a message names the first bad one.
    std::optional<std::string> validateRoutes() const;
    // A color delivered to PE (x, y) whose task only some programs arm (validateRoutes accepts it).
    void allowUnboundDelivery(int x, int y, int color) { m_unbound.push_back({ index(x, y), color }); }
    PeState& pe(int x, int y) { return m_pes[std::size_t(index(x, y))]; }
    const PeState& pe(int x, int y) const { return m_pes[std::size_t(index(x, y))]; }
    // A stream entering the mesh from off-wafer I/O through the edge link `from` of PE (x, y).
    void addEdgeSource(int x, int y, int from, std::vector<Wavelet> stream);
    // The rate the off-wafer I/O feeds the edge source of PE (x, y) at (std::logic_error if it
    // has none): no wavelet before cycle `start` (MemoryX's and SwarmX's latency), then at most
    // `wavelets` every `cycles` cycles on average. A wavelet the router could not take waits, and
    // the ones after it may then follow a cycle apart until the stream is back on its schedule
    // (SwarmX buffers them). The default, a wavelet a cycle from cycle 0, is the link's own pace.
    struct EdgeRate {
        std::uint64_t start = 0;
        std::uint32_t wavelets = 1;
        std::uint32_t cycles = 1;
    };
    void setEdgeRate(int x, int y, EdgeRate rate);
    // Appends a wavelet, or a stream of them, to the edge source of PE (x, y) (std::logic_error if
    // it has none).
    void feedEdgeSource(int x, int y, const Wavelet& wavelet);
    void feedEdgeSource(int x, int y, std::span<const Wavelet> wavelets);
    // A stream leaving the mesh through the edge link `to` of PE (x, y), to off-wafer I/O taking a
    // wavelet at most every rate.cycles / rate.wavelets cycles (no earlier than rate.start): a
    // route may send a color off the mesh there, and what leaves is kept, in order
    // (edgeSinkReceived). A wavelet the I/O cannot take yet waits in its queue; an I/O left idle
    // earns no credit for later.
    void addEdgeSink(int x, int y, int to, EdgeRate rate);
    void addEdgeSink(int x, int y, int to) { addEdgeSink(x, y, to, EdgeRate()); }
    const std::vector<std::uint32_t>& edgeSinkReceived(int x, int y) const;
    int pendingResults() const;
    // The first `limit` PEs with wavelets queued or a send unfinished, for error messages:
    // "(x, y) color c: n queued; ...".
    std::string describeBacklog(int limit) const;
    // After the PEs' programs (PeState::program) are written: counts them and wakes every row.
    // Programs then run as the fabric steps; pendingPrograms() counts the unfinished ones.
    void startPrograms();
    std::int64_t pendingPrograms() const;

    bool quiescent() const override;
    std::uint64_t digest() const override;
    std::size_t memoryBytes() const override;

protected:
    void stepRows(const RowRange& rows) override;
    // A row's weight: the columns it has anything to do in, and a little for the flag tests.
    bool rowWeights(int current, std::vector<double>& weights) const override;
    // Kernel tasks read the fabric's cycle, so every row steps the same one.
    bool allowsSkewedRuns() const override { return false; }

private:
    // One router and PE of the cycle: multicast, data tasks on the ramp, the PE's asynchronous
    // send and off-wafer edge streams. Returns whether anything is left queued or in flight.
    bool stepPe(int x, int y, int current);

    int m_colors = 0; // input queues per router
    int m_stride = 0; // per-router stride of the count/head/occupancy/route arrays (colors rounded up to 8)
    int m_depth = 0;
    // Router state, structure of arrays.
    std::vector<Wavelet> m_queueData; // [pe][color][depth] ring buffers
    std::vector<std::uint8_t> m_queueHead; // [pe * stride + color]
    std::vector<std::uint8_t> m_queueCount;
    std::vector<std::uint8_t> m_routeTx; // [pe * stride + color] tx mask
    std::vector<std::uint8_t> m_routeRx; // [pe * stride + color] rx port, 0xff = unrouted
    // Per buffer: what neighbours read of a router's state.
    std::vector<Wavelet> m_out[2]; // [pe * 4 + direction]: the wavelet on that link next cycle
    std::vector<std::uint8_t> m_occupancy[2]; // [pe * stride + color]: published queue fill
    std::vector<PeState> m_pes;
    std::vector<std::uint32_t> m_queuedMask; // per PE: a bit per color with a wavelet queued
    std::vector<std::uint8_t> m_selfActive; // per PE: has work of its own next cycle (send, program, edge stream)
    std::vector<std::uint8_t> m_published[2]; // per buffer and PE: its published state may be non-empty
    struct EdgeSource {
        std::int64_t pe;
        int from;
        std::vector<Wavelet> stream;
        std::size_t next = 0;
        EdgeRate rate;
        // Whether the I/O has brought the next wavelet by `cycle` (always, at the link's own pace).
        bool due(std::uint64_t cycle) const
        {
            if (rate.start == 0 && rate.wavelets == rate.cycles)
                return true;
            return cycle >= rate.start && next < (cycle - rate.start + 1) * rate.wavelets / rate.cycles;
        }
        // The first cycle due() holds for the next wavelet (before `start`: start's).
        std::uint64_t dueCycle() const
        {
            if (rate.start == 0 && rate.wavelets == rate.cycles)
                return 0;
            return rate.start + (std::uint64_t(next + 1) * rate.cycles + rate.wavelets - 1) / rate.wavelets - 1;
        }
    };
    std::vector<EdgeSource> m_edgeSources;
    struct EdgeSink {
        int to;
        EdgeRate rate;
        std::vector<std::uint32_t> received; // payloads
        std::uint64_t allowedAt = 0; // in cycles x rate.wavelets: when the I/O takes the next
        bool due(std::uint64_t cycle) const { return cycle >= rate.start && cycle * rate.wavelets >= allowedAt; }
        // The next is due rate.cycles / rate.wavelets after this one was, keeping the fraction of a
        // cycle it waited for; only a whole cycle the I/O sat idle is lost.
        void take(std::uint64_t cycle, std::uint32_t payload)
        {
            received.push_back(payload);
            const std::uint64_t now = cycle * rate.wavelets;
            allowedAt = (now >= allowedAt + rate.wavelets ? now : allowedAt) + rate.cycles;
        }
    };
    std::vector<EdgeSink> m_edgeSinks;
    std::vector<std::int32_t> m_edgeSinkOf; // per PE, -1 for none (allocated on first use)
    std::vector<std::int32_t> m_edgeSourceOf; // per PE, -1 for none (allocated on first use)
    // Per row with an edge source (allocated with the first): the cycle its sleeping sources'
    // next wavelet is due (kNever: none sleeps), and the columns of its sources. A source whose
    // next wavelet is not due next cycle sleeps, and its row with it when nothing else in the row
    // is busy, until the row's step of that cycle wakes it: the cycles in which only a throttled
    // edge advances cost a flag test a row.
    static constexpr std::uint64_t kNever = ~std::uint64_t(0);
    std::vector<std::uint64_t> m_rowWake;
    std::vector<std::pair<int, int>> m_rowSources; // [lo, hi) per row
    struct alignas(64) RowPrograms { // unfinished programs per row, written by the row's band only
        std::int64_t value = 0;
    };
    std::vector<RowPrograms> m_rowPrograms;
    std::vector<std::pair<std::int64_t, int>> m_unbound; // allowUnboundDelivery
};

} // namespace waferscope::core::fabric
