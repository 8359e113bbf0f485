#include "core/fabric/framerecorder.h"

#include "core/fabric/staticcolorfabric.h"

#include <algorithm>
#include <cmath>

namespace waferscope::core::fabric {

namespace {

std::uint8_t quantize(double share)
{
    return std::uint8_t(std::lround(std::clamp(share, 0.0, 1.0) * 255.0));
}

// One frame of two neighbours' joint window, labelled as the later one.
std::shared_ptr<const CompactFrame> merged(const CompactFrame& earlier, const CompactFrame& later)
{
    auto frame = std::make_shared<CompactFrame>(later);
    const std::uint64_t a = earlier.intervalCycles;
    const std::uint64_t b = later.intervalCycles;
    const std::uint64_t total = std::max<std::uint64_t>(1, a + b);
    frame->intervalCycles = a + b;
    const auto average = [&](const std::vector<std::uint8_t>& x, std::vector<std::uint8_t>& y) {
        for (std::size_t i = 0; i < y.size() && i < x.size(); ++i)
            y[i] = std::uint8_t((std::uint64_t(x[i]) * a + std::uint64_t(y[i]) * b + total / 2) / total);
    };
    average(earlier.activity, frame->activity);
    average(earlier.linkLoad, frame->linkLoad);
    return frame;
}

} // namespace

RecordedFrames::RecordedFrames(int width, int height, int originX, int originY, int fabricWidth, int fabricHeight,
    std::size_t capacity, double clockHz)
    : m_width(width)
    , m_height(height)
    , m_originX(originX)
    , m_originY(originY)
    , m_fabricWidth(fabricWidth)
    , m_fabricHeight(fabricHeight)
    , m_capacity(std::max<std::size_t>(1, capacity))
    , m_clockHz(clockHz)
{
}

std::size_t RecordedFrames::capacityFor(std::int64_t pes, std::uint64_t budgetBytes)
{
    const auto frameBytes = std::uint64_t(std::max<std::int64_t>(1, pes)) * (1 + 4);
    return std::size_t(std::clamp<std::uint64_t>(budgetBytes / frameBytes, 16, 4096));
}

void RecordedFrames::add(std::shared_ptr<const CompactFrame> frame)
{
    std::deque<std::shared_ptr<const CompactFrame>> frames;
    {
        const std::lock_guard lock(m_mutex);
        if (m_frames.size() < m_capacity || m_capacity < 2) {
            m_frames.push_back(std::move(frame));
            if (m_frames.size() > m_capacity)
                m_frames.pop_front();
            return;
        }
        frames = m_frames; // only this thread writes: merge without holding readers up
    }
    frames.push_back(std::move(frame));
    std::deque<std::shared_ptr<const CompactFrame>> halved;
    for (std::size_t i = 0; i + 1 < frames.size(); i += 2)
        halved.push_back(merged(*frames[i], *frames[i + 1]));
    if (frames.size() % 2 == 1)
        halved.push_back(frames.back());
    const std::lock_guard lock(m_mutex);
    m_frames = std::move(halved);
    ++m_halvings;
}

void RecordedFrames::finish()
{
    const std::lock_guard lock(m_mutex);
    m_finished = true;
}

bool RecordedFrames::finished() const
{
    const std::lock_guard lock(m_mutex);
    return m_finished;
}

std::size_t RecordedFrames::size() const
{
    const std::lock_guard lock(m_mutex);
    return m_frames.size();
}

std::uint64_t RecordedFrames::halvings() const
{
    const std::lock_guard lock(m_mutex);
    return m_halvings;
}

std::uint64_t RecordedFrames::stride() const
{
    const std::lock_guard lock(m_mutex);
    return std::uint64_t(1) << std::min<std::uint64_t>(m_halvings, 62);
}

std::shared_ptr<const CompactFrame> RecordedFrames::at(std::size_t index) const
{
    const std::lock_guard lock(m_mutex);
    return index < m_frames.size() ? m_frames[index] : nullptr;
}

std::shared_ptr<const CompactFrame> RecordedFrames::newest() const
{
    const std::lock_guard lock(m_mutex);
    return m_frames.empty() ? nullptr : m_frames.back();
}

FrameRecorder::FrameRecorder(std::shared_ptr<RecordedFrames> frames)
    : m_frames(std::move(frames))
{
}

void FrameRecorder::record(
    const Fabric& fabric, const std::string& phase, std::int64_t position, std::uint64_t tokenCycle)
{
    const int width = std::min(fabric.width(), m_frames->width());
    const int height = std::min(fabric.height(), m_frames->height());
    const auto pes = std::size_t(fabric.peCount());
    const CounterVector& routerBusy = fabric.routerBusyCycles();
    const CounterVector& links = fabric.linkWavelets();
    const auto* kernelFabric = dynamic_cast<const StaticColorFabric*>(&fabric);
    const bool baselineOnly = m_fabric != &fabric || m_lastBusy.size() != pes || fabric.cycle() < m_lastCycle;
    if (!baselineOnly && ++m_calls < m_frames->stride())
        return; // the window goes on
    m_calls = 0;
    const std::uint64_t interval = baselineOnly ? 0 : fabric.cycle() - m_lastCycle;
    std::shared_ptr<CompactFrame> frame;
    if (interval > 0) {
        frame = std::make_shared<CompactFrame>();
        frame->cycle = fabric.cycle();
        frame->intervalCycles = interval;
        frame->phase = phase;
        frame->position = position;
        frame->tokenCycle = tokenCycle;
        frame->activity.assign(std::size_t(m_frames->width()) * std::size_t(m_frames->height()), 0);
        frame->linkLoad.assign(frame->activity.size() * kDirections, 0);
    }
    m_lastBusy.resize(pes, 0);
    m_lastEngineBusy.resize(pes, 0);
    m_lastLinks.resize(pes * kDirections, 0);
    const double perCycle = 1.0 / double(std::max<std::uint64_t>(1, interval));
    for (int y = 0; y < fabric.height(); ++y)
        for (int x = 0; x < fabric.width(); ++x) {
            const std::size_t pe = std::size_t(y) * std::size_t(fabric.width()) + std::size_t(x);
            // Counters only grow; the router's 32-bit ones wrap, which unsigned subtraction absorbs.
            double busy = double(std::uint32_t(routerBusy[pe] - std::uint32_t(m_lastBusy[pe])));
            m_lastBusy[pe] = routerBusy[pe];
            if (kernelFabric) {
                const std::uint64_t engine = kernelFabric->pe(x, y).busyCycles;
                busy = std::max(busy, double(engine - m_lastEngineBusy[pe]));
                m_lastEngineBusy[pe] = engine;
            }
            const bool shown = frame && x < width && y < height;
            const std::size_t out = std::size_t(y) * std::size_t(m_frames->width()) + std::size_t(x);
            if (shown)
                frame->activity[out] = quantize(busy * perCycle);
            for (int d = 0; d < kDirections; ++d) {
                const std::size_t link = pe * kDirections + std::size_t(d);
                const std::uint32_t sent = links[link] - m_lastLinks[link];
                m_lastLinks[link] = links[link];
                if (shown)
                    frame->linkLoad[out * kDirections + std::size_t(d)] = quantize(double(sent) * perCycle);
            }
        }
    m_fabric = &fabric;
    m_lastCycle = fabric.cycle();
    if (frame)
        m_frames->add(std::move(frame));
}

} // namespace waferscope::core::fabric
