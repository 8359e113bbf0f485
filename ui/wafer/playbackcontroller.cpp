#include "ui/wafer/playbackcontroller.h"

#include "ui/wafer/fabricsnapshot.h"

#include <QThreadPool>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>

namespace waferscope::ui {

namespace {

double runSpan(const core::engine::FrameSource& source)
{
    return source.steps().empty() ? 0.0 : source.steps().back().end;
}

} // namespace

std::size_t matchingStep(const core::engine::FrameSource& baseline, const core::engine::FrameStep& step, double span)
{
    const std::vector<core::engine::FrameStep>& steps = baseline.steps();
    for (std::size_t i = 0; i < steps.size(); ++i)
        if (steps[i].iteration == step.iteration && steps[i].layer == step.layer
            && steps[i].microBatch == step.microBatch && steps[i].phase == step.phase)
            return i;
    const double share = span > 0.0 ? step.start / span : 0.0;
    return baseline.stepAt(share * runSpan(baseline));
}

FrameSnapshot makeSnapshot(
    const core::engine::FrameSource& source, std::size_t index, const core::engine::FrameSource* baseline)
{
    FrameSnapshot snapshot;
    snapshot.index = index;
    if (index < source.steps().size())
        snapshot.step = source.steps()[index];
    auto activity = std::make_shared<MeshField>();
    auto traffic = std::make_shared<MeshField>();
    for (int wafer = 0; wafer < source.wafers(); ++wafer) {
        core::engine::EngineFrame frame = source.frameAtStep(index, wafer);
        std::vector<float> busiest(frame.peActivity.size(), 0.0f);
        for (std::size_t pe = 0; pe < busiest.size() && pe * 4 + 3 < frame.linkLoad.size(); ++pe)
            busiest[pe] = std::max({ frame.linkLoad[pe * 4], frame.linkLoad[pe * 4 + 1], frame.linkLoad[pe * 4 + 2],
                frame.linkLoad[pe * 4 + 3] });
        // No model is not no traffic: those PEs are NaN, which the renderer hatches.
        const bool sized = busiest.size() == std::size_t(frame.width) * std::size_t(frame.height)
            && frame.linkLoad.size() == 4 * busiest.size();
        for (const core::Rect& rect : sized ? frame.trafficUnmodelled : std::vector<core::Rect>()) {
            for (int y = std::max(0, rect.y); y < std::min(frame.height, rect.y + rect.h); ++y) {
                for (int x = std::max(0, rect.x); x < std::min(frame.width, rect.x + rect.w); ++x) {
                    const std::size_t pe = std::size_t(y) * std::size_t(frame.width) + std::size_t(x);
                    busiest[pe] = std::numeric_limits<float>::quiet_NaN();
                    std::fill_n(frame.linkLoad.begin() + std::ptrdiff_t(pe * 4), 4, busiest[pe]);
                    snapshot.trafficUnmodelled = true;
                }
            }
        }
        activity->pe.push_back(std::move(frame.peActivity));
        traffic->pe.push_back(std::move(busiest));
        traffic->links.push_back(std::move(frame.linkLoad));
    }
    float peak = 0.0f; // of the modelled links
    for (const std::vector<float>& links : traffic->links)
        for (float load : links)
            if (!std::isnan(load))
                peak = std::max(peak, load);
    snapshot.trafficMax = niceScaleMax(double(peak));
    snapshot.trafficModelled = peak > 0.0f || !snapshot.trafficUnmodelled;
    const auto scale = float(1.0 / snapshot.trafficMax);
    for (std::vector<std::vector<float>>* values : { &traffic->pe, &traffic->links })
        for (std::vector<float>& wafer : *values)
            for (float& value : wafer)
                value *= scale;
    if (baseline && !baseline->steps().empty()) {
        snapshot.baselineIndex = matchingStep(*baseline, snapshot.step, runSpan(source));
        auto difference = std::make_shared<MeshField>();
        for (std::size_t wafer = 0; wafer < activity->pe.size(); ++wafer) {
            const std::vector<float>& mine = activity->pe[wafer];
            // A wafer the baseline does not have counts as idle there.
            const std::vector<float> theirs = int(wafer) < baseline->wafers()
                ? baseline->frameAtStep(snapshot.baselineIndex, int(wafer)).peActivity
                : std::vector<float>(mine.size(), 0.0f);
            if (theirs.size() != mine.size()) {
                difference.reset(); // another wafer size: no PE-for-PE difference
                break;
            }
            std::vector<float> values(mine.size());
            for (std::size_t pe = 0; pe < mine.size(); ++pe)
                values[pe] = 0.5f * (mine[pe] - theirs[pe] + 1.0f);
            difference->pe.push_back(std::move(values));
        }
        snapshot.difference = std::move(difference);
    }
    snapshot.activity = std::move(activity);
    snapshot.traffic = std::move(traffic);
    return snapshot;
}

double niceScaleMax(double peak, double floor)
{
    if (!(peak > floor))
        return floor;
    for (double decade = std::pow(10.0, std::floor(std::log10(peak))); decade < 10.0; decade *= 10.0)
        for (double mantissa : { 1.0, 2.0, 5.0 })
            if (mantissa * decade >= peak * (1.0 - 1e-9))
                return std::min(1.0, mantissa * decade);
    return 1.0;
}

// What the GUI thread and the frame worker share, behind one mutex.
struct PlaybackController::Shared {
    std::mutex mutex;
    std::shared_ptr<const core::engine::FrameSource> source;
    std::shared_ptr<const core::engine::FrameSource> baseline; // null: no comparison
    std::shared_ptr<const core::fabric::RecordedFrames> fabric; // a token run's frames, instead of source
    std::uint64_t generation = 0; // bumped with each source; older results are dropped
    std::optional<std::size_t> requested; // the newest step asked for and not yet started
    bool working = false; // a worker is running
    std::shared_ptr<const FrameSnapshot> latest; // the newest finished snapshot of this generation
};

PlaybackController::PlaybackController(QObject* parent)
    : QObject(parent)
    , m_shared(std::make_shared<Shared>())
{
    qRegisterMetaType<std::shared_ptr<const waferscope::ui::FrameSnapshot>>();
    m_pullTimer.setInterval(kPullIntervalMs);
    m_pullTimer.setTimerType(Qt::PreciseTimer);
    connect(&m_pullTimer, &QTimer::timeout, this, &PlaybackController::pull);
}

PlaybackController::~PlaybackController()
{
    // A running worker keeps the shared state alive and finds its generation stale.
    const std::lock_guard lock(m_shared->mutex);
    ++m_shared->generation;
    m_shared->requested.reset();
    m_shared->source.reset();
    m_shared->fabric.reset();
}

std::size_t PlaybackController::frameCount() const
{
    if (m_fabric)
        return m_fabric->size();
    return m_source ? m_source->frameCount() : 0;
}

void PlaybackController::setSource(std::shared_ptr<const core::engine::FrameSource> source)
{
    pause();
    m_source = std::move(source);
    m_fabric.reset();
    m_shown.reset();
    m_current = 0;
    {
        const std::lock_guard lock(m_shared->mutex);
        ++m_shared->generation;
        m_shared->source = m_source;
        m_shared->fabric.reset();
        m_shared->requested.reset();
        m_shared->latest.reset();
    }
    if (m_source && m_source->frameCount() > 0)
        seek(0);
}

void PlaybackController::setFabricFrames(std::shared_ptr<const core::fabric::RecordedFrames> frames)
{
    pause();
    m_source.reset();
    m_fabric = std::move(frames);
    m_fabricHalvings = 0;
    m_shown.reset();
    m_current = 0;
    {
        const std::lock_guard lock(m_shared->mutex);
        ++m_shared->generation;
        m_shared->source.reset();
        m_shared->fabric = m_fabric;
        m_shared->requested.reset();
        m_shared->latest.reset();
    }
    if (!m_fabric)
        return;
    m_following = true;
    m_playing = true;
    Q_EMIT playingChanged(true);
    m_clock.restart();
    m_pullTimer.start();
}

std::size_t PlaybackController::fabricStep(std::size_t current, core::engine::StepUnit unit, int direction) const
{
    const std::size_t count = m_fabric->size();
    if (count == 0)
        return 0;
    current = std::min(current, count - 1);
    if (unit != core::engine::StepUnit::Iteration)
        return direction > 0 ? std::min(current + 1, count - 1) : (current > 0 ? current - 1 : 0);
    // An iteration is a token position: to the first frame of the next or of this / the previous one.
    const auto positionAt = [this](std::size_t index) {
        std::shared_ptr<const core::fabric::CompactFrame> frame = m_fabric->at(index);
        return frame ? frame->position : -1;
    };
    std::size_t index = current;
    if (direction > 0) {
        while (index + 1 < count && positionAt(index + 1) == positionAt(current))
            ++index;
        return std::min(index + 1, count - 1);
    }
    while (index > 0 && positionAt(index - 1) == positionAt(current))
        --index;
    if (index == current && index > 0) {
        const std::int64_t previous = positionAt(index - 1);
        while (index > 0 && positionAt(index - 1) == previous)
            --index;
    }
    return index;
}

void PlaybackController::followFabric()
{
    const std::uint64_t halvings = m_fabric->halvings();
    if (halvings > m_fabricHalvings) {
        // The frames merged in pairs: the one asked for is now at half its index.
        m_current >>= std::min<std::uint64_t>(63, halvings - m_fabricHalvings);
        m_fabricHalvings = halvings;
        if (!m_following)
            show(m_current);
    }
    const bool finished = m_fabric->finished();
    const std::size_t count = m_fabric->size();
    if (m_following && count > 0 && (m_current != count - 1 || !m_shown))
        show(count - 1);
    if (m_following && finished) {
        m_following = false;
        m_playing = false;
        Q_EMIT playingChanged(false);
    }
}

void PlaybackController::setBaseline(std::shared_ptr<const core::engine::FrameSource> baseline)
{
    m_baseline = std::move(baseline);
    {
        const std::lock_guard lock(m_shared->mutex);
        ++m_shared->generation;
        m_shared->baseline = m_baseline;
        m_shared->latest.reset();
    }
    if (m_source && m_source->frameCount() > 0)
        show(m_current);
}

void PlaybackController::seek(std::size_t index)
{
    if (m_following)
        pause(); // a frame asked for stops following the newest
    show(index);
}

void PlaybackController::show(std::size_t index)
{
    if (frameCount() == 0)
        return;
    m_current = std::min(index, frameCount() - 1);
    {
        const std::lock_guard lock(m_shared->mutex);
        m_shared->requested = m_current;
    }
    startWorker();
    if (!m_pullTimer.isActive()) {
        m_clock.restart();
        m_pullTimer.start();
    }
}

void PlaybackController::step(core::engine::StepUnit unit, int direction)
{
    if (!m_source && !m_fabric)
        return;
    pause();
    seek(m_fabric ? fabricStep(m_current, unit, direction)
                  : core::engine::stepFrame(m_source->steps(), m_current, unit, direction));
}

void PlaybackController::play()
{
    if (frameCount() == 0 || m_playing)
        return;
    if (m_fabric && !m_fabric->finished()) {
        m_following = true; // back to the newest frame while the token still runs
    } else if (m_current + 1 >= frameCount()) {
        seek(0); // played to the end: start over
    }
    m_playing = true;
    m_playCredit = 0.0;
    m_clock.restart();
    if (!m_pullTimer.isActive())
        m_pullTimer.start();
    Q_EMIT playingChanged(true);
}

void PlaybackController::pause()
{
    m_following = false;
    if (!m_playing)
        return;
    m_playing = false;
    Q_EMIT playingChanged(false);
}

void PlaybackController::reset()
{
    pause();
    seek(0);
}

void PlaybackController::setSpeed(double stepsPerSecond)
{
    m_speed = std::clamp(stepsPerSecond, 0.1, 1000.0);
}

void PlaybackController::startWorker()
{
    {
        const std::lock_guard lock(m_shared->mutex);
        if (m_shared->working || !m_shared->requested)
            return;
        m_shared->working = true;
    }
    QThreadPool::globalInstance()->start([shared = m_shared] {
        for (;;) {
            std::shared_ptr<const core::engine::FrameSource> source;
            std::shared_ptr<const core::engine::FrameSource> baseline;
            std::shared_ptr<const core::fabric::RecordedFrames> fabric;
            std::size_t index = 0;
            std::uint64_t generation = 0;
            {
                const std::lock_guard lock(shared->mutex);
                if (!shared->requested || (!shared->source && !shared->fabric)) {
                    shared->requested.reset();
                    shared->working = false;
                    return;
                }
                index = *shared->requested;
                shared->requested.reset();
                source = shared->source;
                baseline = shared->baseline;
                fabric = shared->fabric;
                generation = shared->generation;
            }
            std::shared_ptr<const FrameSnapshot> snapshot = fabric
                ? makeFabricSnapshot(*fabric, index)
                : std::make_shared<const FrameSnapshot>(makeSnapshot(*source, index, baseline.get()));
            const std::lock_guard lock(shared->mutex);
            if (generation == shared->generation && snapshot)
                shared->latest = std::move(snapshot);
        }
    });
}

void PlaybackController::pull()
{
    const double elapsedS = double(m_clock.restart()) / 1000.0;
    if (m_fabric)
        followFabric();
    if (m_playing && !m_following && frameCount() > 0) {
        m_playCredit += m_speed * elapsedS;
        if (m_playCredit >= 1.0) {
            const auto steps = std::size_t(std::floor(m_playCredit));
            m_playCredit -= double(steps);
            const std::size_t last = frameCount() - 1;
            seek(std::min(m_current + steps, last));
            if (m_current == last)
                pause();
        }
    }
    std::shared_ptr<const FrameSnapshot> latest;
    bool pending = false;
    {
        const std::lock_guard lock(m_shared->mutex);
        latest = m_shared->latest;
        pending = m_shared->working || m_shared->requested.has_value();
    }
    if (latest && latest != m_shown) {
        m_shown = latest;
        Q_EMIT frameShown(m_shown);
    }
    const bool settled = !pending && (!m_shown || m_shown->index == m_current);
    const bool arriving = m_fabric && !m_fabric->finished();
    if (!m_playing && settled && !arriving)
        m_pullTimer.stop();
}

} // namespace waferscope::ui
