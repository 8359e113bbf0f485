// No header of its own: defines runCompileCommand, declared with every subcommand in app/cli/commands.h.
#include "app/cli/argparser.h"
#include "app/cli/commands.h"
#include "app/cli/exitcode.h"
#include "app/cli/jobinput.h"

#include "core/common/displaytext.h"
#include "core/common/units.h"
#include "core/compiler/compiler.h"
#include <cstdio>
#include <ostream>

namespace waferscope::cli {

namespace {

void printPlan(const core::ExecutionPlan& plan, const core::ModelGraph& graph, const core::SystemSpec& system,
    bool allRegions, std::ostream& out)
{
    out << core::displayText(graph.config.name) << " on " << system.displayName << ": " << core::toString(plan.mode)
        << ", " << plan.numSystems << (plan.mode == core::ExecutionMode::Inference ? " wafer(s)" : " system(s)") << ", "
        << plan.regions.size() << " regions\n";
    out << "  PEs used " << core::formatFixed(100.0 * plan.peUtilization, 1) << "%   SRAM used "
        << core::formatFixed(100.0 * plan.sramUtilization, 1) << "%   load imbalance "
        << core::formatFixed(plan.loadImbalance, 3) << "   compiled in " << core::formatFixed(plan.compileMs, 1)
        << " ms\n";
    for (const std::string& note : plan.notes)
        out << "  - " << note << "\n";
    // A stacked plan's tiers share their PEs: the tier tells regions at one place apart.
    const bool tiers = plan.stackedLayers;
    out << "\n  op                                 wafer  " << (tiers ? "tier  " : "")
        << "x     y     w     h     SRAM/PE   cycles      kernel\n";
    const std::size_t shown = allRegions ? plan.regions.size() : std::min<std::size_t>(plan.regions.size(), 24);
    for (std::size_t i = 0; i < shown; ++i) {
        const core::Region& region = plan.regions[i];
        char tier[16] = "";
        if (tiers)
            std::snprintf(tier, sizeof tier, "%-5d ", region.tier);
        out << core::formatText("  %-34s %-6d %s%-5d %-5d %-5d %-5d %-9s %-11.4g %s\n",
            core::displayText(region.opName).c_str(), region.system, tier, region.rect.x, region.rect.y, region.rect.w,
            region.rect.h, core::formatBytes(double(region.sramBytesPerPe)).c_str(), region.computeCycles,
            core::toString(region.kernel.kind));
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
    addJobOptions(parser);
    parser.addOption("mode", "MODE", "train (default) or inference");
    addCalibrationOption(parser);
    parser.addFlag("regions", "list every region instead of the first few");
    parser.addFlag("json", "print one JSON object on stdout");
    if (!parser.parse(args)) {
        out << parser.helpText();
        return kExitOk;
    }
    const core::Expected<core::engine::Calibration> calibration = parseCalibration(parser);
    if (!calibration)
        return printDiagnostic(err, calibration.error());
    core::CompileOptions options;
    const std::string mode = parser.value("mode").value_or(core::toString(core::RunMode::Train));
    const std::optional<core::RunMode> runMode = core::compileModeFromName(mode);
    if (!runMode)
        throw UsageError { "--mode expects " + core::choiceList(core::compileModeNames()) + ", got '" + mode + "'" };
    options.mode = *runMode;
    options.execution = parseExecution(parser);
    options.numSystems = parseNumCsx(parser);
    int exitCode = kExitOk;
    const std::optional<JobInput> input = loadJobInput(parser, err, exitCode);
    if (!input)
        return exitCode;
    const std::optional<core::ExecutionPlan> plan = compileJob(
        *input, options, *calibration, { .mode = core::engine::RunMode::Inference }, "compile", err, exitCode);
    if (!plan)
        return exitCode;
    const core::ModelGraph* graph = &input->graph;
    const core::SystemSpec* system = &input->system;
    if (parser.has("json"))
        out << core::planToJson(*plan, *graph) << "\n";
    else
        printPlan(*plan, *graph, *system, parser.has("regions"), out);
    return kExitOk;
}

} // namespace waferscope::cli
