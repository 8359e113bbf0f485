#pragma once

#include "core/common/expected.h"
#include "core/compiler/compiler.h"
#include "core/compiler/plan.h"
#include "core/engine/engine.h"
#include "core/engine/framesource.h"
#include "core/report/cyclelevelreport.h"
#include "core/sweeps/scaling.h"
#include "core/sweeps/sensitivity.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::core::report {

// A run's report: what `report.json` holds, and what every other report file (CSV, HTML, PDF,
// summary) is written from. A plain value; reportToJson and reportFromJson round-trip it
// exactly, so `waferscope-cli compare` and the GUI read back what was written.

// How the run was made: enough to reproduce it and to tell two reports apart.
struct Manifest {
    std::string version; // WaferScope version that wrote the report
    std::string createdUtc; // ISO 8601; the one field two runs of the same inputs differ in
    std::string inputPath; // the params YAML as given
    std::string inputSha256; // of its bytes
    std::string model; // the config's name
    std::string system; // hardware preset key
    int numCsx = 1; // as asked
    RunMode mode = RunMode::Train;
    ExecutionChoice executionRequested = ExecutionChoice::Auto;
    int maxSteps = 1;
    std::int64_t globalBatch = 0; // 0 = the config's batch size
    int users = 1;
    std::int64_t promptTokens = 0; // 0 = the engine's default
    std::string calibrationVersion;
    std::string calibrationProfile; // the software profile of the run ("2024-08-launch")
    // The model-level engine draws no random numbers: 0, unless the report carries a cycle-level
    // run, whose weights and prompt this seeds.
    std::uint64_t seed = 0;
};

// One placed region with the layer figures that ran on it.
struct RegionReport {
    std::string op; // the region's op
    int stage = 0;
    int system = 0; // wafer index
    int replica = 0;
    Rect rect; // PEs, fabric coordinates
    std::int64_t sramBytesPerPe = 0;
    double timeS = 0.0; // summed over its layers, per step
    double flops = 0.0;
    double utilization = 0.0; // time-weighted over its layers
    Bound bound = Bound::None; // the bound holding most of its time; None when no layer ran on it
};

// One CS-X system (training) or wafer (inference) over the whole run.
struct SystemReport {
    int index = 0;
    double computeBusyS = 0.0; // wafer or region busy time, union over its lanes
    double ioBusyS = 0.0;
    double flops = 0.0;
    double ioBytes = 0.0;
    double computeUtilization = 0.0; // flops / (its peak x the run's span)
    bool sameScheduleAs0 = false; // data parallel: carries system 0's schedule (the engine simulates one)
};

// One timeline lane, summarised: busy time and a coarse occupancy profile for charts.
struct LaneReport {
    engine::LaneKind lane = engine::LaneKind::CsxCompute;
    int index = 0;
    std::string name; // for people: "MemoryX", "CS-X 0 wafer", "region 3 layers.0.attn.q"
    double busyS = 0.0;
    double bytes = 0.0;
    double flops = 0.0;
    std::vector<double> occupancy; // busy share per bin of the span (kOccupancyBins)
};

struct PlanSummary {
    ExecutionMode execution = ExecutionMode::Pipelined;
    int fabricWidth = 0;
    int fabricHeight = 0;
    Rect usable;
    int replicas = 1;
    int stages = 0;
    double peUtilization = 0.0;
    double sramUtilization = 0.0;
    std::vector<std::string> notes;
};

struct RunReport {
    Manifest manifest;
    PlanSummary plan;
    engine::Metrics metrics; // totals and per layer (LayerMetrics::region indexes `regions`)
    std::vector<RegionReport> regions;
    std::vector<SystemReport> systems;
    std::vector<LaneReport> lanes;
    double spanS = 0.0; // the timeline's span
    // Each simulated step (engine::stepFigures): report.json's "steps", and the scalars of the
    // run directory's TensorBoard event file.
    std::vector<engine::StepFigures> steps;
    std::optional<sweeps::ScalingSweep> scaling;
    // `run --level cycle`: the same plan executed on the cycle-level fabric. report.json holds it
    // as "cycle_level" only when present.
    std::optional<CycleLevelReport> cycleLevel;
    // What the headline figure depends on (sweeps::runSensitivity with the run's options and
    // calibration): report.json holds it as "sensitivity" (sensitivityToJson's shape) only when
    // present; the HTML and PDF reports get a section "What this result depends on".
    std::optional<sweeps::Sensitivity> sensitivity;
};

inline constexpr int kReportVersion = 1;
inline constexpr int kOccupancyBins = 120;

// What a report is made of: the run and everything it was made from, as the caller holds them
// (the references must outlive the call). `inputBytes` are the bytes that were loaded and
// simulated, not what the file holds by now: the manifest hashes them.
struct ReportInputs {
    const std::string& inputPath;
    const std::string& inputBytes;
    const ModelGraph& graph;
    const SystemSpec& system;
    const ExecutionPlan& plan;
    const engine::RunResult& run;
    const CompileOptions& compileOptions;
    const engine::RunOptions& runOptions;
    const engine::Calibration& calibration;
    const sweeps::ScalingSweep* sweep = nullptr; // report.json's "scaling" when given
    const sweeps::Sensitivity* sensitivity = nullptr; // "sensitivity" when given
    // `run --level cycle`: the fabric run of the same plan ("cycle_level"), whose weights and prompt
    // `seed` seeded (the manifest's seed; 0 without a cycle-level run).
    const cyclelevel::CycleRunResult* cycleLevel = nullptr;
    std::uint64_t seed = 0;
};

// The one way a run's report is built (study::runStudy, and through it every front end): the
// manifest of the run as the engine resolved its options (the config's batch, the default prompt
// length), stamped now, and the report of the run.
RunReport buildReport(const ReportInputs& inputs);

std::string reportToJson(const RunReport& report, int indent = 2);
// Reads `report.json` back; errors are located (`fileName:line:col` or the key at fault).
Expected<RunReport> reportFromJson(const std::string& text, const std::string& fileName);

// One row per layer: name, kind, params, flops, region, time_s, utilization, bound; numbers
// written exactly as in report.json.
std::string reportCsv(const RunReport& report);

// What a person reads in a terminal (also summary.txt).
std::string reportSummary(const RunReport& report);

// A timeline lane for people: "MemoryX", "CS-X 0 wafer" (inference: "wafer 0"), "region 3
// layers.0.attn.q", "link 0 -> 1".
std::string laneName(engine::LaneKind lane, int index, const ExecutionPlan& plan, bool inference);

// The current time as ISO 8601 UTC ("2026-11-21T10:00:00Z").
std::string utcTimestamp();

} // namespace waferscope::core::report
