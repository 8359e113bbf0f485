#include "decodekernelharness.h"

#include "core/fabric/half.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace waferscope::test {

std::string closedFormMismatch(const KernelMeasure& measure, const core::KernelCost& model)
{
    std::string mismatch;
    if (model.cycles != double(measure.cycles))
        mismatch += "cycles " + std::to_string(model.cycles) + " against " + std::to_string(measure.cycles) + "; ";
    if (model.linkWavelets != double(measure.linkWavelets))
        mismatch += "link wavelets " + std::to_string(model.linkWavelets) + " against "
            + std::to_string(measure.linkWavelets) + "; ";
    const double busy = model.peBusyFraction * double(measure.pes) * model.cycles;
    if (std::fabs(busy - double(measure.busyCycles)) > 1e-9 * double(measure.busyCycles))
        mismatch += "engine cycles " + std::to_string(busy) + " against " + std::to_string(measure.busyCycles);
    return mismatch;
}

int ulps(float a, float b, core::Storage storage)
{
    const auto ordered = [&](float value) {
        const std::uint16_t bits
            = storage == core::Storage::Bf16 ? core::fabric::floatToBfloat16(value) : core::fabric::floatToHalf(value);
        return bits & 0x8000 ? -int(bits & 0x7fff) : int(bits & 0x7fff);
    };
    return std::abs(ordered(a) - ordered(b));
}

bool sameBits(float a, float b)
{
    return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

using namespace waferscope::core;
using namespace core::cyclelevel;
using namespace core::fabric;

DecodeKernelHarness::DecodeKernelHarness(int regionWidth, int regionHeight, Storage storage, int simdWidth)
    : m_frame { 1, 0, regionWidth, regionHeight, false }
{
    m_context.storage = storage;
    m_context.simdWidth = simdWidth;
    FabricConfig config;
    config.width = 1 + regionWidth;
    config.height = regionHeight;
    config.colors = 24;
    config.queueDepth = 4;
    config.simdWidth = simdWidth;
    m_fabric = std::make_unique<StaticColorFabric>(config);
    m_fabric->setThreads(1);
    m_book = std::make_unique<RouteBook>(*m_fabric);
}

DecodeKernelHarness::~DecodeKernelHarness() = default;

StreamTree DecodeKernelHarness::feedTree(
    const std::string& name, const Lanes& lanes, const std::vector<std::vector<Pe>>& taps, int entryPort) const
{
    // As WaferDecoder's row streams: a run from the sender to the farthest tap of its lane.
    StreamTree tree(name);
    for (std::size_t i = 0; i < lanes.size(); ++i) {
        int farthest = 0;
        std::vector<bool> deliver;
        for (const Pe& tap : taps[i]) {
            if (tap.y != lanes[i].y || tap.x <= 0)
                throw std::logic_error(name + ": a tap off its lane's row or in the feeder column");
            farthest = std::max(farthest, tap.x);
            deliver.resize(std::size_t(farthest) + 1, false);
            deliver[std::size_t(tap.x)] = true;
        }
        tree.run(0, lanes[i].y, East, farthest + 1, entryPort, deliver);
    }
    return tree;
}

int DecodeKernelHarness::addFeed(const std::string& name, const Lanes& lanes, const std::vector<std::vector<Pe>>& taps)
{
    Feed feed;
    for (const Lane& lane : lanes)
        feed.offsets.push_back(m_fabric->pe(0, lane.y).allocF32(lane.size()));
    feed.color = m_book->place(feedTree(name, lanes, taps, Fabric::kRampPort));
    feed.lanes = lanes;
    m_feeds.push_back(std::move(feed));
    return m_feeds.back().color;
}

int DecodeKernelHarness::addEdgeFeed(const std::string& name, const Lanes& lanes,
    const std::vector<std::vector<Pe>>& taps, StaticColorFabric::EdgeRate rate)
{
    Feed feed;
    const StreamTree tree = feedTree(name, lanes, taps, West);
    for (const Lane& lane : lanes)
        m_fabric->addEdgeSource(0, lane.y, West, {});
    feed.color = m_book->place(tree);
    feed.lanes = lanes;
    feed.edge = true;
    feed.rate = rate;
    m_feeds.push_back(std::move(feed));
    return m_feeds.back().color;
}

void DecodeKernelHarness::setFeed(int color, std::span<const float> vector)
{
    for (Feed& feed : m_feeds) {
        if (feed.color != color)
            continue;
        feed.silent = vector.empty();
        if (feed.edge) {
            feed.values.assign(vector.begin(), vector.end());
            return;
        }
        for (std::size_t i = 0; i < feed.lanes.size() && !feed.silent; ++i) {
            const Lane& lane = feed.lanes[i];
            PeState& pe = m_fabric->pe(0, lane.y);
            std::copy(vector.begin() + lane.begin, vector.begin() + lane.end, pe.f32.begin() + feed.offsets[i]);
        }
        return;
    }
    throw std::logic_error("no feed on color " + std::to_string(color));
}

void DecodeKernelHarness::validateRoutes(const std::function<void(ProgramWriter&)>& programKernels)
{
    ProgramWriter writer(*m_fabric);
    writer.clearPrograms();
    programKernels(writer);
    if (const auto error = m_fabric->validateRoutes())
        throw std::logic_error("route error: " + *error);
    writer.clearPrograms();
    m_validated = true;
}

KernelMeasure DecodeKernelHarness::run(const std::function<void(ProgramWriter&)>& programKernel)
{
    StaticColorFabric& fabric = *m_fabric;
    ProgramWriter writer(fabric);
    writer.clearPrograms();
    for (Feed& feed : m_feeds) {
        for (std::size_t i = 0; i < feed.lanes.size() && !feed.silent; ++i) {
            const Lane& lane = feed.lanes[i];
            if (!feed.edge) {
                writer.send(0, lane.y, feed.color, feed.offsets[i], lane.size());
                continue;
            }
            for (std::uint32_t k = lane.begin; k < lane.end; ++k)
                fabric.feedEdgeSource(
                    0, lane.y, Wavelet::colored(feed.color, std::bit_cast<std::uint32_t>(feed.values[k])));
            StaticColorFabric::EdgeRate rate = feed.rate;
            rate.start += fabric.cycle();
            fabric.setEdgeRate(0, lane.y, rate);
        }
        feed.silent = feed.silent || feed.edge; // an edge feed's values are on their way: once
    }
    programKernel(writer);
    const Frame& frame = m_frame;
    const auto forEachRegionPe = [&](const auto& body) {
        for (int v = 0; v < frame.h; ++v)
            for (int u = 0; u < frame.w; ++u)
                body(frame.x(u), frame.y(v));
    };
    forEachRegionPe([&](int x, int y) {
        if (!fabric.pe(x, y).program.empty())
            writer.mark(x, y, 0);
    });
    if (!m_validated) {
        if (const auto error = fabric.validateRoutes())
            throw std::logic_error("route error: " + *error);
        m_validated = true;
    }
    const auto totals = [&] {
        std::pair<std::uint64_t, std::uint64_t> busyAndLinks { 0, 0 };
        const CounterVector& links = fabric.linkWavelets();
        forEachRegionPe([&](int x, int y) {
            busyAndLinks.first += fabric.pe(x, y).busyCycles;
            const auto pe = std::size_t(y) * std::size_t(fabric.width()) + std::size_t(x);
            for (int direction = 0; direction < kDirections; ++direction)
                busyAndLinks.second += links[pe * kDirections + std::size_t(direction)];
        });
        return busyAndLinks;
    };
    const auto before = totals();
    fabric.startPrograms();
    const std::uint64_t first = fabric.cycle();
    constexpr std::uint64_t kLimit = 1'000'000; // far beyond any kernel here: a livelock
    bool stuck = false;
    fabric.runWhile([&] {
        const bool quiescent = fabric.quiescent();
        if (fabric.pendingPrograms() == 0 && quiescent)
            return false;
        stuck = quiescent || fabric.cycle() - first > kLimit; // programs wait for what will never come
        return !stuck;
    });
    if (stuck) {
        std::string where;
        for (int y = 0; y < fabric.height(); ++y)
            for (int x = 0; x < fabric.width(); ++x)
                if (!fabric.pe(x, y).programDone())
                    where += " (" + std::to_string(x) + ", " + std::to_string(y) + ") at step "
                        + std::to_string(fabric.pe(x, y).pc);
        throw std::runtime_error(
            "the kernel stalled; unfinished programs:" + where + "; backlog: " + fabric.describeBacklog(6));
    }
    const auto after = totals();
    KernelMeasure measure;
    forEachRegionPe([&](int x, int y) {
        const PeState& pe = fabric.pe(x, y);
        if (!pe.program.empty())
            measure.programCycles = std::max<std::uint64_t>(measure.programCycles, pe.marks[0] - first);
    });
    measure.cycles = fabric.cycle() - first;
    measure.busyCycles = after.first - before.first;
    measure.linkWavelets = after.second - before.second;
    measure.pes = std::int64_t(frame.w) * frame.h;
    return measure;
}

std::vector<float> DecodeKernelHarness::read(Pe pe, std::uint32_t offset, std::size_t count) const
{
    const PeState& state = m_fabric->pe(pe.x, pe.y);
    return { state.f32.begin() + offset, state.f32.begin() + offset + std::ptrdiff_t(count) };
}

} // namespace waferscope::test
