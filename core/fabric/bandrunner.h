#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace waferscope::core::fabric {

// Rows [begin, end) of the band [bandBegin, bandEnd), to be stepped from `cycle`, with buffer
// `current` (0 or 1) holding that cycle's state and the other one receiving the next.
struct RowRange {
    int begin = 0;
    int end = 0;
    int bandBegin = 0;
    int bandEnd = 0;
    std::uint64_t cycle = 0;
    int current = 0;
};

// A mesh whose cycle a BandRunner steps row band by row band. Contract of stepRows: a row's
// step of cycle t reads only the cycle-t state of its own row and of the rows next to it and
// writes only its own row's state for t + 1 (and free queue slots of the rows next to it that no
// read of cycle t looks at). Rows of a cycle are then independent: bands of a cycle may run on
// any thread in any order, and any split gives the state of the serial run bit for bit. With
// `skewed` runs (BandRunner::run) a row may step t + 1 while rows two away still step t.
class BandStepper {
public:
    // Called on any of the runner's threads, for disjoint ranges at the same time.
    virtual void stepRows(const RowRange& rows) = 0;
    // What stepping each row of cycle `current` costs, roughly (the work its routers and PEs
    // have), into weights[row]; false if the mesh cannot tell. Called between cycles.
    virtual bool rowWeights(int current, std::vector<double>& weights) const
    {
        (void)current;
        (void)weights;
        return false;
    }

protected:
    ~BandStepper() = default;
};

// Steps a mesh of `rows` rows cycle by cycle, one band of rows per thread, and keeps its clock
// (the cycle and which of two buffers is current). The split into bands is rebalanced from the
// bands' timings and kept from run to run.
//
// Thread: owned and called by one thread (the fabric's owner); during a call it runs bands on
// the workers of its private tbb::task_arena and on the calling thread, and returns when every
// band of the last cycle is done.
class BandRunner {
public:
    explicit BandRunner(int rows);
    ~BandRunner();
    BandRunner(const BandRunner&) = delete;
    BandRunner& operator=(const BandRunner&) = delete;

    // 1 steps every row on the calling thread (the serial reference path).
    void setThreads(int threads);
    int threads() const { return m_threads; }
    std::uint64_t cycle() const { return m_cycle; }
    int current() const { return m_current; }

    void step(BandStepper& mesh);
    // Steps `cycles` cycles (at least one). `skewed`: the mesh allows neighbouring bands to run
    // up to a cycle apart in between (no barrier per cycle); the state is whole at the end.
    void run(BandStepper& mesh, std::uint64_t cycles, bool skewed);
    // Steps until continueAfterStep() returns false (it runs between two cycles, on the calling
    // thread). The worker threads stay with the run instead of waking up every cycle.
    void runWhile(BandStepper& mesh, const std::function<bool()>& continueAfterStep);

private:
    std::vector<int>& bandSplit(int bands); // m_bandSplit, split evenly if the band count changed
    void stepInArena(BandStepper& mesh);
    void runSkewed(BandStepper& mesh, std::uint64_t cycles);
    void finishCycle();

    int m_rows = 0;
    int m_threads = 1;
    std::uint64_t m_cycle = 0;
    int m_current = 0; // the buffer holding the current cycle's state
    struct Arena; // a tbb::task_arena sized to m_threads
    std::unique_ptr<Arena> m_arena;
    // Band b covers rows [split[b], split[b + 1]); the runners keep the split they balanced for
    // the next run (a run cut into stretches, an observer between two).
    std::vector<int> m_bandSplit;
};

} // namespace waferscope::core::fabric
