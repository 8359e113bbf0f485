// The cycle-level part of a run directory: made from the run, written as report.json's
// "cycle_level" and as cycle_vs_model.csv, read back.
#include "core/report/cyclelevelreport.h"

#include "core/engine/engine.h"
#include "core/report/jsonreader.h"
#include "core/report/reportformat.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>

namespace waferscope::core::report {

namespace {

using Json = nlohmann::ordered_json;

Json regionJson(const CycleRegionReport& region)
{
    return { { "op", region.op }, { "kernel", region.kernel }, { "measured_cycles", region.measuredCycles },
        { "model_cycles", region.modelCycles }, { "link_wavelets", region.linkWavelets },
        { "busy_fraction", region.busyFraction }, { "pes", region.pes } };
}

std::vector<std::int32_t> tokenIds(const jsonread::Reader& r, const std::string& key)
{
    std::vector<std::int32_t> ids;
    const jsonread::ReadJson& list = r.array(key);
    for (std::size_t i = 0; i < list.size(); ++i) {
        const jsonread::ReadJson& value = list[i];
        const bool fits = value.is_number_unsigned()
            ? std::in_range<std::int32_t>(value.get<std::uint64_t>())
            : value.is_number_integer() && std::in_range<std::int32_t>(value.get<std::int64_t>());
        if (!fits)
            throw jsonread::ReadError { r.where(key) + "/" + std::to_string(i), "expected a token id" };
        ids.push_back(value.get<std::int32_t>());
    }
    return ids;
}

} // namespace

std::vector<double> modelCyclesOfRegions(
    const cyclelevel::CycleRunResult& run, const ModelGraph& graph, const ExecutionPlan& plan, const SystemSpec& system)
{
    engine::RunOptions options;
    options.mode = RunMode::Inference;
    options.maxSteps = 1;
    options.promptTokens = std::max<std::int64_t>(1, std::int64_t(run.prompt.size() + run.decode.size()) - 1);
    engine::Calibration mechanisms = engine::builtinCalibration();
    mechanisms.regionLaunchCycles = 0.0;
    std::map<std::string, double> byOp;
    if (Expected<engine::RunResult> model = engine::run(plan, graph, system, options, mechanisms))
        for (const engine::LayerMetrics& layer : model->metrics.layers)
            byOp[layer.name] = layer.timeS * system.wafer.clockHz;
    std::vector<double> cycles;
    for (const cyclelevel::RegionCycles& region : run.regions) {
        const auto it = byOp.find(region.op);
        cycles.push_back(it == byOp.end() ? 0.0 : it->second);
    }
    return cycles;
}

CycleLevelReport cycleLevelReport(const cyclelevel::CycleRunResult& run)
{
    CycleLevelReport report;
    report.model = run.model;
    report.system = run.system;
    report.promptTokens = std::int64_t(run.prompt.size());
    report.decodeSteps = std::int64_t(run.decode.size());
    report.cyclesPerToken = run.cyclesPerToken;
    report.tokensPerS = run.tokensPerS;
    report.clockHz = run.clockHz;
    report.prefillCycles = run.prefillCycles;
    report.ttftCycles = run.ttftCycles;
    report.prefillBlock = run.prefillBlock;
    report.prefillModelCycles = run.prefillModelCycles;
    report.maxAbsLogitError = run.maxAbsLogitError;
    report.tokensMatchReference = run.tokensMatchReference;
    report.gapAtDifference = run.gapAtDifference;
    report.prompt = run.prompt;
    report.generated = run.tokens;
    report.referenceGenerated = run.referenceTokens;
    for (std::size_t i = 0; i < run.regions.size(); ++i) {
        const cyclelevel::RegionCycles& region = run.regions[i];
        report.regions.push_back({ region.op, toString(region.kernel), region.measuredCycles,
            i < run.modelCycles.size() ? run.modelCycles[i] : 0.0, region.linkWavelets, region.busyFraction,
            region.pes });
    }
    report.colorsAtBusiestRouter = run.colorsAtBusiestRouter;
    report.peakSramBytesPerPe = run.peakSramBytesPerPe;
    report.hostBytes = run.hostBytes;
    report.buildS = run.buildS;
    report.referenceS = run.referenceS;
    report.prefillS = run.prefillS;
    report.decodeTokenS = run.decodeS;
    report.notes = run.notes;
    return report;
}

std::optional<double> measuredOverModel(double measured, double model)
{
    if (!std::isfinite(measured) || !std::isfinite(model) || model == 0.0)
        return std::nullopt;
    return measured / model;
}

std::string cycleLevelToJson(const CycleLevelReport& r, int indent)
{
    Json json;
    json["level"] = "cycle";
    json["model"] = r.model;
    json["system"] = r.system;
    json["prompt_tokens"] = r.promptTokens;
    json["tokens"] = r.decodeSteps;
    json["cycles_per_token"] = r.cyclesPerToken;
    json["tokens_per_s"] = r.tokensPerS;
    json["clock_hz"] = r.clockHz;
    json["prefill_cycles"] = r.prefillCycles;
    json["ttft_cycles"] = r.ttftCycles;
    json["prefill_model_cycles"] = r.prefillModelCycles > 0.0 ? Json(r.prefillModelCycles) : Json();
    json["prefill_block"] = r.prefillBlock;
    json["max_abs_logit_error"] = r.maxAbsLogitError;
    json["tokens_match_reference"] = r.tokensMatchReference;
    json["gap_at_difference"] = r.gapAtDifference < 0.0 ? Json() : Json(r.gapAtDifference);
    json["prompt"] = r.prompt;
    json["generated"] = r.generated;
    json["reference_generated"] = r.referenceGenerated;
    Json regions = Json::array();
    for (const CycleRegionReport& region : r.regions)
        regions.push_back(regionJson(region));
    json["regions"] = std::move(regions);
    json["fabric"] = { { "colors_at_busiest_router", r.colorsAtBusiestRouter },
        { "peak_sram_bytes_per_pe", r.peakSramBytesPerPe }, { "host_bytes", r.hostBytes } };
    json["wall_s"] = { { "build", r.buildS }, { "reference", r.referenceS }, { "prefill", r.prefillS },
        { "decode_token", r.decodeTokenS } };
    json["notes"] = r.notes;
    return json.dump(indent);
}

CycleLevelReport readCycleLevel(const jsonread::Reader& r)
{
    CycleLevelReport report;
    if (r.text("level") != "cycle")
        throw jsonread::ReadError { r.where("level"), "'level' must be \"cycle\"" };
    report.model = r.text("model");
    report.system = r.text("system");
    report.promptTokens = r.integer("prompt_tokens");
    report.decodeSteps = r.integer("tokens");
    report.cyclesPerToken = r.real("cycles_per_token");
    report.tokensPerS = r.real("tokens_per_s");
    report.clockHz = r.real("clock_hz");
    report.prefillCycles = r.integer<std::uint64_t>("prefill_cycles");
    if (r.has("ttft_cycles"))
        report.ttftCycles = r.integer<std::uint64_t>("ttft_cycles");
    if (r.has("prefill_model_cycles") && !r.at("prefill_model_cycles").is_null())
        report.prefillModelCycles = r.real("prefill_model_cycles");
    if (r.has("prefill_block"))
        report.prefillBlock = int(r.integer("prefill_block"));
    report.maxAbsLogitError = r.real("max_abs_logit_error");
    const jsonread::ReadJson& match = r.at("tokens_match_reference");
    if (!match.is_boolean())
        throw jsonread::ReadError { r.where("tokens_match_reference"), "expected true or false" };
    report.tokensMatchReference = match.get<bool>();
    report.gapAtDifference = r.at("gap_at_difference").is_null() ? -1.0 : r.real("gap_at_difference");
    report.prompt = tokenIds(r, "prompt");
    report.generated = tokenIds(r, "generated");
    report.referenceGenerated = tokenIds(r, "reference_generated");
    r.each("regions", [&](const jsonread::Reader& g) {
        report.regions.push_back(
            { g.text("op"), g.text("kernel"), g.integer<std::uint64_t>("measured_cycles"), g.real("model_cycles"),
                g.integer<std::uint64_t>("link_wavelets"), g.real("busy_fraction"), g.integer("pes") });
    });
    const jsonread::Reader fabric = r.object("fabric");
    report.colorsAtBusiestRouter = fabric.integer<int>("colors_at_busiest_router");
    report.peakSramBytesPerPe = fabric.integer<std::uint64_t>("peak_sram_bytes_per_pe");
    report.hostBytes = fabric.integer<std::uint64_t>("host_bytes");
    const jsonread::Reader wall = r.object("wall_s");
    report.buildS = wall.real("build");
    report.referenceS = wall.real("reference");
    report.prefillS = wall.real("prefill");
    report.decodeTokenS = wall.real("decode_token");
    report.notes = r.texts("notes");
    return report;
}

std::string cycleVsModelCsv(const CycleLevelReport& report)
{
    std::string csv = "op,kernel,measured_cycles,model_cycles,ratio,link_wavelets,busy_fraction,pes\n";
    for (const CycleRegionReport& region : report.regions) {
        const Json row = regionJson(region);
        const auto cell = [&](const char* key) { return row[key].is_null() ? std::string() : row[key].dump(); };
        const std::optional<double> ratio = measuredOverModel(double(region.measuredCycles), region.modelCycles);
        csv += cells::csvField(region.op) + "," + cells::csvField(region.kernel) + "," + cell("measured_cycles") + ","
            + cell("model_cycles") + "," + (ratio ? Json(*ratio).dump() : std::string()) + "," + cell("link_wavelets")
            + "," + cell("busy_fraction") + "," + cell("pes") + "\n";
    }
    return csv;
}

} // namespace waferscope::core::report
