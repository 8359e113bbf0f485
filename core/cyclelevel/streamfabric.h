#pragma once

#include "core/cyclelevel/kernels/prefillkernel.h"
#include "core/cyclelevel/kernels/routebook.h"
#include "core/fabric/staticcolorfabric.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// What one kernel's run cost on the fabric: from its programs' start until the fabric is
// quiescent, over the PEs of its frame.
struct StreamRunMeasure {
    std::uint64_t cycles = 0;
    std::uint64_t busyCycles = 0; // the frame's engines: tasks and compute steps
    std::uint64_t linkWavelets = 0; // over the links out of the frame's PEs
    std::uint64_t fmacs = 0;
    std::uint64_t edgeWavelets = 0; // wavelets that came in from off the wafer
    std::int64_t pes = 0;
};

// One kernel of the weight-streaming layout (streamgemmkernel.h) run on a fabric the size of its
// frame, with the frame at the fabric's origin: the cycle-level training step runs each of its
// kernels so, one after another, each loaded with the values the kernels before it left on the
// same PEs. A kernel that streams weights gets them from off the wafer: each of its lanes enters
// its row's first PE through the west edge link at the I/O's pace (StaticColorFabric::EdgeRate)
// and passes along the row.
class StreamKernelRun {
public:
    // Throws std::invalid_argument for an empty frame.
    StreamKernelRun(int width, int height, int simdWidth, int threads);
    ~StreamKernelRun();
    StreamKernelRun(const StreamKernelRun&) = delete;
    StreamKernelRun& operator=(const StreamKernelRun&) = delete;

    fabric::StaticColorFabric& fabric() { return *m_fabric; }
    const fabric::StaticColorFabric& fabric() const { return *m_fabric; }
    RouteBook& book() { return *m_book; }

    // Lane i of `values` enters PE (0, lanes[i].y) from the west at `rate` (its start counted from
    // the run's first cycle) and is delivered to the first `columns` PEs of the row. Returns the
    // color it comes on. Before the kernel's load().
    int feedFromEdge(const std::string& name, const Lanes& lanes, std::span<const float> values, int columns,
        fabric::StaticColorFabric::EdgeRate rate);

    // Programs the kernel (after its load()), runs it to the end and measures it. Throws
    // std::runtime_error naming the unfinished PEs if it stalls or passes `maxCycles`, and
    // std::logic_error for a route error.
    StreamRunMeasure run(const PrefillKernel& kernel, int inputColor, std::uint64_t maxCycles);

    // The values of `tiles` (dims x tokens or tokens x dims each, as a tile says) into a
    // tokens x dims matrix, row-major; what no tile covers stays 0.
    std::vector<float> read(const std::vector<PrefillOutputTile>& tiles, std::int64_t tokens, std::int64_t dims) const;

private:
    std::unique_ptr<fabric::StaticColorFabric> m_fabric;
    std::unique_ptr<RouteBook> m_book;
    struct EdgeFeed {
        Lanes lanes;
        std::vector<float> values;
        fabric::StaticColorFabric::EdgeRate rate;
        int color = -1;
    };
    std::vector<EdgeFeed> m_feeds;
};

} // namespace waferscope::core::cyclelevel
