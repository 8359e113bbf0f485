// Run and Frame: a finished run's metrics, timeline, stepper and frames, and its report directory.
#include "app/python/pycommon.h"

#include "core/engine/framesource.h"
#include "core/fabric/wavelet.h"
#include "core/report/rundirectorywriter.h"
#include "core/report/runreport.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <map>

namespace waferscope::python {

namespace {

// One moment of one wafer, as NumPy arrays of the fabric's shape (rows, columns).
struct Frame {
    py::array_t<float> activity; // (H, W): share of cycles each PE computes
    py::array_t<float> sram; // (H, W): share of each PE's usable SRAM the plan fills
    py::array_t<float> traffic; // (H, W, 4): wavelets per cycle out of each PE to the north, east, south, west
    int wafer = 0;
    int iteration = 0;
    int layer = -1;
    std::string phase;
    double timeS = 0.0;
};

class Run {
public:
    Run(std::shared_ptr<const CompiledPlan> plan, core::engine::RunOptions options,
        std::shared_ptr<const core::engine::RunResult> result)
        : m_plan(std::move(plan))
        , m_options(std::move(options))
        , m_ran(std::move(result))
        , m_result(*m_ran)
        , m_frames(m_plan->plan, m_plan->model->graph, m_plan->system, m_result, m_plan->calibration)
        , m_metrics(fromJson(core::engine::metricsToJson(m_result.metrics)))
    {
        // The lanes in the report's order: by kind, then index.
        std::map<std::pair<int, int>, int> lanes;
        for (const core::engine::TimelineEvent& event : m_result.timeline.events)
            lanes.emplace(std::pair { int(event.lane), event.laneIndex }, 0);
        const bool inference = m_result.metrics.mode == core::RunMode::Inference;
        for (auto& [key, index] : lanes) {
            index = int(m_lanes.size());
            m_lanes.push_back(
                core::report::laneName(core::engine::LaneKind(key.first), key.second, m_plan->plan, inference));
        }
        m_laneOf = std::move(lanes);
    }

    py::object metrics() const { return m_metrics; }
    const std::vector<std::string>& lanes() const { return m_lanes; }

    // Built on first use, then kept: a long run has millions of events.
    py::object timeline() const
    {
        if (!m_timeline) {
            m_timeline = buildTimeline();
            m_timeline.attr("flags").attr("writeable") = false; // shared by every read: copy to edit
        }
        return m_timeline;
    }

private:
    py::array buildTimeline() const
    {
        const py::module_ numpy = py::module_::import("numpy");
        py::list fields;
        for (const auto& [name, type] : { std::pair { "start_s", "f8" }, { "end_s", "f8" }, { "lane_index", "i4" },
                 { "phase", "U24" }, { "layer", "i4" }, { "iteration", "i4" }, { "micro_batch", "i4" },
                 { "bytes", "f8" }, { "flops", "f8" } })
            fields.append(py::make_tuple(name, type));
        const py::object dtype = numpy.attr("dtype")(fields);
        const std::vector<core::engine::TimelineEvent>& events = m_result.timeline.events;
        const auto count = py::ssize_t(events.size());
        py::array table = numpy.attr("zeros")(count, dtype);
        py::array_t<double> start(count), end(count), bytes(count), flops(count);
        py::array_t<std::int32_t> lane(count), layer(count), iteration(count), microBatch(count);
        py::list phases;
        for (py::ssize_t i = 0; i < count; ++i) {
            const core::engine::TimelineEvent& event = events[std::size_t(i)];
            start.mutable_at(i) = event.start;
            end.mutable_at(i) = event.end;
            bytes.mutable_at(i) = event.bytes;
            flops.mutable_at(i) = event.flops;
            lane.mutable_at(i) = m_laneOf.at({ int(event.lane), event.laneIndex });
            layer.mutable_at(i) = event.layer;
            iteration.mutable_at(i) = event.iteration;
            microBatch.mutable_at(i) = event.microBatch;
            phases.append(core::engine::toString(event.phase));
        }
        const auto set = [&](const char* field, const py::object& column) { table[field] = column; };
        set("start_s", start);
        set("end_s", end);
        set("lane_index", lane);
        set("phase", phases);
        set("layer", layer);
        set("iteration", iteration);
        set("micro_batch", microBatch);
        set("bytes", bytes);
        set("flops", flops);
        return table;
    }

public:
    py::list steps() const
    {
        py::list steps;
        for (const core::engine::FrameStep& step : m_frames.steps()) {
            py::dict item;
            item["start_s"] = step.start;
            item["end_s"] = step.end;
            item["iteration"] = step.iteration;
            item["layer"] = step.layer;
            item["micro_batch"] = step.microBatch;
            item["phase"] = core::engine::toString(step.phase);
            steps.append(item);
        }
        return steps;
    }

    Frame frame(py::ssize_t step, int wafer) const
    {
        const py::ssize_t index = step < 0 ? step + py::ssize_t(m_frames.frameCount()) : step;
        if (index < 0 || std::size_t(index) >= m_frames.frameCount())
            throw py::index_error(
                "step " + std::to_string(step) + " of a run with " + std::to_string(m_frames.frameCount()) + " steps");
        if (wafer < 0 || wafer >= m_frames.wafers())
            throw py::index_error(
                "wafer " + std::to_string(wafer) + " of a frame with " + std::to_string(m_frames.wafers()) + " wafers");
        core::engine::EngineFrame engineFrame;
        {
            py::gil_scoped_release release;
            engineFrame = m_frames.frameAtStep(std::size_t(index), wafer);
        }
        const py::ssize_t h = engineFrame.height;
        const py::ssize_t w = engineFrame.width;
        Frame frame;
        frame.wafer = engineFrame.wafer;
        frame.iteration = engineFrame.iteration;
        frame.layer = engineFrame.layer;
        frame.phase = core::engine::toString(engineFrame.phase);
        frame.timeS = engineFrame.time;
        frame.activity = py::array_t<float>({ h, w });
        std::copy(engineFrame.peActivity.begin(), engineFrame.peActivity.end(), frame.activity.mutable_data());
        frame.traffic = py::array_t<float>({ h, w, py::ssize_t(4) });
        float* traffic = frame.traffic.mutable_data();
        // The engine keeps north, south, east, west; the array gives them clockwise from north.
        constexpr int kOrder[4] = { core::fabric::North, core::fabric::East, core::fabric::South, core::fabric::West };
        for (std::size_t pe = 0; pe < std::size_t(h * w); ++pe)
            for (int d = 0; d < 4; ++d)
                traffic[pe * 4 + std::size_t(d)] = engineFrame.linkLoad[pe * 4 + std::size_t(kOrder[d])];
        frame.sram = sramOf(engineFrame, h, w);
        return frame;
    }

    py::object writeReport(const std::string& directory) const
    {
        if (checkedText(directory, "model_dir").empty()) // "" would be the working directory
            raise(core::Diagnostic { "model_dir", 0, 0, "model_dir expects a directory, got an empty string" });
        // The directory is this report's before the sweep starts: another writer is refused at once.
        core::Expected<core::report::RunDirectoryWriter> opened = core::report::RunDirectoryWriter::open(directory);
        if (!opened)
            raise(opened.error());
        core::report::RunDirectoryWriter writer = std::move(opened).value();
        core::study::StudySpec spec = studyOf(m_plan);
        spec.run = m_options;
        spec.ran = m_ran;
        spec.writer = &writer;
        std::atomic<bool> cancel { false };
        core::study::StudyControl control;
        control.cancelFlag = &cancel; // the sweep's runs and the write hear Ctrl-C
        std::optional<core::Diagnostic> failed = interruptible(
            [&]() -> std::optional<core::Diagnostic> {
                core::Expected<core::study::StudyOutcome> outcome = core::study::runStudy(spec, control);
                return outcome ? std::nullopt : std::optional<core::Diagnostic>(outcome.error());
            },
            cancel);
        if (failed)
            raise(*failed);
        return py::none();
    }

private:
    // The SRAM the plan fills on `wafer`: every region there (stacked tiers add up); in weight
    // streaming, the region of the layer the frame shows.
    py::array_t<float> sramOf(const core::engine::EngineFrame& frame, py::ssize_t h, py::ssize_t w) const
    {
        py::array_t<float> sram({ h, w });
        float* cells = sram.mutable_data();
        std::fill(cells, cells + h * w, 0.0f);
        const core::ExecutionPlan& plan = m_plan->plan;
        const double capacity = double(std::max<std::int64_t>(1, plan.sramPerPeBytes));
        const auto fill = [&](const core::Region& region) {
            const auto share = float(double(region.sramBytesPerPe) / capacity);
            for (int y = std::max(0, region.rect.y); y < std::min(int(h), region.rect.y + region.rect.h); ++y)
                for (int x = std::max(0, region.rect.x); x < std::min(int(w), region.rect.x + region.rect.w); ++x)
                    cells[std::size_t(y) * std::size_t(w) + std::size_t(x)] += share;
        };
        if (plan.mode == core::ExecutionMode::WeightStreaming) {
            const std::vector<core::engine::LayerMetrics>& layers = m_result.metrics.layers;
            if (frame.layer >= 0 && std::size_t(frame.layer) < layers.size()) {
                const int region = layers[std::size_t(frame.layer)].region;
                if (region >= 0 && std::size_t(region) < plan.regions.size())
                    fill(plan.regions[std::size_t(region)]);
            }
            return sram;
        }
        for (const core::Region& region : plan.regions)
            if (region.system == frame.wafer)
                fill(region);
        return sram;
    }

    std::shared_ptr<const CompiledPlan> m_plan;
    core::engine::RunOptions m_options;
    std::shared_ptr<const core::engine::RunResult> m_ran;
    const core::engine::RunResult& m_result; // *m_ran
    core::engine::FrameSource m_frames;
    py::object m_metrics;
    std::vector<std::string> m_lanes;
    std::map<std::pair<int, int>, int> m_laneOf; // (lane kind, index) -> index into m_lanes
    mutable py::object m_timeline;
};

} // namespace

py::object makeRun(std::shared_ptr<const CompiledPlan> plan, core::engine::RunOptions options,
    std::shared_ptr<const core::engine::RunResult> result)
{
    return py::cast(Run(std::move(plan), std::move(options), std::move(result)));
}

void bindRun(py::module_& module)
{
    py::class_<Frame>(module, "Frame", "What one wafer does at one step of a run, as NumPy arrays.")
        .def_readonly("activity", &Frame::activity, "float32 (H, W): the share of cycles each PE computes.")
        .def_readonly("sram", &Frame::sram, "float32 (H, W): the share of each PE's usable SRAM the plan fills.")
        .def_readonly("traffic", &Frame::traffic,
            "float32 (H, W, 4): wavelets per cycle each PE sends north, east, south and west.")
        .def_readonly("wafer", &Frame::wafer)
        .def_readonly("iteration", &Frame::iteration)
        .def_readonly("layer", &Frame::layer, "Index into metrics['layers'] of the work shown (-1: none).")
        .def_readonly("phase", &Frame::phase, "forward, backward_delta, stream_in, decode, ...")
        .def_readonly("time_s", &Frame::timeS, "Seconds into the run.");

    py::class_<Run>(module, "Run", "A finished run on the simulated cluster.")
        .def_property_readonly("metrics", &Run::metrics, "The keys of `waferscope-cli run --json`, as a dict.")
        .def_property_readonly("timeline", &Run::timeline,
            "A NumPy structured array, one row per event: start_s, end_s, lane_index (into `lanes`), phase, layer "
            "(into metrics['layers']), iteration, micro_batch, bytes, flops.")
        .def_property_readonly("lanes", &Run::lanes, "The timeline's lanes: \"MemoryX\", \"CS-X 0 wafer\", ...")
        .def_property_readonly("steps", &Run::steps,
            "The stepper's steps, as the GUI steps through them: dicts with start_s, end_s, iteration, layer, "
            "micro_batch and phase.")
        .def("frame", &Run::frame, py::arg("step"), py::arg("wafer") = 0,
            "What `wafer` does when step `step` starts: a Frame with activity, sram and traffic arrays.")
        .def("write_report", &Run::writeReport, py::arg("model_dir"),
            "Writes the run's report into `model_dir` (report.json, report.csv, report.html, trace.json, "
            "summary.txt), as `waferscope-cli run --model_dir` does. Every file lands whole or not at all; Ctrl-C "
            "leaves the directory as it was.");
}

} // namespace waferscope::python
