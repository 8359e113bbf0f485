#include "app/cli/argparser.h"
#include "app/cli/commands.h"
#include "app/cli/exitcode.h"

#include "core/common/units.h"
#include "core/compiler/compiler.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"

#include <charconv>
#include <cstdio>
#include <ostream>

namespace waferscope::cli {

namespace {

void printPlan(const core::ExecutionPlan& plan, const core::ModelGraph& graph, const core::SystemSpec& system,
    bool allRegions, std::ostream& out)
{
    out << graph.config.name << " on " << system.displayName << ": " << core::toString(plan.mode) << ", "
        << plan.numSystems << (plan.mode == core::ExecutionMode::Inference ? " wafer(s)" : " system(s)") << ", "
        << plan.regions.size() << " regions\n";
    out << "  PEs used " << core::formatFixed(100.0 * plan.peUtilization, 1) << "%   SRAM used "
        << core::formatFixed(100.0 * plan.sramUtilization, 1) << "%   load imbalance "
        << core::formatFixed(plan.loadImbalance, 3) << "   compiled in " << core::formatFixed(plan.compileMs, 1)
        << " ms\n";
    for (const std::string& note : plan.notes)
        out << "  - " << note << "\n";
    out << "\n  op                                 wafer  x     y     w     h     SRAM/PE   cycles      kernel\n";
    const std::size_t shown = allRegions ? plan.regions.size() : std::min<std::size_t>(plan.regions.size(), 24);
    for (std::size_t i = 0; i < shown; ++i) {
        const core::Region& region = plan.regions[i];
        char line[256];
        std::snprintf(line, sizeof line, "  %-34s %-6d %-5d %-5d %-5d %-5d %-9s %-11.4g %s\n", region.opName.c_str(),
            region.system, region.rect.x, region.rect.y, region.rect.w, region.rect.h,
            core::formatBytes(double(region.sramBytesPerPe)).c_str(), region.computeCycles,
            core::toString(region.kernel.kind));
        out << line;
    }
    if (shown < plan.regions.size())
        out << "  ... " << plan.regions.size() - shown
            << " more (--regions lists them all, --json prints everything)\n";
}

} // namespace

int runCompileCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err)
{
    ArgParser parser("waferscope-cli compile",
        "Chooses the execution mode (layer-pipelined, weight streaming, multi-wafer inference) and places every op\n"
        "of a Model Zoo params YAML on the wafer.");
    parser.addOption("params", "FILE", "the Model Zoo params YAML");
    parser.addOption("system", "NAME", "hardware preset: cs1, cs2 or cs3 (default cs3)");
    parser.addOption("num_csx", "N", "CS-X systems for training (default: the config's num_csx)");
    parser.addOption("mode", "MODE", "train (default) or inference");
    parser.addOption("execution", "MODE", "auto (default), pipelined or weight_streaming (training)");
    parser.addFlag("regions", "list every region instead of the first few");
    parser.addFlag("json", "print one JSON object on stdout");
    if (!parser.parse(args)) {
        out << parser.helpText();
        return kExitOk;
    }
    const std::optional<std::string> path = parser.value("params");
    if (!path)
        throw UsageError { "--params FILE is required" };
    core::CompileOptions options;
    const std::string mode = parser.value("mode").value_or("train");
    if (mode == "train")
        options.mode = core::RunMode::Train;
    else if (mode == "inference")
        options.mode = core::RunMode::Inference;
    else
        throw UsageError { "--mode expects train or inference, got '" + mode + "'" };
    const std::string execution = parser.value("execution").value_or("auto");
    if (execution == "auto")
        options.execution = core::ExecutionChoice::Auto;
    else if (execution == "pipelined")
        options.execution = core::ExecutionChoice::Pipelined;
    else if (execution == "weight_streaming")
        options.execution = core::ExecutionChoice::WeightStreaming;
    else
        throw UsageError { "--execution expects auto, pipelined or weight_streaming, got '" + execution + "'" };
    if (auto count = parser.value("num_csx")) {
        int value = 0;
        const auto [end, error] = std::from_chars(count->data(), count->data() + count->size(), value);
        if (error != std::errc() || end != count->data() + count->size() || value < 1 || value > 4096)
            throw UsageError { "--num_csx expects an integer 1..4096, got '" + *count + "'" };
        options.numSystems = value;
    }
    const std::string systemName = parser.value("system").value_or("cs3");
    core::Expected<core::SystemSpec> system = core::loadBuiltinPreset(systemName);
    if (!system) {
        err << system.error().format() << "\n";
        return kExitBadInput;
    }
    core::Expected<core::ModelGraph> graph = core::loadModel(*path);
    if (!graph) {
        err << graph.error().format() << "\n";
        return kExitBadInput;
    }
    const core::Expected<core::ExecutionPlan> plan = core::compile(*graph, *system, options);
    if (!plan) {
        err << "waferscope-cli compile: cannot map " << *path << " onto " << system->displayName << " ("
            << plan.error().file << "): " << plan.error().message << "\n";
        return kExitCannotMap;
    }
    const std::vector<std::string> problems = core::checkPlan(*plan, *graph, *system);
    for (const std::string& problem : problems)
        err << "waferscope-cli compile: internal error: invalid plan: " << problem << "\n";
    if (!problems.empty())
        return kExitInternalError;
    if (parser.has("json"))
        out << core::planToJson(*plan, *graph) << "\n";
    else
        printPlan(*plan, *graph, *system, parser.has("regions"), out);
    return kExitOk;
}

} // namespace waferscope::cli
