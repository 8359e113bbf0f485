#include "core/cyclelevel/streamfabric.h"

#include "core/cyclelevel/kernels/programwriter.h"

#include <bit>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;

StreamKernelRun::StreamKernelRun(int width, int height, int simdWidth, int threads)
{
    if (width < 1 || height < 1)
        throw std::invalid_argument("a kernel run needs a frame of at least one PE");
    FabricConfig config;
    config.width = width;
    config.height = height;
    config.colors = 24;
    config.queueDepth = 4;
    config.simdWidth = simdWidth;
    m_fabric = std::make_unique<StaticColorFabric>(config);
    m_fabric->setThreads(std::max(1, threads));
    m_book = std::make_unique<RouteBook>(*m_fabric);
}

StreamKernelRun::~StreamKernelRun() = default;

int StreamKernelRun::feedFromEdge(const std::string& name, const Lanes& lanes, std::span<const float> values,
    int columns, StaticColorFabric::EdgeRate rate)
{
    StreamTree tree(name);
    const std::vector<bool> deliver(std::size_t(columns), true);
    for (const Lane& lane : lanes) {
        tree.run(0, lane.y, East, columns, West, deliver);
        m_fabric->addEdgeSource(0, lane.y, West, {});
    }
    EdgeFeed feed;
    feed.lanes = lanes;
    feed.values.assign(values.begin(), values.end());
    feed.rate = rate;
    feed.color = m_book->place(tree);
    m_feeds.push_back(std::move(feed));
    return m_feeds.back().color;
}

StreamRunMeasure StreamKernelRun::run(const PrefillKernel& kernel, int inputColor, std::uint64_t maxCycles)
{
    StaticColorFabric& fabric = *m_fabric;
    ProgramWriter writer(fabric);
    writer.clearPrograms();
    StreamRunMeasure measure;
    for (const EdgeFeed& feed : m_feeds) {
        for (const Lane& lane : feed.lanes) {
            std::vector<Wavelet> stream;
            stream.reserve(lane.size());
            for (std::uint32_t k = lane.begin; k < lane.end; ++k)
                stream.push_back(Wavelet::colored(feed.color, std::bit_cast<std::uint32_t>(feed.values[k])));
            fabric.feedEdgeSource(0, lane.y, stream);
            StaticColorFabric::EdgeRate rate = feed.rate;
            rate.start += fabric.cycle();
            fabric.setEdgeRate(0, lane.y, rate);
            measure.edgeWavelets += lane.size();
        }
    }
    m_feeds.clear(); // fed once
    kernel.program(writer, inputColor);
    if (const auto error = fabric.validateRoutes())
        throw std::logic_error(kernel.name() + ": route error: " + *error);

    const auto totals = [&] {
        std::uint64_t busy = 0;
        std::uint64_t fmacs = 0;
        for (int y = 0; y < fabric.height(); ++y)
            for (int x = 0; x < fabric.width(); ++x) {
                busy += fabric.pe(x, y).busyCycles;
                fmacs += fabric.pe(x, y).fmacs;
            }
        std::uint64_t links = 0;
        for (const std::uint64_t wavelets : fabric.linkWavelets())
            links += wavelets;
        return std::tuple { busy, fmacs, links };
    };
    const auto [busy0, fmacs0, links0] = totals();
    fabric.startPrograms();
    const std::uint64_t first = fabric.cycle();
    bool stuck = false;
    fabric.runWhile([&] {
        const bool quiescent = fabric.quiescent();
        if (fabric.pendingPrograms() == 0 && quiescent)
            return false;
        stuck = quiescent || fabric.cycle() - first > maxCycles;
        return !stuck;
    });
    if (stuck) {
        std::string where;
        int listed = 0;
        for (int y = 0; y < fabric.height() && listed < 6; ++y)
            for (int x = 0; x < fabric.width() && listed < 6; ++x)
                if (!fabric.pe(x, y).programDone()) {
                    where += " (" + std::to_string(x) + ", " + std::to_string(y) + ") at step "
                        + std::to_string(fabric.pe(x, y).pc);
                    ++listed;
                }
        throw std::runtime_error(kernel.name() + " stalled after " + std::to_string(fabric.cycle() - first)
            + " cycles; unfinished programs:" + where + "; backlog: " + fabric.describeBacklog(6));
    }
    const auto [busy1, fmacs1, links1] = totals();
    measure.cycles = fabric.cycle() - first;
    measure.busyCycles = busy1 - busy0;
    measure.fmacs = fmacs1 - fmacs0;
    measure.linkWavelets = links1 - links0;
    measure.pes = std::int64_t(fabric.width()) * fabric.height();
    return measure;
}

std::vector<float> StreamKernelRun::read(
    const std::vector<PrefillOutputTile>& tiles, std::int64_t tokens, std::int64_t dims) const
{
    std::vector<float> out(std::size_t(tokens) * std::size_t(dims), 0.0f);
    for (const PrefillOutputTile& tile : tiles) {
        const PeState& pe = m_fabric->pe(tile.pe.x, tile.pe.y);
        for (std::uint32_t t = 0; t < tile.tokens; ++t) {
            const std::size_t token = tile.firstToken + t;
            if (std::int64_t(token) >= tokens)
                continue;
            for (std::uint32_t d = 0; d < tile.dims; ++d) {
                const std::uint32_t at = tile.dimsMajor ? d * tile.tokens + t : t * tile.dims + d;
                out[token * std::size_t(dims) + tile.firstDim + d] = pe.f32[tile.offset + at];
            }
        }
    }
    return out;
}

} // namespace waferscope::core::cyclelevel
