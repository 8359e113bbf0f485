#pragma once

#include "core/fabric/alignedallocator.h"
#include "core/fabric/bandrunner.h"
#include "core/fabric/wavelet.h"

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace waferscope::core::fabric {

struct StateHasher;

struct FabricConfig {
    int width = 0;
    int height = 0;
    int colors = kMaxColors; // StaticColorFabric: input queues per router, one per color
    int queueDepth = 4; // wavelets per input queue; senders see backpressure when it is full
    int simdWidth = 8; // StaticColorFabric: FP16 FMACs per PE per cycle (from the preset)
};

// The cycle-level PE mesh, whatever its routers: the clock and the threads that step it (a
// BandRunner), per-row activity flags, and the router and link counters. Two kinds of router
// derive from it: StaticColorFabric (per-color static routes and PE tasks, as kernels run on
// the WSE) and XyFabric (dimension-order routing of synthetic traffic).
//
// Cycle semantics shared by both: a router has bounded input queues and one wavelet per output
// link per cycle; a wavelet sent in cycle t is in the receiver's queue in cycle t + 1 and may
// leave it in that same cycle; a sender only sends when the receiver's queue, counting what is
// in flight to it, has room. A cycle of a row reads only the current state of its row and the
// rows next to it and writes the next state of its own row (BandStepper), so rows step in
// parallel and any thread count gives the serial run's state bit for bit.
//
// Thread: owned by one thread, which calls everything here; step(), run() and runWhile() use
// worker threads of their own inside the call.
class Fabric : protected BandStepper {
public:
    virtual ~Fabric();
    Fabric(const Fabric&) = delete;
    Fabric& operator=(const Fabric&) = delete;

    int width() const { return m_width; }
    int height() const { return m_height; }
    std::int64_t peCount() const { return std::int64_t(m_width) * m_height; }
    std::uint64_t cycle() const { return m_runner.cycle(); }
    const FabricConfig& config() const { return m_config; }
    static constexpr int kRampPort = Wavelet::kRampPort; // the port index of the PE's own ramp

    // Nothing queued, in flight or pending anywhere.
    virtual bool quiescent() const = 0;

    // Threads for step(): 1 runs the serial reference path; more step row bands in parallel.
    void setThreads(int threads) { m_runner.setThreads(threads); }
    int threads() const { return m_runner.threads(); }
    void step() { m_runner.step(*this); }
    // Steps `cycles` cycles (at least one). Where the routers allow it (XyFabric), neighbouring
    // bands run up to a cycle apart in between; the state is whole at the end.
    void run(std::uint64_t cycles) { m_runner.run(*this, cycles, allowsSkewedRuns()); }
    // Steps until continueAfterStep() returns false (it runs between two cycles, on the calling
    // thread). Prefer this to step() in a loop: the worker threads stay with the run.
    void runWhile(const std::function<bool()>& continueAfterStep) { m_runner.runWhile(*this, continueAfterStep); }

    // Counters since construction, one per PE (router) or per PE and outgoing direction (link,
    // index pe * 4 + direction). A router stall cycle is one in which a queued wavelet could not
    // move; a link stall cycle one in which a wavelet waited for the link and the receiver had no
    // room (StaticColorFabric: counted per color). Call between steps, not during one.
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
    virtual std::uint64_t digest() const = 0;
    virtual std::size_t memoryBytes() const = 0;

protected:
    // Validates the dimensions and the queue depth (std::invalid_argument).
    explicit Fabric(const FabricConfig& config);

    // True if the routers let neighbouring bands run a cycle apart (BandRunner::run).
    virtual bool allowsSkewedRuns() const = 0;
    // Adds counts the routers keep elsewhere during a run to the counters; called before the
    // counters are read.
    virtual void settleCounters() const { }

    std::int64_t index(int x, int y) const { return std::int64_t(y) * m_width + x; }
    // Row y and the rows next to it had nothing queued or in flight in the cycle whose state
    // is in buffer `current`: row y cannot receive anything.
    bool rowAndNeighboursIdle(int y, int current) const;
    bool anyRowActive() const;
    std::uint8_t rowActive(int current, int y) const { return m_rowActive[current][std::size_t(y)].value; }
    void setRowActive(int buffer, int y, bool active)
    {
        RowFlag& flag = m_rowActive[buffer][std::size_t(y)];
        flag.value = std::uint8_t(active ? 1 : 0);
        flag.lo = 0;
        flag.hi = active ? std::int16_t(m_width) : 0;
    }
    // The columns [lo, hi) of row y that had anything queued, in flight or to do (StaticColorFabric
    // keeps them; other meshes mark whole rows).
    void setRowSpan(int buffer, int y, int lo, int hi)
    {
        RowFlag& flag = m_rowActive[buffer][std::size_t(y)];
        flag.value = std::uint8_t(lo < hi ? 1 : 0);
        flag.lo = std::int16_t(lo);
        flag.hi = std::int16_t(lo < hi ? hi : lo);
    }
    std::pair<int, int> rowSpan(int buffer, int y) const
    {
        const RowFlag& flag = m_rowActive[buffer][std::size_t(y)];
        return { flag.lo, flag.hi };
    }
    void setAllRowsActive(); // in the current buffer: something arrived from outside the mesh
    std::uint32_t countRowStep(int y) { return ++m_rowSteps[std::size_t(y)].value; } // returns the count
    int currentBuffer() const { return m_runner.current(); }
    void hashClockAndCounters(StateHasher& hash) const; // for digest()
    std::size_t sharedMemoryBytes() const; // of what this class holds
    // The heap memory a fabric of this shape holds for what this class keeps (the counters, the
    // row flags and the runner's row weights), counted block by block before it is built: the
    // estimates of the derived classes (estimateBytes) add their own state to it.
    static double sharedBytesFor(const FabricConfig& config);

    // The counters; rows add to the entries of their own routers during a step.
    mutable CounterVector m_routed;
    mutable CounterVector m_routerBusy;
    mutable CounterVector m_routerStall;
    mutable CounterVector m_linkWavelets;
    mutable CounterVector m_linkStall;

private:
    const CounterVector& settled(const CounterVector& counters) const
    {
        settleCounters();
        return counters;
    }

    FabricConfig m_config;
    int m_width = 0;
    int m_height = 0;
    BandRunner m_runner;
    // One flag per row on its own cache line: bands on different cores write them every cycle.
    struct alignas(64) RowFlag {
        std::uint8_t value = 1;
        std::int16_t lo = 0; // columns [lo, hi) active; the whole row until a step narrows it
        std::int16_t hi = 0x7fff;
    };
    std::vector<RowFlag> m_rowActive[2]; // per buffer and row: anything queued or in flight
    struct alignas(64) RowCount { // one line per row, like RowFlag
        std::uint32_t value = 0;
    };
    std::vector<RowCount> m_rowSteps;
};

// The most router-cycles (cycles x PEs) one run of the fabric may take, traffic or kernel: under
// an hour on one core, which steps 5e7 (RelWithDebInfo) to 1.2e8 (Release) of them a second here
// (waferscope-bench, fabric_router_cycles_per_s_uniform_32x32_1_thread). A longer run is refused
// at the option that asks for it, not left to run for a day.
inline constexpr double kMaxRouterCyclesPerRun = 2e11;

// Called every few cycles of a run (traffic or kernel) with the fabric as it is, between two
// steps; returning false cancels the run. Used for progress and to publish frames to a GUI.
using FabricObserver = std::function<bool(const Fabric&)>;

} // namespace waferscope::core::fabric
