#pragma once

// One decode kernel (core/cyclelevel/kernels/) alone on a small fabric: its region at
// column 1, flowing east, and feeder PEs in column 0 that send its inputs along their rows, as
// the regions before it would in a whole decode. Used by tests/core/cyclelevel/test_decodekernels.cpp to
// hold each kernel to the reference ops and to the closed forms of core/kernels/.
#include "core/cyclelevel/kernels/attentionkernel.h"
#include "core/cyclelevel/kernels/embeddingkernel.h"
#include "core/cyclelevel/kernels/gemvkernel.h"
#include "core/cyclelevel/kernels/normcolumn.h"
#include "core/cyclelevel/kernels/programwriter.h"
#include "core/cyclelevel/kernels/routebook.h"
#include "core/fabric/staticcolorfabric.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace waferscope::test {

// Distance in representable values of the storage format between two values it holds, and
// whether two floats are the same to the bit: how the kernel tests hold outputs to the reference.
int ulps(float a, float b, core::Storage storage);
bool sameBits(float a, float b);

// What one run of a kernel cost, over the PEs of its region only (not the feeders).
struct KernelMeasure {
    // From the cycle the programs start until nothing is queued, in flight or busy: the last
    // output is final.
    std::uint64_t cycles = 0;
    // Until the Mark step that ends the last region PE's program, as WaferDecoder reports a
    // region's finish (the Mark runs once the PE's last compute step is done).
    std::uint64_t programCycles = 0;
    std::uint64_t busyCycles = 0; // engine cycles of the region's PEs: tasks and compute steps
    std::uint64_t linkWavelets = 0; // wavelets sent on the outgoing links of the region's PEs
    std::int64_t pes = 0; // of the region
    double busyFraction() const { return cycles && pes ? double(busyCycles) / (double(pes) * double(cycles)) : 0.0; }
};

// Where a closed form differs from a kernel's run alone in cycles, link wavelets or engine cycles
// (its busy fraction times the PEs and its cycles, to 1e-9): empty when it is exact.
std::string closedFormMismatch(const KernelMeasure& measure, const core::KernelCost& model);

// The fabric (1 + regionWidth) x regionHeight PEs with 24 colors, queues of 4 and the given SIMD
// width. Use: build the kernel on frame(), route() it on book(), add its feeds (their routes
// follow the kernel's, as in WaferDecoder), load() it, then setFeed() and run() once per token.
//
// Thread: one test's; the fabric runs serially.
class DecodeKernelHarness {
public:
    DecodeKernelHarness(int regionWidth, int regionHeight, core::Storage storage, int simdWidth = 8);
    ~DecodeKernelHarness();

    core::fabric::StaticColorFabric& fabric() { return *m_fabric; }
    core::cyclelevel::RouteBook& book() { return *m_book; }
    const core::Frame& frame() const { return m_frame; }
    const core::cyclelevel::KernelContext& context() const { return m_context; }

    // A vector sent in lanes: lane i from the feeder (0, lanes[i].y) east along its row to the
    // PEs taps[i], elements [begin, end) of the vector given to setFeed(). Returns its color.
    // Feeders send their feeds in the order they were added.
    int addFeed(const std::string& name, const core::Lanes& lanes, const std::vector<std::vector<core::Pe>>& taps);
    // The values the feed with that color sends in the next run (already rounded to storage);
    // none: the feed sends nothing from then on (a kernel that takes its input in place).
    void setFeed(int color, std::span<const float> vector);
    // A stream from off the wafer instead of a feeder's sends: each lane enters the feeder column's
    // PE through its west edge link at `rate` (its start counted from the run's first cycle) and
    // passes that PE's router on to its taps. setFeed() gives it its values; one run per feed.
    int addEdgeFeed(const std::string& name, const core::Lanes& lanes, const std::vector<std::vector<core::Pe>>& taps,
        core::fabric::StaticColorFabric::EdgeRate rate);

    // Clears every program, writes the feeders' sends, calls programKernel, appends a Mark to
    // every region PE with a program, and runs until every program has finished and the fabric
    // is quiescent. Throws std::runtime_error naming the stuck PEs if it stalls.
    KernelMeasure run(const std::function<void(core::cyclelevel::ProgramWriter&)>& programKernel);

    // Checks the routes against the programs of several kernels that run one after the other
    // (each its own run), written together once and cleared; run() then checks nothing more.
    void validateRoutes(const std::function<void(core::cyclelevel::ProgramWriter&)>& programKernels);

    // count FP32 values of PE (x, y) from offset.
    std::vector<float> read(core::Pe pe, std::uint32_t offset, std::size_t count) const;

private:
    // The feeders' runs to their lanes' taps, entering each lane's first PE through `entryPort`.
    core::cyclelevel::StreamTree feedTree(const std::string& name, const core::Lanes& lanes,
        const std::vector<std::vector<core::Pe>>& taps, int entryPort) const;
    struct Feed {
        int color = -1;
        core::Lanes lanes;
        std::vector<std::uint32_t> offsets; // per lane: f32 offset at its feeder
        bool silent = false; // sends nothing
        bool edge = false; // from off the wafer (addEdgeFeed)
        core::fabric::StaticColorFabric::EdgeRate rate;
        std::vector<float> values; // an edge feed's
    };

    core::Frame m_frame;
    core::cyclelevel::KernelContext m_context;
    std::unique_ptr<core::fabric::StaticColorFabric> m_fabric;
    std::unique_ptr<core::cyclelevel::RouteBook> m_book;
    std::vector<Feed> m_feeds;
    bool m_validated = false; // routes checked against the programs of the first run
};

} // namespace waferscope::test
