// `run`: execute a compiled model on a simulated cluster; `scale`: the same over a list of
// system counts.
#include "app/cli/argparser.h"
#include "app/cli/commands.h"
#include "app/cli/exitcode.h"
#include "app/cli/jobinput.h"

#include "core/common/units.h"
#include "core/engine/engine.h"
#include "core/engine/scaling.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <numeric>
#include <ostream>

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

core::engine::RunKind parseRunKind(const ArgParser& parser, bool inferenceAllowed)
{
    const std::string mode = parser.value("mode").value_or("train");
    if (mode == "train")
        return core::engine::RunKind::Train;
    if (mode == "eval")
        return core::engine::RunKind::Eval;
    if (mode == "inference" && inferenceAllowed)
        return core::engine::RunKind::Inference;
    throw UsageError { std::string("--mode expects train, eval") + (inferenceAllowed ? " or inference" : "") + ", got '"
        + mode + "'" };
}

std::string seconds(double s)
{
    if (s >= 1.0)
        return core::formatFixed(s, 3) + " s";
    if (s >= 1e-3)
        return core::formatFixed(s * 1e3, 3) + " ms";
    return core::formatFixed(s * 1e6, 2) + " us";
}

void printRun(
    const core::engine::Metrics& m, const std::string& model, const core::SystemSpec& system, std::ostream& out)
{
    out << model << " on " << m.numSystems << " x " << system.displayName << ": " << m.mode << ", " << m.execution
        << "\n";
    if (m.mode == "inference") {
        out << "  decode " << core::formatFixed(m.tokensPerS, 1) << " tokens/s per user (" << seconds(m.stepTimeS)
            << " per step, " << m.users << " user" << (m.users > 1 ? "s" : "") << "), aggregate "
            << core::formatFixed(m.aggregateTokensPerS, 1) << " tokens/s\n";
        out << "  time to first token " << seconds(m.timeToFirstTokenS) << " for a " << m.promptTokens
            << "-token prompt\n";
    } else {
        out << "  step " << seconds(m.stepTimeS) << "   " << core::formatFixed(m.samplesPerS, 2) << " samples/s   "
            << core::formatFixed(m.tokensPerS, 0) << " tokens/s   batch " << m.batchPerSystem << " per system";
        if (m.execution == "pipelined")
            out << ", " << m.microBatch << " per pipeline copy\n";
        else
            out << " in " << m.microBatchesPerStep << " micro-batch(es) of " << m.microBatch << "\n";
    }
    out << "  MFU " << core::formatFixed(100.0 * m.mfu, 1) << "%   utilization: compute "
        << core::formatFixed(100.0 * m.utilization.compute, 1) << "%, fabric "
        << core::formatFixed(100.0 * m.utilization.fabric, 1) << "%, I/O "
        << core::formatFixed(100.0 * m.utilization.io, 1) << "%, MemoryX "
        << core::formatFixed(100.0 * m.utilization.memoryx, 1) << "%, SwarmX "
        << core::formatFixed(100.0 * m.utilization.swarmx, 1) << "%\n";
    out << "  bottleneck: " << m.bottleneck << "\n";
    for (const std::string& note : m.notes)
        out << "  - " << note << "\n";
    // The layers that take the most time.
    std::vector<std::size_t> order(m.layers.size());
    std::iota(order.begin(), order.end(), std::size_t(0));
    std::stable_sort(order.begin(), order.end(),
        [&](std::size_t a, std::size_t b) { return m.layers[a].timeS > m.layers[b].timeS; });
    const std::size_t shown = std::min<std::size_t>(order.size(), 12);
    out << "\n  slowest layers                       time        util    bound\n";
    for (std::size_t i = 0; i < shown; ++i) {
        const core::engine::LayerMetrics& layer = m.layers[order[i]];
        char line[256];
        std::snprintf(line, sizeof line, "  %-36s %-11s %5.1f%%  %s\n", layer.name.c_str(),
            seconds(layer.timeS).c_str(), 100.0 * layer.utilization, layer.bound.c_str());
        out << line;
    }
    if (shown < order.size())
        out << "  ... " << order.size() - shown << " more (--json prints every layer)\n";
}

} // namespace

int runRunCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err)
{
    ArgParser parser("waferscope-cli run",
        "Compiles a Model Zoo params YAML and runs it on a simulated cluster: weight streaming through MemoryX\n"
        "and SwarmX, layer-pipelined training, or multi-wafer inference (prefill and decode).");
    addJobOptions(parser);
    parser.addOption("mode", "MODE", "train (default), eval or inference");
    parser.addOption("max_steps", "K", "steps on the timeline (default 1; the figures are the steady step's)");
    parser.addOption("batch_size", "B", "training: global batch over all systems (default: the config's)");
    parser.addOption("users", "U", "inference: concurrent users sharing the pipeline (default 1)");
    parser.addOption(
        "prompt_tokens", "P", "inference: prompt length for time to first token (default 1024 or the context)");
    parser.addFlag("json", "print one JSON object on stdout");
    if (!parser.parse(args)) {
        out << parser.helpText();
        return kExitOk;
    }
    core::engine::RunOptions options;
    options.mode = parseRunKind(parser, true);
    options.maxSteps = int(std::max<std::int64_t>(1, parseCount(parser, "max_steps", 1, 1000)));
    options.globalBatch = parseCount(parser, "batch_size", 1, 1 << 24);
    options.users = int(std::max<std::int64_t>(1, parseCount(parser, "users", 1, 1 << 16)));
    options.promptTokens = parseCount(parser, "prompt_tokens", 1, 1 << 24);
    core::CompileOptions compileOptions;
    compileOptions.mode
        = options.mode == core::engine::RunKind::Inference ? core::RunMode::Inference : core::RunMode::Train;
    compileOptions.execution = parseExecution(parser);
    compileOptions.numSystems = parseNumCsx(parser);
    const std::optional<JobInput> input = loadJobInput(parser, err);
    if (!input)
        return kExitBadInput;
    int exitCode = kExitOk;
    const std::optional<core::ExecutionPlan> plan = compileJob(*input, compileOptions, "run", err, exitCode);
    if (!plan)
        return exitCode;
    const core::Expected<core::engine::RunResult> result
        = core::engine::run(*plan, input->graph, input->system, options);
    if (!result) {
        err << "waferscope-cli run: " << result.error().file << ": error: " << result.error().message << "\n";
        return kExitCannotMap;
    }
    if (parser.has("json"))
        out << core::engine::metricsToJson(result->metrics) << "\n";
    else
        printRun(result->metrics, input->graph.config.name, input->system, out);
    return kExitOk;
}

int runScaleCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err)
{
    ArgParser parser("waferscope-cli scale",
        "Training throughput against the number of CS-X systems: each count is compiled and run as its own job;\n"
        "speedup and efficiency are against one system, with the limit that binds at each point.");
    parser.addOption("params", "FILE", "the Model Zoo params YAML");
    parser.addOption("system", "NAME", "hardware preset: cs2 or cs3 (default cs3)");
    parser.addOption("num_csx", "LIST", "system counts, comma separated: 1,2,4,8,16");
    parser.addOption("execution", "MODE", "auto (default), pipelined or weight_streaming");
    parser.addOption("mode", "MODE", "train (default) or eval");
    parser.addOption("batch_size", "B", "global batch over all systems (default: the config's)");
    parser.addFlag("json", "print one JSON object on stdout");
    if (!parser.parse(args)) {
        out << parser.helpText();
        return kExitOk;
    }
    core::engine::ScalingOptions options;
    options.mode = parseRunKind(parser, false);
    options.execution = parseExecution(parser);
    options.globalBatch = parseCount(parser, "batch_size", 1, 1 << 24);
    const std::string list = parser.value("num_csx").value_or("1,2,4,8,16");
    for (std::size_t begin = 0; begin <= list.size();) {
        const std::size_t comma = std::min(list.find(',', begin), list.size());
        const std::string item = list.substr(begin, comma - begin);
        int value = 0;
        const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
        if (item.empty() || error != std::errc() || end != item.data() + item.size() || value < 1 || value > 4096)
            throw UsageError { "--num_csx expects a comma-separated list of integers 1..4096, got '" + list + "'" };
        options.numCsx.push_back(value);
        begin = comma + 1;
    }
    std::sort(options.numCsx.begin(), options.numCsx.end());
    options.numCsx.erase(std::unique(options.numCsx.begin(), options.numCsx.end()), options.numCsx.end());
    const std::optional<JobInput> input = loadJobInput(parser, err);
    if (!input)
        return kExitBadInput;
    const core::Expected<core::engine::ScalingSweep> sweep = core::engine::scale(input->graph, input->system, options);
    if (!sweep) {
        err << "waferscope-cli scale: " << sweep.error().file << ": error: " << sweep.error().message << "\n";
        return sweep.error().file == "--num_csx" ? kExitBadInput : kExitCannotMap;
    }
    if (parser.has("json")) {
        out << core::engine::scalingToJson(*sweep) << "\n";
        return kExitOk;
    }
    out << input->graph.config.name << " on " << input->system.displayName << ", global batch " << sweep->globalBatch
        << "\n\n  num_csx  samples/s     speedup  efficiency  step        bound\n";
    for (const core::engine::ScalingPoint& point : sweep->points) {
        char line[256];
        std::snprintf(line, sizeof line, "  %-8d %-13.2f %-8.2f %-11.3f %-11s %s\n", point.numCsx, point.samplesPerS,
            point.speedup, point.efficiency, seconds(point.stepTimeS).c_str(), point.bottleneck.c_str());
        out << line;
    }
    return kExitOk;
}

} // namespace waferscope::cli
