#pragma once

#include "core/compiler/plan.h"
#include "core/engine/engine.h"

#include <cstddef>
#include <optional>
#include <vector>

namespace waferscope::core::engine {

// What the wafer does at one moment of a run, for the heatmap and traffic views: per-PE
// activity and per-link load over one wafer's fabric. Computed on demand from the plan, the
// timeline and the cost model; never stored per step.
struct EngineFrame {
    int width = 0; // fabric PEs
    int height = 0;
    int wafer = 0;
    int iteration = 0;
    int layer = -1; // index into Metrics::layers of the work shown (-1: none)
    Phase phase = Phase::Forward;
    double time = 0.0; // seconds into the run
    std::vector<float> peActivity; // per PE (row-major), 0..1: share of cycles its compute is busy
    std::vector<float> linkLoad; // per PE and direction (pe * 4 + N/S/E/W): wavelets per cycle, 0..1
    // Rectangles of PEs whose work has no link-load model: attention, experts and lookups are
    // timed without a kernel's wavelet count (by their FLOPs, plus region or wafer crossings where
    // the mode counts them), so their linkLoad is 0 for want of a model, not a computed 0.
    std::vector<Rect> trafficUnmodelled;
};

// One step of the stepper: a work event on a wafer lane, without its per-PE data.
struct FrameStep {
    double start = 0.0; // seconds into the run
    double end = 0.0;
    int iteration = 0;
    int layer = -1; // index into Metrics::layers
    int microBatch = 0;
    Phase phase = Phase::Forward;
};

// How far a step forward or back goes: one layer phase (one frame), one layer (past every frame
// of the same layer in a row: its micro-batches, or a region's consecutive work), or one
// iteration (to the first frame of the next or previous step of the run).
enum class StepUnit { Phase, Layer, Iteration };

// The frame a step of `unit` in `direction` (+1 forward, -1 back) from `current` lands on,
// clamped to the run; `current` when there are no frames.
std::size_t stepFrame(const std::vector<FrameStep>& steps, std::size_t current, StepUnit unit, int direction);

// Utilization over time, in equal bins over the run: the Utilization dock and the reports.
// compute: the wafers' FLOPs over their peak (the wafers shown: one representative system in
// training, every wafer in inference); fabric: wavelets on the wafers' links over the links'
// capacity (one wavelet per link per cycle); io, memoryx, swarmx: busy share of those lanes.
// fabricUnmodelled: the share of the wafers' usable PE-time spent on work whose link load has
// no model (EngineFrame::trafficUnmodelled), which `fabric` counts as no traffic.
struct UtilizationSeries {
    double binS = 0.0;
    std::vector<double> start; // each bin's start, seconds
    std::vector<double> compute;
    std::vector<double> fabric;
    std::vector<double> io;
    std::vector<double> memoryx;
    std::vector<double> swarmx;
    std::vector<double> fabricUnmodelled;
};

// Frames of a finished run. The stepper's frames are the work events on the wafer lanes (one
// per layer, phase, micro-batch and step in weight streaming; one per region and step in the
// spatial modes), in time order.
class FrameSource {
public:
    FrameSource(const ExecutionPlan& plan, const ModelGraph& graph, const SystemSpec& system, const RunResult& run,
        const Calibration& calibration = builtinCalibration());

    std::size_t frameCount() const { return m_steps.size(); }
    int wafers() const { return m_plan.mode == ExecutionMode::Inference ? m_plan.numSystems : 1; }
    EngineFrame frame(std::size_t index, int wafer = 0) const; // the index-th step of the stepper
    EngineFrame frameAt(double time, int wafer = 0) const; // what runs at `time`
    // The first frame of (iteration, layer, phase); an empty frame when there is none.
    EngineFrame frameFor(int iteration, int layer, Phase phase, int wafer = 0) const;
    // What the wafer runs when step `index` starts: that step's work and any other work running
    // then (the other regions of a pipeline), labelled with the step's layer and phase.
    EngineFrame frameAtStep(std::size_t index, int wafer = 0) const;
    const std::vector<FrameStep>& steps() const { return m_stepInfo; }
    // The index of the step running at `time` (the last one started by then; 0 before the first).
    std::size_t stepAt(double time) const;
    UtilizationSeries utilization(int bins) const;
    // The same figures over the bins between consecutive `edges` (seconds, ascending).
    UtilizationSeries utilizationOver(const std::vector<double>& edges) const;

private:
    struct RegionLoad {
        float activity = 0.0f; // PE busy share while the region works
        float broadcastLoad = 0.0f; // wavelets per cycle on its broadcast links
        float reduceLoad = 0.0f;
        std::int64_t pesUsed = 0; // weight streaming: PEs holding tiles (row-major from the corner)
        bool trafficModelled = false; // the loads come from a kernel's cost (GEMV, streamed GEMM)
    };
    EngineFrame render(const std::vector<std::size_t>& events, int wafer, double time) const;
    void paint(EngineFrame& frame, const Region& region, const RegionLoad& load, double flopsPerCycle) const;

    ExecutionPlan m_plan;
    SystemSpec m_system;
    Timeline m_timeline;
    std::vector<std::size_t> m_steps; // timeline events shown as frames, in time order
    std::vector<FrameStep> m_stepInfo; // the same, described
    std::vector<RegionLoad> m_forward; // per plan region (backward moves the same wavelets per cycle)
    std::vector<int> m_layerRegion; // Metrics::layers index -> plan region
    // Per replica-0 region of a pipelined plan: the other copies of the pipeline's same region,
    // which the timeline does not list but which work alongside it.
    std::vector<std::vector<std::size_t>> m_replicas;
    double m_waferShare = 1.0; // of an event's FLOPs, the shown wafer's (pipelined: all systems')
};

// One simulated step of a run, as report.json's `steps[]` and the TensorBoard summaries give it.
// A step is the time between the end of the step before (training: the start of the run;
// inference: the first token) and its own end, each step's length being Metrics::stepTimesS.
// The rates are the run's work per step over this step's time (the steady figures of Metrics
// for a steady step); the utilization is the timeline's over the step (FrameSource's figures).
struct StepFigures {
    int step = 0; // 1 for the first step, as a trainer's global step counts
    double startS = 0.0; // seconds into the run
    double endS = 0.0;
    double stepTimeS = 0.0;
    double samplesPerS = 0.0; // training and eval: samples of the global batch per second
    double tokensPerS = 0.0; // inference: tokens per second for each user
    double mfu = 0.0; // model FLOPs of a step over the peak of the systems used, for this step's time
    Utilization utilization; // compute, fabric, io, memoryx, swarmx
};
std::vector<StepFigures> stepFigures(const FrameSource& frames, const Metrics& metrics);

// Whether the frames of every wafer fit the memory budget as a viewer holds them while stepping
// (core/common/memorybudget.h): a snapshot keeps activity, link loads, traffic and a difference
// per PE of each wafer, and a few snapshots are alive at once. Null when they fit; otherwise why
// not (an inference plan over hundreds of wafers), for the viewer to show instead of frames.
std::optional<Diagnostic> checkFrameMemory(const FrameSource& frames, const SystemSpec& system);

} // namespace waferscope::core::engine
