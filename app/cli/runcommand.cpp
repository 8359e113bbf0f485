// No header of its own: defines runRunCommand and runScaleCommand, declared in app/cli/commands.h.
// `run`: execute a compiled model on a simulated cluster; `scale`: the same over a list of
// system counts.
#include "app/cli/argparser.h"
#include "app/cli/commands.h"
#include "app/cli/exitcode.h"
#include "app/cli/jobinput.h"
#include "app/cli/progressline.h"

#include "core/common/displaytext.h"
#include "core/common/units.h"
#include "core/cyclelevel/cyclerun.h"
#include "core/engine/engine.h"
#include "core/hardware/builtinpresets.h"
#include "core/report/cyclelevelreport.h"
#include "core/report/rundirectory.h"
#include "core/report/runreport.h"
#include "core/study/study.h"
#include "core/sweeps/scaling.h"
#include "core/sweeps/sensitivity.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <ostream>
#include <thread>

#include <unistd.h>

namespace waferscope::cli {

namespace {

std::int64_t parseCount(const ArgParser& parser, const char* name, std::int64_t low, std::int64_t high)
{
    const std::optional<std::string> text = parser.value(name);
    if (!text)
        return 0;
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (error != std::errc() || end != text->data() + text->size() || value < low || value > high)
        throw UsageError { std::string("--") + name + " expects an integer " + std::to_string(low) + ".."
            + std::to_string(high) + ", got '" + *text + "'" };
    return value;
}

core::RunMode parseRunKind(const ArgParser& parser, bool inferenceAllowed)
{
    const std::string mode = parser.value("mode").value_or(core::toString(core::RunMode::Train));
    const std::optional<core::RunMode> kind = core::fromName<core::RunMode>(mode);
    if (kind && (inferenceAllowed || *kind != core::RunMode::Inference))
        return *kind;
    std::vector<std::string> allowed = core::allNames<core::RunMode>();
    if (!inferenceAllowed)
        std::erase(allowed, core::toString(core::RunMode::Inference));
    throw UsageError { "--mode expects " + core::choiceList(allowed) + ", got '" + mode + "'" };
}

// "1,2,4" -> {1, 2, 4}, sorted and unique; `option` names the flag in the error.
std::vector<int> parseCountList(const std::string& list, const char* option)
{
    std::vector<int> counts;
    for (std::size_t begin = 0; begin <= list.size();) {
        const std::size_t comma = std::min(list.find(',', begin), list.size());
        const std::string item = list.substr(begin, comma - begin);
        int value = 0;
        const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
        if (item.empty() || error != std::errc() || end != item.data() + item.size() || value < 1 || value > 4096)
            throw UsageError { std::string("--") + option + " expects a comma-separated list of integers 1..4096, got '"
                + list + "'" };
        counts.push_back(value);
        begin = comma + 1;
    }
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    return counts;
}

// What `run` and `sensitivity` both take: --mode, --batch_size, --users, --prompt_tokens (whose
// help says `promptHelp`), besides the job options.
void addRunShapeOptions(ArgParser& parser, const std::string& promptHelp)
{
    addJobOptions(parser);
    parser.addOption("mode", "MODE", "train (default), eval or inference");
    parser.addOption("batch_size", "B", "training: global batch over all systems (default: the config's)");
    parser.addOption("users", "U", "inference: concurrent users sharing the pipeline (default 1)");
    parser.addOption("prompt_tokens", "P", promptHelp);
}

struct RunShape {
    core::engine::RunOptions run;
    core::CompileOptions compile;
};

RunShape parseRunShape(const ArgParser& parser)
{
    RunShape shape;
    shape.run.mode = parseRunKind(parser, true);
    shape.run.globalBatch = parseCount(parser, "batch_size", 1, 1 << 24);
    shape.run.users = int(std::max<std::int64_t>(1, parseCount(parser, "users", 1, 1 << 16)));
    shape.run.promptTokens = parseCount(parser, "prompt_tokens", 1, 1 << 24);
    shape.compile.mode = core::compileModeFor(shape.run.mode);
    shape.compile.execution = parseExecution(parser);
    shape.compile.numSystems = parseNumCsx(parser);
    return shape;
}

// The progress line of a study: its stage, with the sweep's runs or the fabric's positions.
std::function<void(const core::study::StudyProgress&)> progressOf(ProgressLine& line)
{
    return [&line](const core::study::StudyProgress& at) {
        using core::study::StudyStage;
        std::string label = at.stage == StudyStage::Scaling ? "sweep" : core::study::toString(at.stage);
        if (at.stage == StudyStage::CycleLevel)
            label = at.detail + " position " + std::to_string(at.done + 1) + "/" + std::to_string(at.total);
        else if (at.total > 0)
            label += " " + std::to_string(at.done) + "/" + std::to_string(at.total);
        line.set(label, at.stageIndex, at.stageCount);
    };
}

// Runs the study; prints its error and sets `exitCode` when it fails.
std::optional<core::study::StudyOutcome> runJob(
    const core::study::StudySpec& spec, const ArgParser& parser, std::ostream& err, int& exitCode)
{
    ProgressLine progress(err, !parser.has("quiet") && &err == &std::cerr && ProgressLine::stderrIsTerminal());
    core::study::StudyControl control;
    control.progress = progressOf(progress);
    core::Expected<core::study::StudyOutcome> outcome = core::study::runStudy(spec, control);
    if (outcome)
        return std::move(outcome).value();
    // The study's refusals of --level itself (BadInput; the fabric's refusals of a plan are CannotMap)
    // are usage errors, as the parser's are.
    if (outcome.error().file == "--level" && outcome.error().kind == core::Diagnostic::Kind::BadInput)
        throw UsageError { outcome.error().message };
    exitCode = printDiagnostic(err, outcome.error());
    return std::nullopt;
}

// `run --level cycle`: the plan executed on the cycle-level fabric (core/cyclelevel/cyclerun.h).
// With --model_dir, the model-level report of the same plan and prompt, joined by the cycle-level
// figures.
// A positive number option, or 0 when absent.
double parseRate(const ArgParser& parser, const char* name)
{
    const std::optional<std::string> text = parser.value(name);
    if (!text)
        return 0.0;
    double value = 0.0;
    const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (error != std::errc() || end != text->data() + text->size() || !(value > 0.0) || !std::isfinite(value))
        throw UsageError { std::string("--") + name + " expects a number above 0, got '" + *text + "'" };
    return value;
}

std::uint64_t parseSeedAndThreads(const ArgParser& parser, core::study::StudySpec& spec)
{
    spec.cycle.seed = std::uint64_t(parseCount(parser, "seed", 0, std::int64_t(1) << 62));
    if (!parser.value("seed"))
        spec.cycle.seed = 1;
    const std::int64_t threads = parseCount(parser, "threads", 1, 1024);
    spec.cycle.threads = threads > 0 ? int(threads) : int(std::max(1u, std::thread::hardware_concurrency()));
    return spec.cycle.seed;
}

// `run --mode train --level cycle` (core/cyclelevel/trainrun.h).
void parseTrainCycleLevel(const ArgParser& parser, core::study::StudySpec& spec)
{
    if (parser.value("sweep") || parser.value("users") || parser.value("batch_size") || parser.value("tokens")
        || parser.value("prompt_tokens"))
        throw UsageError { "--mode train --level cycle takes --micro_batch_size, --max_sequence_length, --max_steps, "
                           "--layers, --learning_rate, --seed and --threads, not --batch_size, --users, --tokens, "
                           "--prompt_tokens or --sweep" };
    spec.level = core::study::StudyLevel::Cycle;
    spec.cycle.microBatch = parseCount(parser, "micro_batch_size", 1, 1'000'000);
    spec.cycle.steps = int(std::max<std::int64_t>(1, parseCount(parser, "max_steps", 1, 1000)));
    spec.cycle.layers = int(parseCount(parser, "layers", 1, 10'000));
    spec.cycle.learningRate = parseRate(parser, "learning_rate");
    spec.cycle.sequence = parseCount(parser, "max_sequence_length", 1, 1'000'000);
    parseSeedAndThreads(parser, spec);
}

void parseCycleLevel(const ArgParser& parser, core::study::StudySpec& spec)
{
    if (spec.run.mode == core::RunMode::Train)
        return parseTrainCycleLevel(parser, spec);
    if (spec.run.mode != core::RunMode::Inference)
        throw UsageError { "--level cycle runs inference and training (--mode inference or train), not eval" };
    for (const char* option : { "micro_batch_size", "max_sequence_length", "layers", "learning_rate" })
        if (parser.value(option))
            throw UsageError { std::string("--") + option + " is for --mode train --level cycle" };
    if (parser.value("sweep") || parser.value("users") || parser.value("max_steps") || parser.value("batch_size"))
        throw UsageError { "--level cycle takes --tokens, --prompt_tokens, --seed and --threads, not --users, "
                           "--max_steps, --batch_size or --sweep" };
    spec.level = core::study::StudyLevel::Cycle;
    spec.cycle.tokens = int(std::max<std::int64_t>(1, parseCount(parser, "tokens", 1, 4096)));
    spec.cycle.promptTokens = int(parseCount(parser, "prompt_tokens", 1, 4096));
    if (spec.cycle.promptTokens == 0)
        spec.cycle.promptTokens = 16;
    parseSeedAndThreads(parser, spec);
}

int printTrainCycleLevel(const core::cyclelevel::TrainRunResult& result, const ArgParser& parser, std::ostream& out)
{
    if (parser.has("json")) {
        out << core::cyclelevel::trainRunToJson(result) << "\n";
        return kExitOk;
    }
    if (parser.has("quiet"))
        return kExitOk;
    const auto samples = static_cast<long long>(result.microBatch);
    const std::string batch = result.tokens == result.microBatch
        ? core::formatText("%lld sample%s", samples, samples == 1 ? "" : "s")
        : core::formatText("%lld sequence%s of %lld tokens", samples, samples == 1 ? "" : "s",
            static_cast<long long>(result.tokens / std::max<std::int64_t>(1, result.microBatch)));
    out << core::formatText("%s on %s: a training step at cycle level, weight streaming, %s: %llu cycles "
                            "(model %.0f), %.0f samples/s at %.2f GHz\n",
        core::displayText(result.model).c_str(), result.system.c_str(), batch.c_str(),
        static_cast<unsigned long long>(result.cyclesPerStep), result.modelCyclesPerStep, result.samplesPerS,
        result.clockHz / 1e9);
    out << core::formatText("  loss %.6g (reference %.6g, %s); gradients %s the reference's, largest error %.3g "
                            "(%.0f%% of its bound)\n",
        result.loss, result.referenceLoss, result.lossMatchesReference ? "equal" : "differs",
        result.gradsMatchReference ? "match" : "differ from", result.maxAbsGradError, 100.0 * result.worstBoundShare);
    if (result.losses.size() > 1) {
        out << "  losses:";
        for (std::size_t i = 0; i < result.losses.size(); ++i)
            out << core::formatText(" %.4f (%.4f)", result.losses[i], result.referenceLosses[i]);
        out << "  [fabric (reference)]\n";
    }
    out << core::formatText("  %d x %d PEs, %d token(s) a PE; the edge brings %.1f wavelets a cycle after %llu "
                            "cycles\n",
        result.rows, result.columns, result.tokensPerPe, result.ioWaveletsPerCycle,
        static_cast<unsigned long long>(result.edgeStartCycles));
    int opWidth = 9;
    for (const core::cyclelevel::TrainKernelRecord& record : result.regions)
        opWidth = std::max(opWidth, int(core::displayText(record.op).size()));
    out << core::formatText("\n  %-*s kernel           pass                measured     model   link wavelets   busy "
                            "  bytes in  bytes out\n",
        opWidth, "op");
    for (const core::cyclelevel::TrainKernelRecord& record : result.regions)
        out << core::formatText("  %-*s %-16s %-18s %9llu %9.0f %15llu %5.1f%% %10lld %10lld\n", opWidth,
            core::displayText(record.op).c_str(), record.kernel.c_str(), core::nameOf(record.pass),
            static_cast<unsigned long long>(record.measuredCycles), record.modelCycles,
            static_cast<unsigned long long>(record.linkWavelets), 100.0 * record.busyFraction,
            static_cast<long long>(record.bytesIn), static_cast<long long>(record.bytesOut));
    for (const std::string& note : result.notes)
        out << "  note: " << note << "\n";
    return kExitOk;
}

int printCycleLevel(const core::cyclelevel::CycleRunResult& result, const ArgParser& parser,
    const core::report::RunDirectoryWriter* writer, std::ostream& out)
{
    if (parser.has("json")) {
        out << core::cyclelevel::cycleRunToJson(result) << "\n";
        return kExitOk;
    }
    if (parser.has("quiet"))
        return kExitOk;
    const std::string prefillModel = result.prefillModelCycles > 0.0
        ? core::formatText(" on the prefill kernels, model %.0f", result.prefillModelCycles)
        : std::string();
    char line[512];
    std::snprintf(line, sizeof line,
        "%s on %s at cycle level: %.0f cycles per token, %.0f tokens/s at %.2f GHz\n"
        "  prompt %zu tokens (prefill %llu cycles%s, first token after %llu), %zu decode steps; tokens %s the "
        "reference's, largest logit "
        "error %.3g\n",
        core::displayText(result.model).c_str(), result.system.c_str(), result.cyclesPerToken, result.tokensPerS,
        result.clockHz / 1e9, result.prompt.size(), static_cast<unsigned long long>(result.prefillCycles),
        prefillModel.c_str(), static_cast<unsigned long long>(result.ttftCycles), result.decode.size(),
        result.tokensMatchReference ? "match" : "differ from", result.maxAbsLogitError);
    out << line << "\n  region                      kernel       measured     model   link wavelets   busy\n";
    for (std::size_t i = 0; i < result.regions.size(); ++i) {
        const core::cyclelevel::RegionCycles& region = result.regions[i];
        out << core::formatText("  %-27s %-11s %9llu %9.0f %15llu %6.1f%%\n", core::displayText(region.op).c_str(),
            core::toString(region.kernel), static_cast<unsigned long long>(region.measuredCycles),
            result.modelCycles[i], static_cast<unsigned long long>(region.linkWavelets), 100.0 * region.busyFraction);
    }
    for (const std::string& note : result.notes)
        out << "  note: " << note << "\n";
    if (writer)
        out << "  wrote report.json, report.csv, report.html, trace.json, summary.txt and cycle_vs_model.csv to "
            << writer->directory() << "\n";
    return kExitOk;
}

ArgParser runParser()
{
    ArgParser parser("waferscope-cli run",
        "Compiles a Model Zoo params YAML and runs it on a simulated cluster: weight streaming through MemoryX\n"
        "and SwarmX, layer-pipelined training, or multi-wafer inference (prefill and decode). With --model_dir\n"
        "it writes the run's report there: report.json, report.csv, report.html, trace.json and summary.txt.\n"
        "With --level cycle as well, the report is the model level's of the same plan and prompt, joined by\n"
        "the cycle-level run: report.json's \"cycle_level\" (what --json prints), cycle_vs_model.csv (each\n"
        "region's measured cycles against the model's) and report.html's \"Cycle level vs model\" tables.");
    addRunShapeOptions(parser,
        "inference: prompt length for time to first token, and the positions a decode token attends\n"
        "(default 1024 or the context; --level cycle: 16)");
    parser.addOption("max_steps", "K", "steps on the timeline (default 1; the figures are the steady step's)");
    parser.addOption("model_dir", "DIR",
        "write the run's report files into DIR (created; other files are kept), all or none; another\n"
        "run into DIR meanwhile is refused; with --level cycle also cycle_vs_model.csv and the\n"
        "cycle-level figures");
    parser.addOption("level", "LEVEL",
        "model (default): the model-level engine; cycle: inference executed on the cycle-level fabric, every\n"
        "op a kernel on its region, a short prefill then --tokens decode steps, checked against a reference;\n"
        "with --mode train, training steps with weight streaming on the fabric, checked against a reference");
    parser.addOption("tokens", "N",
        "--level cycle: decode steps, each generating one token (default 1). Not fabric --kernel's --tokens");
    parser.addOption("seed", "S", "--level cycle: seed of the random weights and the prompt (default 1)");
    parser.addOption("threads", "T",
        "--level cycle: threads stepping the fabric (default: every core; the bands of rows follow the\n"
        "token's active rows, and any count gives the same result bit for bit)");
    parser.addOption("micro_batch_size", "B",
        "--mode train --level cycle: samples a step (a classifier's, default 16) or sequences (a decoder's, default "
        "1)");
    parser.addOption("max_sequence_length", "S",
        "--mode train --level cycle: a decoder's tokens a sample (its config's, up to 128, unless given; a "
        "classifier's: 1)");
    parser.addOption("layers", "L",
        "--mode train --level cycle: keep the first L hidden layers and the output layer, or a decoder's first L "
        "blocks (default all)");
    parser.addOption(
        "learning_rate", "LR", "--mode train --level cycle: a constant learning rate instead of the config's schedule");
    parser.addOption("sweep", "LIST", "training: also run the scaling sweep over these system counts (1,2,4,8)");
    addCalibrationOption(parser);
    parser.addFlag("json", "print one JSON object on stdout");
    parser.addFlag("quiet", "print nothing on stdout but --json; no progress bar");
    return parser;
}

// The study `run` asks for, its options checked (usage errors throw) before anything is loaded.
core::study::StudySpec parseRunSpec(const ArgParser& parser, core::engine::Calibration calibration)
{
    core::study::StudySpec spec;
    auto [options, compileOptions] = parseRunShape(parser);
    spec.run = options;
    spec.compile = compileOptions;
    spec.calibration = std::move(calibration);
    spec.run.maxSteps = int(std::max<std::int64_t>(1, parseCount(parser, "max_steps", 1, 1000)));
    if (const std::optional<std::string> sweep = parser.value("sweep")) {
        if (spec.run.mode == core::RunMode::Inference)
            throw UsageError { "--sweep is for training and eval runs" };
        spec.scalingCounts = parseCountList(*sweep, "sweep");
    }
    if (const std::optional<std::string> modelDir = parser.value("model_dir"); modelDir && modelDir->empty())
        throw UsageError { "--model_dir expects a directory" };
    const std::string level = parser.value("level").value_or("model");
    if (level != "model" && level != "cycle")
        throw UsageError { "--level expects model or cycle, got '" + level + "'" };
    return spec;
}

// The model level's output: the metrics' JSON, or the report's summary.
int printModelLevel(const core::study::StudyOutcome& outcome, const ArgParser& parser, std::ostream& out)
{
    if (parser.has("json"))
        out << core::engine::metricsToJson(outcome.ran->metrics) << "\n";
    else if (!parser.has("quiet")) {
        out << core::report::reportSummary(*outcome.report);
        if (const std::optional<std::string> modelDir = parser.value("model_dir"))
            out << "  wrote report.json, report.csv, report.html, trace.json and summary.txt to " << *modelDir << "\n";
    }
    return kExitOk;
}

} // namespace

int runRunCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err)
{
    ArgParser parser = runParser();
    if (!parser.parse(args)) {
        out << parser.helpText();
        return kExitOk;
    }
    core::Expected<core::engine::Calibration> calibration = parseCalibration(parser);
    if (!calibration)
        return printDiagnostic(err, calibration.error());
    core::study::StudySpec spec = parseRunSpec(parser, std::move(calibration).value());
    const std::optional<std::string> modelDir = parser.value("model_dir");
    if (modelDir)
        if (const std::optional<std::string> problem = modelDirProblem(*modelDir))
            return printDiagnostic(err, core::Diagnostic { *modelDir, 0, 0, *problem });
    // The directory is this run's from now until its files are committed: a second run into it
    // is refused before either computes anything.
    std::optional<core::report::RunDirectoryWriter> writer;
    if (const std::optional<core::Diagnostic> refused = openModelDir(modelDir, writer))
        return printDiagnostic(err, *refused);
    spec.writer = writer ? &*writer : nullptr;
    if (parser.value("level").value_or("model") == "cycle")
        parseCycleLevel(parser, spec);
    else
        for (const char* option :
            { "tokens", "seed", "threads", "micro_batch_size", "max_sequence_length", "layers", "learning_rate" })
            if (parser.value(option))
                throw UsageError { std::string("--") + option + " is for --level cycle" };
    spec.report = spec.level == core::study::StudyLevel::Model; // the summary is the report's
    const std::optional<std::string> params = parser.value("params");
    if (!params)
        throw UsageError { "--params FILE is required" };
    spec.paramsPath = *params;
    spec.systemName = parser.value("system").value_or(std::string(core::defaultPresetName()));
    int exitCode = kExitOk;
    const std::optional<core::study::StudyOutcome> outcome = runJob(spec, parser, err, exitCode);
    if (!outcome)
        return exitCode;
    if (outcome->trainCycleLevel)
        return printTrainCycleLevel(*outcome->trainCycleLevel, parser, out);
    if (spec.level == core::study::StudyLevel::Cycle)
        return printCycleLevel(*outcome->cycleLevel, parser, spec.writer, out);
    return printModelLevel(*outcome, parser, out);
}

int runScaleCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err)
{
    ArgParser parser("waferscope-cli scale",
        "Training throughput against the number of CS-X systems: each count is compiled and run as its own job;\n"
        "speedup and efficiency are against one system, with the limit that binds at each point.");
    parser.addOption("params", "FILE", "the Model Zoo params YAML");
    parser.addOption(
        "system", "NAME", "hardware preset: cs2 or cs3 (default " + std::string(core::defaultPresetName()) + ")");
    parser.addOption("num_csx", "LIST", "system counts, comma separated: 1,2,4,8,16");
    parser.addOption("execution", "MODE", "auto (default), pipelined or weight_streaming");
    parser.addOption("mode", "MODE", "train (default) or eval");
    parser.addOption("batch_size", "B", "global batch over all systems (default: the config's)");
    addCalibrationOption(parser);
    parser.addFlag("json", "print one JSON object on stdout");
    if (!parser.parse(args)) {
        out << parser.helpText();
        return kExitOk;
    }
    const core::Expected<core::engine::Calibration> calibrationOrError = parseCalibration(parser);
    if (!calibrationOrError)
        return printDiagnostic(err, calibrationOrError.error());
    const core::engine::Calibration& calibration = *calibrationOrError;
    core::sweeps::ScalingOptions options;
    options.mode = parseRunKind(parser, false);
    options.execution = parseExecution(parser);
    options.globalBatch = parseCount(parser, "batch_size", 1, 1 << 24);
    options.numCsx = parseCountList(parser.value("num_csx").value_or("1,2,4,8,16"), "num_csx");
    int exitCode = kExitOk;
    const std::optional<JobInput> input = loadJobInput(parser, err, exitCode);
    if (!input)
        return exitCode;
    const core::Expected<core::sweeps::ScalingSweep> sweep
        = core::sweeps::scale(input->graph, input->system, options, calibration);
    if (!sweep)
        return printDiagnostic(err, sweep.error());
    if (parser.has("json")) {
        out << core::sweeps::scalingToJson(*sweep) << "\n";
        return kExitOk;
    }
    out << core::displayText(input->graph.config.name) << " on " << input->system.displayName << ", global batch "
        << sweep->globalBatch << "\n\n  num_csx  samples/s     speedup  efficiency  step        bound\n";
    for (const core::sweeps::ScalingPoint& point : sweep->points) {
        char line[256];
        std::snprintf(line, sizeof line, "  %-8d %-13.2f %-8.2f %-11.3f %-11s %s\n", point.numCsx, point.samplesPerS,
            point.speedup, point.efficiency, core::formatSeconds(point.stepTimeS).c_str(),
            core::toString(point.bottleneck));
        out << line;
    }
    return kExitOk;
}

int runSensitivityCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err)
{
    ArgParser parser("waferscope-cli sensitivity",
        "What a run's result depends on: every assumed hardware value and calibration constant with a\n"
        "plausible range (the presets' and the calibration's \"range\" keys) is varied alone across it, and\n"
        "the run's headline figure (samples/s, or tokens/s per user in inference) recomputed. Factors are\n"
        "sorted by their effect. Runs in parallel on every core.");
    addRunShapeOptions(parser, "inference: prompt length (default 1024 or the context)");
    addCalibrationOption(parser);
    parser.addFlag("json", "print one JSON object on stdout");
    if (!parser.parse(args)) {
        out << parser.helpText();
        return kExitOk;
    }
    const core::Expected<core::engine::Calibration> calibration = parseCalibration(parser);
    if (!calibration)
        return printDiagnostic(err, calibration.error());
    const auto [options, compileOptions] = parseRunShape(parser);
    int exitCode = kExitOk;
    const std::optional<JobInput> input = loadJobInput(parser, err, exitCode);
    if (!input)
        return exitCode;
    if (!compileJob(*input, compileOptions, *calibration, options, "sensitivity", err, exitCode))
        return exitCode;
    const core::Expected<core::sweeps::Sensitivity> result
        = core::sweeps::runSensitivity(input->graph, input->system, compileOptions, options, *calibration);
    if (!result)
        return printDiagnostic(err, result.error());
    if (parser.has("json")) {
        out << core::sweeps::sensitivityToJson(*result) << "\n";
        return kExitOk;
    }
    out << core::formatText("%s on %s: %s %.6g (from %.6g to %.6g over the factors' ranges)\n\n",
        core::displayText(input->graph.config.name).c_str(), input->system.displayName.c_str(), result->figure.c_str(),
        result->baseline, result->low, result->high)
        << "  factor                                   value        range                    "
           "figure at low   figure at high\n";
    for (const core::sweeps::FactorEffect& factor : result->factors) {
        out << core::formatText("  %-40s %-12.4g %-10.4g .. %-10.4g %12.6g %16.6g\n",
            core::displayText(factor.name).c_str(), factor.value, factor.lowValue, factor.highValue, factor.figureAtLow,
            factor.figureAtHigh);
    }
    return kExitOk;
}

} // namespace waferscope::cli
