#include "app/cli/cli.h"

#include "app/cli/argparser.h"
#include "app/cli/commands.h"
#include "app/cli/exitcode.h"

#include "core/common/memorybudget.h"
#include "core/common/units.h"
#include "waferscope/version.h"

#include <exception>
#include <new>
#include <ostream>

namespace waferscope::cli {

namespace {

struct Subcommand {
    const char* name;
    const char* summary;
    int (*run)(std::span<const std::string>, std::ostream&, std::ostream&);
};

constexpr Subcommand kSubcommands[] = {
    { "hardware", "list the CS-1/CS-2/CS-3 hardware presets and where each value comes from", runHardwareCommand },
    { "inspect", "read a Model Zoo params YAML and print its exact model graph", runInspectCommand },
    { "compile", "choose the execution mode and place every op of a params YAML on the wafer(s)", runCompileCommand },
    { "run", "run a params YAML on a simulated cluster: step time, throughput, MFU, per-layer bounds", runRunCommand },
    { "scale", "training throughput over 1..N systems: speedup, efficiency and the binding limit", runScaleCommand },
    { "compare", "line up two run reports (--model_dir directories): totals, per-layer time and bound changes",
        runCompareCommand },
    { "cluster", "schedule a jobs file on a shared cluster: starts, ends, waits, makespan, utilization",
        runClusterCommand },
    { "fabric", "run the cycle-level PE mesh: synthetic traffic or one kernel (gemv, gemm_stream, ...)",
        runFabricCommand },
    { "sensitivity", "what a run's figure depends on: each assumed value varied across its range, by impact",
        runSensitivityCommand },
    { "validate", "recompute every published figure WaferScope is checked against, with the error",
        runValidateCommand },
};

std::string usage()
{
    std::string text = "Usage: waferscope-cli <command> [options]\n\n"
                       "Headless WaferScope: explore and simulate Cerebras-style wafer-scale systems.\n\n"
                       "Commands:\n";
    for (const Subcommand& command : kSubcommands)
        text += "  " + std::string(command.name) + std::string(12 - std::string(command.name).size(), ' ')
            + command.summary + "\n";
    text += "\nRun 'waferscope-cli <command> --help' for a command's options.\n"
            "Exit codes: 0 success, 1 internal error, 2 bad input, 3 cannot be mapped onto the hardware.\n";
    return text;
}

} // namespace

int runCli(std::span<const std::string> args, std::ostream& out, std::ostream& err)
{
    if (args.empty()) {
        err << usage();
        return kExitBadInput;
    }
    const std::string& command = args[0];
    if (command == "--help" || command == "-h" || command == "help") {
        out << usage();
        return kExitOk;
    }
    if (command == "--version") {
        out << "waferscope-cli " << core::kVersion << "\n";
        return kExitOk;
    }
    for (const Subcommand& subcommand : kSubcommands) {
        if (command != subcommand.name)
            continue;
        try {
            return subcommand.run(args.subspan(1), out, err);
        } catch (const UsageError& error) {
            return printDiagnostic(err, core::Diagnostic { "waferscope-cli " + command, 0, 0, error.message });
        } catch (const std::bad_alloc&) {
            // Every input-sized allocation is checked against the budget first; this is the last
            // line, for what no estimate foresaw. The stack is unwound, so the memory is free again.
            const core::MemoryBudget budget = core::memoryBudget();
            return printDiagnostic(err,
                core::Diagnostic { "waferscope-cli " + command, 0, 0,
                    "ran out of memory: the job needs more than this process can have (its budget is "
                        + core::formatBytes(double(budget.bytes)) + ", " + budget.origin
                        + "); use a smaller model or fewer steps",
                    core::Diagnostic::Kind::CannotMap });
        } catch (const std::exception& error) {
            return printDiagnostic(err,
                core::Diagnostic { "waferscope-cli " + command, 0, 0, std::string("internal error: ") + error.what(),
                    core::Diagnostic::Kind::Internal });
        }
    }
    const int exitCode
        = printDiagnostic(err, core::Diagnostic { "waferscope-cli", 0, 0, "unknown command '" + command + "'" });
    err << "\n" << usage();
    return exitCode;
}

} // namespace waferscope::cli
