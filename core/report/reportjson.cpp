// No header of its own: defines reportToJson and reportFromJson, declared in runreport.h.
// report.json and report.csv: the report written and read back. The writer and the reader are
// kept side by side so that every key written is a key read (the round-trip test holds them to it);
// so are those of the "cycle_level" object, in cyclelevelreport.cpp.
#include "core/report/runreport.h"

#include "core/common/jsondocument.h"
#include "core/common/jsonlocator.h"
#include "core/report/jsonreader.h"
#include "core/report/reportformat.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace waferscope::core::report {

namespace {

using Json = nlohmann::ordered_json; // written: keys in the order of the format
using jsonread::Reader;
using jsonread::ReadError;
using jsonread::ReadJson;

// A report nests five levels (timeline/lanes/i/occupancy); refusing much deeper documents keeps
// JsonLocator, whose pointers grow with depth, linear in the text.
constexpr int kMaxNestingDepth = 64;

Json number(double value)
{
    return std::isfinite(value) ? Json(value) : Json(nullptr);
}

Json rectJson(const Rect& rect)
{
    return { { "x", rect.x }, { "y", rect.y }, { "w", rect.w }, { "h", rect.h } };
}

Json manifestJson(const Manifest& m)
{
    return { { "generator", "WaferScope" }, { "version", m.version }, { "created_utc", m.createdUtc },
        { "input", { { "path", m.inputPath }, { "sha256", m.inputSha256 } } }, { "model", m.model },
        { "options",
            { { "system", m.system }, { "num_csx", m.numCsx }, { "mode", toString(m.mode) },
                { "execution", toString(m.executionRequested) }, { "max_steps", m.maxSteps },
                { "batch_size", m.globalBatch }, { "users", m.users }, { "prompt_tokens", m.promptTokens } } },
        { "calibration_version", m.calibrationVersion }, { "calibration_profile", m.calibrationProfile },
        { "seed", m.seed } };
}

Json totalsJson(const engine::Metrics& m)
{
    Json json = Json::parse(engine::metricsToJson(m));
    json.erase("layers"); // at the top level, with their regions
    Json bounds = Json::object();
    for (const auto& [bound, time] : m.boundTimeS)
        bounds[toString(bound)] = number(time);
    json["bound_time_s"] = std::move(bounds);
    return json;
}

Json layerJson(const engine::LayerMetrics& layer)
{
    return { { "name", layer.name }, { "kind", toString(layer.kind) }, { "params", layer.params },
        { "flops", number(layer.flops) }, { "region", layer.region }, { "time_s", number(layer.timeS) },
        { "utilization", number(layer.utilization) }, { "bound", toString(layer.bound) } };
}

Json scalingJson(const sweeps::ScalingSweep& sweep)
{
    Json points = Json::array();
    for (const sweeps::ScalingPoint& p : sweep.points)
        points.push_back({ { "num_csx", p.numCsx }, { "samples_per_s", number(p.samplesPerS) },
            { "speedup", number(p.speedup) }, { "efficiency", number(p.efficiency) },
            { "step_time_s", number(p.stepTimeS) }, { "bottleneck", toString(p.bottleneck) },
            { "execution", toString(p.execution) }, { "micro_batch_size", p.microBatch } });
    return { { "system", sweep.system }, { "global_batch", sweep.globalBatch },
        { "baseline_samples_per_s", number(sweep.baselineSamplesPerS) }, { "points", std::move(points) } };
}

// The keys of sweeps::sensitivityToJson.
sweeps::Sensitivity readSensitivity(const Reader& r)
{
    sweeps::Sensitivity result;
    result.figure = r.text("figure");
    result.baseline = r.real("baseline");
    result.low = r.real("low");
    result.high = r.real("high");
    r.each("factors", [&](const Reader& f) {
        result.factors.push_back({ f.text("name"), f.text("reason"), f.real("value"), f.real("low_value"),
            f.real("high_value"), f.real("figure_at_low"), f.real("figure_at_high") });
    });
    return result;
}

Rect readRect(const Reader& r)
{
    return { r.integer<int>("x"), r.integer<int>("y"), r.integer<int>("w"), r.integer<int>("h") };
}

Manifest readManifest(const Reader& r)
{
    Manifest m;
    m.version = r.text("version");
    m.createdUtc = r.text("created_utc");
    const Reader input = r.object("input");
    m.inputPath = input.text("path");
    m.inputSha256 = input.text("sha256");
    m.model = r.text("model");
    const Reader options = r.object("options");
    m.system = options.text("system");
    m.numCsx = options.integer<int>("num_csx");
    m.mode = options.named<RunMode>("mode");
    m.executionRequested = options.named<ExecutionChoice>("execution");
    m.maxSteps = options.integer<int>("max_steps");
    m.globalBatch = options.integer("batch_size");
    m.users = options.integer<int>("users");
    m.promptTokens = options.integer("prompt_tokens");
    m.calibrationVersion = r.text("calibration_version");
    if (r.has("calibration_profile")) // reports of earlier versions have none
        m.calibrationProfile = r.text("calibration_profile");
    m.seed = r.integer<std::uint64_t>("seed");
    return m;
}

engine::Metrics readTotals(const Reader& r)
{
    engine::Metrics m;
    m.mode = r.named<RunMode>("mode");
    m.execution = r.named<ExecutionMode>("execution");
    m.system = r.text("system");
    m.numCsx = r.atLeast<int>("num_csx", 1);
    m.numSystems = r.atLeast<int>("num_systems", 1);
    m.stepTimeS = r.positive("step_time_s");
    m.samplesPerS = r.nonNegative("samples_per_s");
    m.tokensPerStep = r.nonNegative("tokens_per_step");
    m.tokensPerS = r.nonNegative("tokens_per_s");
    m.mfu = r.fraction("mfu");
    const Reader u = r.object("utilization");
    m.utilization = { u.fraction("compute"), u.fraction("fabric"), u.fraction("io"), u.fraction("memoryx"),
        u.fraction("swarmx") };
    m.bottleneck = r.named<Bound>("bottleneck");
    m.modelFlopsPerStep = r.nonNegative("model_flops_per_step");
    m.hardwareFlopsPerStep = r.nonNegative("hardware_flops_per_step");
    m.peakFlopsPerS = r.nonNegative("peak_flops_per_s");
    m.streamedBytesPerStep = r.nonNegative("streamed_bytes_per_step");
    if (r.has("calibration_profile")) // reports written before software profiles have none
        m.calibrationProfile = r.text("calibration_profile");
    // Reports written before checkpoint strategies existed have none of these keys.
    if (r.has("checkpoint_strategy") && !r.at("checkpoint_strategy").is_null()) {
        m.checkpointStrategy = r.named<CheckpointStrategy>("checkpoint_strategy");
        m.checkpointEvery = r.integer<int>("checkpoint_every");
    }
    if (r.has("recompute_flops_per_step")) {
        m.recomputeFlopsPerStep = r.nonNegative("recompute_flops_per_step");
        m.checkpointBytesPerStep = r.nonNegative("checkpoint_bytes_per_step");
    }
    m.linkBytesPerS = r.nonNegative("stream_bytes_per_s");
    m.linkBound = r.named<Bound>("stream_bound");
    // Reports written before MemoryX's flash tier was modelled have neither.
    if (r.has("flash_streamed_bytes_per_step")) {
        m.flashStreamedBytesPerStep = r.nonNegative("flash_streamed_bytes_per_step");
        m.flashLinkBytesPerS = r.nonNegative("flash_stream_bytes_per_s");
    }
    m.stepTimesS = r.reals("step_times_s", true);
    if (m.mode == RunMode::Inference) {
        m.timeToFirstTokenS = r.nonNegative("time_to_first_token_s");
        m.users = r.atLeast<int>("users", 1);
        m.promptTokens = r.atLeast<std::int64_t>("prompt_tokens", 0);
        m.aggregateTokensPerS = r.nonNegative("aggregate_tokens_per_s");
        // Reports written before these were kept have neither.
        if (r.has("token_interval_s"))
            m.tokenIntervalS = r.nonNegative("token_interval_s");
        if (r.has("speculative") && !r.at("speculative").is_null()) {
            const Reader s = r.object("speculative");
            const ReadJson& shares = s.at("shares_wafer");
            if (!shares.is_boolean())
                throw ReadError { s.where("shares_wafer"), "expected true or false" };
            m.speculative = engine::SpeculativeDecode { s.text("draft"), s.integer<int>("draft_wafers"),
                shares.get<bool>(), s.integer<int>("wafer"), s.integer<int>("draft_tokens"),
                s.fraction("acceptance_rate"), s.nonNegative("tokens_per_pass"), s.nonNegative("draft_token_s"),
                s.nonNegative("draft_interval_s"), s.nonNegative("pass_s"), s.nonNegative("target_tokens_per_s") };
        }
    } else {
        m.batchPerSystem = r.atLeast<std::int64_t>("batch_per_system", 0);
        m.microBatch = r.atLeast<std::int64_t>("micro_batch_size", 0);
        m.microBatchesPerStep = r.atLeast<std::int64_t>("micro_batches_per_step", 0);
    }
    m.notes = r.texts("notes");
    const Reader bounds = r.object("bound_time_s");
    for (const auto& [name, time] : r.at("bound_time_s").items()) {
        (void)time;
        const std::optional<Bound> bound = fromName<Bound>(name);
        if (!bound)
            throw ReadError { bounds.where(name), Reader::unknownName<Bound>(name, name) };
        m.boundTimeS[*bound] = bounds.nonNegative(name);
    }
    return m;
}

// A step: training and eval give samples_per_s, inference tokens_per_s (for each user), as
// `run --json` names them.
Json stepJson(const engine::StepFigures& step, bool inference)
{
    Json json = { { "step", step.step }, { "start_s", number(step.startS) }, { "end_s", number(step.endS) },
        { "step_time_s", number(step.stepTimeS) } };
    if (inference)
        json["tokens_per_s"] = number(step.tokensPerS);
    else
        json["samples_per_s"] = number(step.samplesPerS);
    const engine::Utilization& u = step.utilization;
    json["mfu"] = number(step.mfu);
    json["utilization"] = { { "compute", number(u.compute) }, { "fabric", number(u.fabric) }, { "io", number(u.io) },
        { "memoryx", number(u.memoryx) }, { "swarmx", number(u.swarmx) } };
    return json;
}

engine::StepFigures readStep(const Reader& r)
{
    engine::StepFigures step;
    step.step = r.integer<int>("step");
    step.startS = r.nonNegative("start_s");
    step.endS = r.nonNegative("end_s");
    if (step.endS < step.startS)
        throw ReadError { r.where("end_s"), "'end_s' is before 'start_s': a step ends after it starts" };
    step.stepTimeS = r.positive("step_time_s");
    if (r.has("tokens_per_s"))
        step.tokensPerS = r.nonNegative("tokens_per_s");
    else
        step.samplesPerS = r.nonNegative("samples_per_s");
    step.mfu = r.fraction("mfu");
    const Reader u = r.object("utilization");
    step.utilization = { u.nonNegative("compute"), u.nonNegative("fabric"), u.nonNegative("io"),
        u.nonNegative("memoryx"), u.nonNegative("swarmx") };
    return step;
}

RunReport readReport(const Reader& root)
{
    if (root.integer("report_version") != kReportVersion)
        throw ReadError { "/report_version",
            "report_version " + std::to_string(root.integer("report_version")) + " is not the version this "
                + "WaferScope reads (" + std::to_string(kReportVersion) + ")" };
    RunReport report;
    report.manifest = readManifest(root.object("manifest"));
    const Reader plan = root.object("plan");
    report.plan = { plan.named<ExecutionMode>("execution"), plan.integer<int>("fabric_width"),
        plan.integer<int>("fabric_height"), readRect(plan.object("usable")), plan.integer<int>("replicas"),
        plan.integer<int>("stages"), plan.nonNegative("pe_utilization"), plan.nonNegative("sram_utilization"),
        plan.texts("notes") };
    report.metrics = readTotals(root.object("totals"));
    root.each("layers", [&](const Reader& r) {
        report.metrics.layers.push_back({ r.text("name"), r.named<engine::LayerKind>("kind"), r.integer<int>("region"),
            r.integer("params"), r.nonNegative("flops"), r.nonNegative("time_s"), r.nonNegative("utilization"),
            r.named<Bound>("bound") });
    });
    root.each("regions", [&](const Reader& r) {
        report.regions.push_back({ r.text("op"), r.integer<int>("stage"), r.integer<int>("system"),
            r.integer<int>("replica"), readRect(r.object("rect")), r.integer("sram_bytes_per_pe"),
            r.nonNegative("time_s"), r.nonNegative("flops"), r.nonNegative("utilization"), r.named<Bound>("bound") });
    });
    root.each("systems", [&](const Reader& r) {
        const ReadJson& same = r.at("same_schedule_as_system_0");
        if (!same.is_boolean())
            throw ReadError { r.where("same_schedule_as_system_0"), "expected true or false" };
        report.systems.push_back({ r.integer<int>("index"), r.nonNegative("compute_busy_s"), r.nonNegative("io_busy_s"),
            r.nonNegative("flops"), r.nonNegative("io_bytes"), r.nonNegative("compute_utilization"),
            same.get<bool>() });
    });
    const Reader timeline = root.object("timeline");
    report.spanS = timeline.nonNegative("span_s");
    timeline.each("lanes", [&](const Reader& r) {
        report.lanes.push_back({ r.named<engine::LaneKind>("lane"), r.integer<int>("index"), r.text("name"),
            r.nonNegative("busy_s"), r.nonNegative("bytes"), r.nonNegative("flops"), r.reals("occupancy") });
    });
    // Reports written before per-step figures have none.
    if (root.has("steps"))
        root.each("steps", [&](const Reader& r) { report.steps.push_back(readStep(r)); });
    if (!root.at("scaling").is_null()) {
        const Reader s = root.object("scaling");
        sweeps::ScalingSweep sweep;
        sweep.system = s.text("system");
        sweep.globalBatch = s.integer("global_batch");
        sweep.baselineSamplesPerS = s.nonNegative("baseline_samples_per_s");
        s.each("points", [&](const Reader& p) {
            sweep.points.push_back({ p.atLeast<int>("num_csx", 1), p.nonNegative("samples_per_s"),
                p.nonNegative("speedup"), p.nonNegative("efficiency"), p.positive("step_time_s"),
                p.named<Bound>("bottleneck"), p.named<ExecutionMode>("execution"), p.integer("micro_batch_size") });
        });
        report.scaling = std::move(sweep);
    }
    // Reports of model-level runs (and those written before cycle-level runs wrote reports) have none.
    if (root.has("cycle_level") && !root.at("cycle_level").is_null())
        report.cycleLevel = readCycleLevel(root.object("cycle_level"));
    // Reports written without a sensitivity sweep (and before there was one) have none.
    if (root.has("sensitivity") && !root.at("sensitivity").is_null())
        report.sensitivity = readSensitivity(root.object("sensitivity"));
    return report;
}

} // namespace

std::string reportToJson(const RunReport& report, int indent)
{
    Json json;
    json["report_version"] = kReportVersion;
    json["manifest"] = manifestJson(report.manifest);
    const PlanSummary& plan = report.plan;
    json["plan"] = { { "execution", toString(plan.execution) }, { "fabric_width", plan.fabricWidth },
        { "fabric_height", plan.fabricHeight }, { "usable", rectJson(plan.usable) }, { "replicas", plan.replicas },
        { "stages", plan.stages }, { "pe_utilization", number(plan.peUtilization) },
        { "sram_utilization", number(plan.sramUtilization) }, { "notes", plan.notes } };
    json["totals"] = totalsJson(report.metrics);
    Json layers = Json::array();
    for (const engine::LayerMetrics& layer : report.metrics.layers)
        layers.push_back(layerJson(layer));
    json["layers"] = std::move(layers);
    Json regions = Json::array();
    for (const RegionReport& r : report.regions)
        regions.push_back({ { "op", r.op }, { "stage", r.stage }, { "system", r.system }, { "replica", r.replica },
            { "rect", rectJson(r.rect) }, { "sram_bytes_per_pe", r.sramBytesPerPe }, { "time_s", number(r.timeS) },
            { "flops", number(r.flops) }, { "utilization", number(r.utilization) }, { "bound", toString(r.bound) } });
    json["regions"] = std::move(regions);
    Json systems = Json::array();
    for (const SystemReport& s : report.systems)
        systems.push_back({ { "index", s.index }, { "compute_busy_s", number(s.computeBusyS) },
            { "io_busy_s", number(s.ioBusyS) }, { "flops", number(s.flops) }, { "io_bytes", number(s.ioBytes) },
            { "compute_utilization", number(s.computeUtilization) },
            { "same_schedule_as_system_0", s.sameScheduleAs0 } });
    json["systems"] = std::move(systems);
    Json lanes = Json::array();
    for (const LaneReport& lane : report.lanes) {
        Json occupancy = Json::array();
        for (const double share : lane.occupancy)
            occupancy.push_back(number(share));
        lanes.push_back({ { "lane", engine::toString(lane.lane) }, { "index", lane.index }, { "name", lane.name },
            { "busy_s", number(lane.busyS) }, { "bytes", number(lane.bytes) }, { "flops", number(lane.flops) },
            { "occupancy", std::move(occupancy) } });
    }
    json["timeline"] = { { "span_s", number(report.spanS) }, { "lanes", std::move(lanes) } };
    Json steps = Json::array();
    for (const engine::StepFigures& step : report.steps)
        steps.push_back(stepJson(step, report.metrics.mode == engine::RunMode::Inference));
    json["steps"] = std::move(steps);
    json["scaling"] = report.scaling ? scalingJson(*report.scaling) : Json(nullptr);
    if (report.cycleLevel)
        json["cycle_level"] = Json::parse(cycleLevelToJson(*report.cycleLevel));
    if (report.sensitivity)
        json["sensitivity"] = Json::parse(sweeps::sensitivityToJson(*report.sensitivity));
    return json.dump(indent) + "\n";
}

Expected<RunReport> reportFromJson(const std::string& text, const std::string& fileName)
{
    const Expected<JsonTree> json
        = parseJsonDocument(text, fileName, kMaxNestingDepth, "not valid JSON: ", "a WaferScope report nests 5");
    if (!json)
        return json.error();
    try {
        return readReport(Reader(*json, ""));
    } catch (const ReadError& error) {
        const JsonLocator::Position at = JsonLocator(text).locate(error.pointer);
        return Diagnostic { fileName, at.line, at.column, error.message };
    } catch (const nlohmann::json::exception& error) {
        return Diagnostic { fileName, 1, 1, std::string("not a WaferScope report: ") + error.what() };
    }
}

std::string reportCsv(const RunReport& report)
{
    std::string csv = "name,kind,params,flops,region,time_s,utilization,bound\n";
    for (const engine::LayerMetrics& layer : report.metrics.layers) {
        const Json row = layerJson(layer);
        const auto cell = [&](const char* key) { return row[key].is_null() ? std::string() : row[key].dump(); };
        csv += cells::csvField(layer.name) + "," + cells::csvField(toString(layer.kind)) + "," + cell("params") + ","
            + cell("flops") + "," + cell("region") + "," + cell("time_s") + "," + cell("utilization") + ","
            + cells::csvField(toString(layer.bound)) + "\n";
    }
    return csv;
}

} // namespace waferscope::core::report
