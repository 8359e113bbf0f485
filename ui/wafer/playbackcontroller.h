#pragma once

#include "core/engine/framesource.h"
#include "core/fabric/framerecorder.h"
#include "ui/wafer/meshrenderer.h"

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <cstddef>
#include <memory>

namespace waferscope::ui {

// One step of a run as the wafer view shows it: the heat overlays' values on every wafer.
struct FrameSnapshot {
    std::size_t index = 0; // into FrameSource::steps()
    core::engine::FrameStep step;
    std::shared_ptr<const MeshField> activity; // per-PE compute activity, 0..1
    // Per-link load over trafficMax (wavelets per cycle; per PE its busiest link), so a frame
    // of light traffic still spans the colour scale.
    std::shared_ptr<const MeshField> traffic;
    double trafficMax = 1.0; // wavelets per cycle at the top of the scale: 1, 2 or 5 x 10^k, at most 1
    // Whether some PEs' traffic is NaN: work whose link load the engine does not model
    // (EngineFrame::trafficUnmodelled).
    bool trafficUnmodelled = false;
    // False when every link with load in this step is such work: the scale then has nothing to show.
    bool trafficModelled = true;
    // With a baseline run: this step's activity minus the baseline's at its matching step, as
    // (difference + 1) / 2 (null without a baseline, or when its wafers differ in size).
    std::shared_ptr<const MeshField> difference;
    std::size_t baselineIndex = 0; // the baseline's matching step
    // A window of a token run on the fabric (null for a frame of the engine's run).
    std::shared_ptr<const core::fabric::CompactFrame> fabricFrame;
};

// The baseline's step matching `step`: the same iteration, layer, micro-batch and phase where
// the baseline has one, else the step at the same share of its run.
std::size_t matchingStep(
    const core::engine::FrameSource& baseline, const core::engine::FrameStep& step, double runSpan);

// The top of a colour scale for values up to `peak`: the smallest 1, 2 or 5 x 10^k at or above
// it, between `floor` and 1.
double niceScaleMax(double peak, double floor = 1e-4);

// Builds the snapshot of a step (on any thread): frameAtStep() of each wafer.
FrameSnapshot makeSnapshot(
    const core::engine::FrameSource& source, std::size_t index, const core::engine::FrameSource* baseline = nullptr);

// The stepper and player of a finished run, or of the frames of a token on the fabric while
// they arrive (following the newest until paused or stepped). The frames are computed on a worker thread, newest
// request first (requests made while one is computed collapse into the latest); the worker
// publishes each snapshot and the GUI thread pulls the newest at most 60 times a second, so no
// frame work runs on the GUI thread. Play advances `speed` steps per second. Its worker is a
// continuous producer that outlives any one request, so it is its own class rather than a
// JobRunner job (JobRunner runs the one-shot jobs: load, compile, run, kernel, export).
class PlaybackController : public QObject {
    Q_OBJECT
public:
    explicit PlaybackController(QObject* parent = nullptr);
    ~PlaybackController() override;

    // The run to step through (null: none); shows its first step.
    void setSource(std::shared_ptr<const core::engine::FrameSource> source);
    // A second run to compare with (null: none): snapshots then carry the activity difference.
    void setBaseline(std::shared_ptr<const core::engine::FrameSource> baseline);
    // The frames of a token run on the fabric, growing while it runs (null: none); replaces the
    // run's frames until setSource. Shows the newest frame and follows new ones (isPlaying).
    void setFabricFrames(std::shared_ptr<const core::fabric::RecordedFrames> frames);
    const core::engine::FrameSource* baseline() const { return m_baseline.get(); }
    const core::engine::FrameSource* source() const { return m_source.get(); }
    const core::fabric::RecordedFrames* fabricFrames() const { return m_fabric.get(); }
    std::size_t frameCount() const;
    // Following the newest frame of a token run that is still arriving.
    bool isFollowing() const { return m_following; }

    // The step asked for last (the one shown once its frame is ready).
    std::size_t current() const { return m_current; }
    // The snapshot on screen (null before the first arrives).
    std::shared_ptr<const FrameSnapshot> shown() const { return m_shown; }
    bool isPlaying() const { return m_playing; }
    double speed() const { return m_speed; }

    void seek(std::size_t index); // stops following a token run's newest frame
    void step(core::engine::StepUnit unit, int direction);
    void play();
    void pause();
    void reset(); // pause and go back to the first step
    void setSpeed(double stepsPerSecond);

    static constexpr int kPullIntervalMs = 16; // at most ~60 pulls a second

Q_SIGNALS:
    // A new snapshot is on screen (GUI thread).
    void frameShown(std::shared_ptr<const waferscope::ui::FrameSnapshot> snapshot);
    void playingChanged(bool playing);

private:
    struct Shared;
    void pull();
    void startWorker();
    void show(std::size_t index); // asks the worker for the frame
    void followFabric(); // halvings of the frames, the newest frame, the end of the run
    std::size_t fabricStep(std::size_t current, core::engine::StepUnit unit, int direction) const;

    std::shared_ptr<Shared> m_shared; // outlives this object while a worker still holds it
    std::shared_ptr<const core::engine::FrameSource> m_source;
    std::shared_ptr<const core::engine::FrameSource> m_baseline;
    std::shared_ptr<const core::fabric::RecordedFrames> m_fabric;
    std::uint64_t m_fabricHalvings = 0; // of m_fabric, when m_current was last adjusted for them
    bool m_following = false;
    std::shared_ptr<const FrameSnapshot> m_shown;
    std::size_t m_current = 0;
    bool m_playing = false;
    double m_speed = 10.0; // steps per second while playing
    double m_playCredit = 0.0; // steps owed to the player since the last advance
    QTimer m_pullTimer;
    QElapsedTimer m_clock; // time since the last pull, for the player
};

} // namespace waferscope::ui
