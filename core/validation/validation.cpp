#include "core/validation/validation.h"

#include "core/common/jsondocument.h"
#include "core/common/jsonlocator.h"
#include "core/common/units.h"
#include "core/compiler/compiler.h"
#include "core/engine/engine.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/builtinsamples.h"
#include "core/model/modelloader.h"
#include "core/study/study.h"
#include "core/sweeps/scaling.h"
#include "core/sweeps/sensitivity.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>

namespace waferscope::core::validation {

namespace {

constexpr std::string_view kFiguresText =
#include "waferscope/validationdata.inc"
    ;

const std::vector<std::string> kKinds { "decode_tokens_per_s", "time_to_first_token_s", "inference_wafers",
    "training_speedup", "sparsity_speedup" };

// 1800 -> "1,800", 1799.93 -> "1,799.9", 3.353 -> "3.35", 0.03798 -> "0.0380": thousands
// separated, a decimal above 10, two below and three significant digits below 1, none for whole
// numbers.
std::string figureText(double value)
{
    const bool whole = std::fabs(value - std::round(value)) < 1e-9;
    // Below 1, three significant digits (0.0380 s), so that a small figure keeps its precision.
    const int small = std::fabs(value) < 1.0 && value != 0.0 ? 2 - int(std::floor(std::log10(std::fabs(value)))) : 2;
    std::string text = formatFixed(value, whole ? 0 : std::fabs(value) >= 10.0 ? 1 : small);
    const std::size_t point = std::min(text.find('.'), text.size());
    for (int at = int(point) - 3; at > (text[0] == '-' ? 1 : 0); at -= 3)
        text.insert(std::size_t(at), ",");
    return text;
}

Expected<ModelGraph> sampleGraph(const std::string& name)
{
    const std::optional<std::string_view> text = builtinSample(name);
    if (!text)
        return Diagnostic { "samples/" + name, 0, 0, "no such built-in sample" };
    Expected<ModelConfig> config = readParamsText(*text, "samples/" + name);
    if (!config)
        return config.error();
    return buildModelGraph(*config);
}

// A run of a plan compiled once (and the draft placed beside it), on `on` under `constants`: a
// study that starts at the run, as `waferscope-cli run` runs it. The plan is held by the caller.
Expected<engine::Metrics> runHeld(const std::shared_ptr<const LoadedModelFile>& model,
    const Expected<engine::CompiledRun>& held, const SystemSpec& on, const engine::Calibration& constants)
{
    if (!held)
        return held.error();
    study::StudySpec spec;
    spec.model = model;
    spec.system = on;
    spec.run = held->options;
    spec.calibration = constants;
    spec.plan = std::shared_ptr<const ExecutionPlan>(std::shared_ptr<const void>(), &held->plan); // not owned
    Expected<study::StudyOutcome> outcome = study::runStudy(spec);
    if (!outcome)
        return outcome.error();
    return outcome->ran->metrics;
}

} // namespace

std::optional<std::string_view> builtinSample(const std::string& fileName)
{
    return core::builtinSample(fileName);
}

Expected<std::vector<PublishedFigure>> parseFigures(std::string_view text, const std::string& fileName)
{
    Expected<JsonTree> parsed = parseJsonDocument(text, fileName, 6, "not valid JSON: ", "a validation file nests 4");
    if (!parsed)
        return parsed.error();
    const JsonTree json = std::move(parsed).value();
    const JsonLocator locator(text);
    const auto located = [&](const std::string& pointer, const std::string& message) {
        const auto at = locator.locate(pointer);
        return Diagnostic { fileName, at.line, at.column, message };
    };
    if (!json.is_object() || !json.contains("schema") || json["schema"] != "waferscope-validation/1")
        return Diagnostic { fileName, 1, 1, "expected an object with \"schema\": \"waferscope-validation/1\"" };
    if (!json.contains("figures") || !json["figures"].is_array())
        return located("/figures", "missing \"figures\" array");
    std::vector<PublishedFigure> figures;
    for (std::size_t i = 0; i < json["figures"].size(); ++i) {
        const nlohmann::json& entry = json["figures"][i];
        const std::string at = "/figures/" + std::to_string(i);
        if (!entry.is_object())
            return located(at, "a figure must be an object");
        PublishedFigure figure;
        for (const auto& [key, target] : std::initializer_list<std::pair<const char*, std::string*>> {
                 { "id", &figure.id }, { "what", &figure.what }, { "unit", &figure.unit }, { "source", &figure.source },
                 { "date", &figure.date }, { "conditions", &figure.conditions }, { "kind", &figure.kind },
                 { "params", &figure.params }, { "system", &figure.system }, { "profile", &figure.profile } }) {
            if (!entry.contains(key) || !entry[key].is_string() || entry[key].get<std::string>().empty())
                return located(at, std::string("figure ") + std::to_string(i) + " needs a \"" + key + "\" text");
            *target = entry[key].get<std::string>();
        }
        if (std::find(kKinds.begin(), kKinds.end(), figure.kind) == kKinds.end())
            return located(at + "/kind",
                "\"kind\" must be decode_tokens_per_s, inference_wafers, training_speedup or sparsity_speedup");
        const nlohmann::json published = entry.value("published", nlohmann::json());
        if (published.is_number() && published.get<double>() > 0.0) {
            figure.published = published.get<double>();
        } else if (published.is_array() && published.size() == 2 && published[0].is_number() && published[1].is_number()
            && published[0].get<double>() > 0.0 && published[1].get<double>() >= published[0].get<double>()) {
            figure.publishedLow = published[0].get<double>();
            figure.publishedHigh = published[1].get<double>();
            figure.published = 0.5 * (*figure.publishedLow + *figure.publishedHigh);
        } else {
            return located(at + "/published", "\"published\" must be a positive number or a range [low, high]");
        }
        if (entry.contains("num_csx")) {
            if (!entry["num_csx"].is_number_integer() || entry["num_csx"].get<int>() < 1
                || entry["num_csx"].get<int>() > 4096)
                return located(at + "/num_csx", "\"num_csx\" must be an integer 1..4096");
            figure.numCsx = entry["num_csx"].get<int>();
        }
        if (figure.kind == "sparsity_speedup") {
            if (!entry.contains("sparse_params") || !entry["sparse_params"].is_string())
                return located(at, "a sparsity_speedup figure needs \"sparse_params\"");
            figure.sparseParams = entry["sparse_params"].get<std::string>();
        }
        if (entry.contains("reported_only")) {
            if (!entry["reported_only"].is_boolean())
                return located(at + "/reported_only", "\"reported_only\" must be true or false");
            figure.reportedOnly = entry["reported_only"].get<bool>();
        }
        if (entry.contains("notes")) {
            if (!entry["notes"].is_string())
                return located(at + "/notes", "\"notes\" must be a text");
            figure.notes = entry["notes"].get<std::string>();
        }
        figures.push_back(std::move(figure));
    }
    return figures;
}

const std::vector<PublishedFigure>& builtinFigures()
{
    static const std::vector<PublishedFigure> figures = [] {
        auto parsed = parseFigures(kFiguresText, "resources/validation/figures.json");
        if (!parsed)
            throw std::logic_error("built-in validation figures are broken: " + parsed.error().format());
        return std::move(parsed).value();
    }();
    return figures;
}

Expected<FigureResult> evaluate(const PublishedFigure& figure, const engine::Calibration* override)
{
    FigureResult result;
    result.figure = figure;
    engine::Calibration calibration = engine::builtinCalibration();
    if (override) {
        calibration = *override;
    } else if (Expected<engine::Calibration> own = engine::resolveCalibration(figure.profile)) {
        calibration = std::move(own).value();
    } else {
        result.notes.push_back("profile " + figure.profile + " is not built in; predicted with " + calibration.profile);
    }
    result.profile = calibration.profile;
    result.fitted = calibration.fittedFigure == figure.id;
    const Expected<SystemSpec> system = loadBuiltinPreset(figure.system);
    if (!system)
        return system.error();
    const Expected<ModelGraph> graph = sampleGraph(figure.params);
    if (!graph)
        return graph.error();
    const std::string params = " --params samples/" + figure.params + " --system " + figure.system;
    const std::string profile = " --calibration " + calibration.profile;
    // A model compiled once, as the figure's own system and profile compile it; the sweep varies
    // the run on that plan (and on the draft placed beside it).
    const auto compiled = [&](const ModelGraph& model, RunMode mode) {
        CompileOptions options;
        options.mode = mode;
        engine::RunOptions run;
        run.mode = mode;
        return engine::compileRun(model, *system, options, run, calibration);
    };
    // The study's model of a graph: the sample's name, no bytes (no report is written).
    const auto studied = [&figure](const ModelGraph& model) {
        return std::make_shared<const LoadedModelFile>(LoadedModelFile { "samples/" + figure.params, {}, model });
    };
    std::optional<Expected<engine::CompiledRun>> target;
    std::optional<Expected<engine::CompiledRun>> thinned;
    // The figure as a function of the hardware and the constants, so that the sensitivity sweep
    // can vary each ranged one alone (core/sweeps/sensitivity.h): its extremes are [low, high].
    sweeps::FigureFunction compute;
    std::optional<ModelGraph> sparse;
    if (figure.kind == "decode_tokens_per_s" || figure.kind == "time_to_first_token_s") {
        const bool rate = figure.kind == "decode_tokens_per_s";
        target = compiled(*graph, RunMode::Inference);
        compute = [&, rate, model = studied(*graph)](
                      const SystemSpec& on, const engine::Calibration& constants) -> Expected<double> {
            const Expected<engine::Metrics> run = runHeld(model, *target, on, constants);
            if (!run)
                return run.error();
            return rate ? run->tokensPerS : run->timeToFirstTokenS;
        };
        result.command = "waferscope-cli run" + params + " --mode inference" + profile;
    } else if (figure.kind == "inference_wafers") {
        compute = [&](const SystemSpec& on, const engine::Calibration& constants) -> Expected<double> {
            CompileOptions options;
            options.mode = RunMode::Inference;
            const Expected<ExecutionPlan> plan = engine::compileFor(*graph, on, options, constants);
            if (!plan)
                return plan.error();
            return double(plan->numSystems);
        };
        result.command = "waferscope-cli compile" + params + " --mode inference" + profile;
    } else if (figure.kind == "training_speedup") {
        compute = [&](const SystemSpec& on, const engine::Calibration& constants) -> Expected<double> {
            sweeps::ScalingOptions options;
            options.numCsx = { 1, figure.numCsx };
            const Expected<sweeps::ScalingSweep> sweep = sweeps::scale(*graph, on, options, constants);
            if (!sweep)
                return sweep.error();
            return sweep->points.back().speedup;
        };
        result.command = "waferscope-cli scale" + params + " --num_csx 1," + std::to_string(figure.numCsx) + profile;
    } else { // sparsity_speedup
        Expected<ModelGraph> pruned = sampleGraph(figure.sparseParams);
        if (!pruned)
            return pruned.error();
        sparse = std::move(pruned).value();
        target = compiled(*graph, RunMode::Train);
        thinned = compiled(*sparse, RunMode::Train);
        compute = [&, denseModel = studied(*graph), sparseModel = studied(*sparse)](
                      const SystemSpec& on, const engine::Calibration& constants) -> Expected<double> {
            const Expected<engine::Metrics> dense = runHeld(denseModel, *target, on, constants);
            if (!dense)
                return dense.error();
            const Expected<engine::Metrics> thin = runHeld(sparseModel, *thinned, on, constants);
            if (!thin)
                return thin.error();
            return dense->stepTimeS / thin->stepTimeS;
        };
        result.command = "waferscope-cli run" + params + profile + " ; waferscope-cli run --params samples/"
            + figure.sparseParams + " --system " + figure.system + profile + "  (step time against step time)";
    }
    const Expected<sweeps::Sensitivity> swept = sweeps::sweep(figure.kind, compute, *system, calibration);
    if (!swept)
        return swept.error();
    result.predicted = swept->baseline;
    result.low = swept->low;
    result.high = swept->high;
    if (figure.publishedLow) {
        const double low = *figure.publishedLow;
        const double high = *figure.publishedHigh;
        result.errorPct = result.predicted < low ? (result.predicted - low) / low * 100.0
            : result.predicted > high            ? (result.predicted - high) / high * 100.0
                                                 : 0.0;
        result.withinRange = result.high >= low && result.low <= high;
    } else {
        result.errorPct = (result.predicted - figure.published) / figure.published * 100.0;
        result.withinRange = result.low <= figure.published && figure.published <= result.high;
    }
    if (!figure.notes.empty())
        result.notes.push_back(figure.notes);
    return result;
}

Expected<std::vector<FigureResult>> evaluateAll(const std::vector<PublishedFigure>& figures,
    const engine::Calibration* override, const std::function<bool(int, int)>& progress)
{
    std::vector<FigureResult> results;
    for (const PublishedFigure& figure : figures) {
        Expected<FigureResult> result = evaluate(figure, override);
        if (!result)
            return result.error();
        results.push_back(std::move(result).value());
        if (progress && !progress(int(results.size()), int(figures.size())))
            return Diagnostic { "validate", 0, 0, "cancelled" };
    }
    return results;
}

std::string resultsToJson(const std::vector<FigureResult>& results)
{
    nlohmann::ordered_json figures = nlohmann::ordered_json::array();
    for (const FigureResult& r : results) {
        const PublishedFigure& f = r.figure;
        nlohmann::ordered_json entry;
        entry["id"] = f.id;
        entry["what"] = f.what;
        entry["published"] = f.publishedLow ? nlohmann::ordered_json::array({ *f.publishedLow, *f.publishedHigh })
                                            : nlohmann::ordered_json(f.published);
        entry["unit"] = f.unit;
        entry["source"] = f.source;
        entry["date"] = f.date;
        entry["conditions"] = f.conditions;
        entry["command"] = r.command;
        entry["profile"] = r.profile;
        entry["fitted"] = r.fitted;
        entry["reported_only"] = f.reportedOnly;
        entry["predicted"] = r.predicted;
        entry["low"] = r.low;
        entry["high"] = r.high;
        entry["error_pct"] = r.errorPct;
        entry["within_range"] = r.withinRange;
        entry["notes"] = r.notes;
        figures.push_back(std::move(entry));
    }
    nlohmann::ordered_json json;
    json["figures"] = std::move(figures);
    return json.dump(2);
}

std::string resultsToMarkdown(const std::vector<FigureResult>& results)
{
    std::string text = "| figure | published | predicted (range) | error | profile | source | notes |\n"
                       "|---|---|---|---|---|---|---|\n";
    for (const FigureResult& r : results) {
        const PublishedFigure& f = r.figure;
        const std::string published = f.publishedLow
            ? figureText(*f.publishedLow) + " to " + figureText(*f.publishedHigh) + " " + f.unit
            : figureText(f.published) + " " + f.unit;
        std::string error = (r.errorPct >= 0.0 ? "+" : "") + formatFixed(r.errorPct, 1) + "%";
        if (r.fitted)
            error = "fitted";
        else if (f.reportedOnly)
            error += " (reported only)";
        std::string notes;
        for (const std::string& note : r.notes)
            notes += (notes.empty() ? "" : "; ") + note;
        const std::string predicted = r.low < r.high
            ? figureText(r.predicted) + " " + f.unit + " (" + figureText(r.low) + " to " + figureText(r.high) + ")"
            : figureText(r.predicted) + " " + f.unit;
        text += "| " + f.what + " | " + published + " | " + predicted + " | " + error + " | " + r.profile + " | "
            + f.source + ", " + f.date + " | " + notes + " |\n";
    }
    return text;
}

} // namespace waferscope::core::validation
