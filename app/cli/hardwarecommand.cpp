// No header of its own: defines runHardwareCommand, declared with every subcommand in app/cli/commands.h.
#include "app/cli/argparser.h"
#include "app/cli/commands.h"
#include "app/cli/exitcode.h"
#include "app/cli/hardwaretable.h"

#include "core/hardware/builtinpresets.h"
#include "core/hardware/hardwarejson.h"
#include "core/hardware/presetloader.h"

#include <ostream>

namespace waferscope::cli {

int runHardwareCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err)
{
    ArgParser parser("waferscope-cli hardware",
        "Lists the hardware presets (wafer, system I/O, MemoryX, SwarmX) with the source of every value.");
    parser.addFlag("json", "print one JSON object {\"systems\":[...]} on stdout");
    parser.addOption("system", "NAME", "show only this system (" + core::builtinPresetChoices() + ")");
    parser.addOption("preset", "FILE", "load and validate this preset file instead of the built-in ones", true);
    if (!parser.parse(args)) {
        out << parser.helpText();
        return kExitOk;
    }

    std::vector<core::SystemSpec> systems;
    if (parser.has("preset")) {
        for (const std::string& path : parser.values("preset")) {
            core::Expected<core::SystemSpec> system = core::loadPresetFile(path);
            if (!system)
                return printDiagnostic(err, system.error());
            systems.push_back(std::move(system).value());
        }
    } else {
        core::Expected<std::vector<core::SystemSpec>> builtins = core::loadBuiltinPresets();
        if (!builtins) {
            err << builtins.error().format() << "\n";
            return kExitInternalError; // a built-in preset that does not load is a build defect
        }
        systems = std::move(builtins).value();
    }

    if (std::optional<std::string> name = parser.value("system")) {
        std::string known;
        std::vector<core::SystemSpec> selected;
        for (core::SystemSpec& system : systems) {
            known += (known.empty() ? "" : ", ") + system.name;
            if (system.name == *name)
                selected.push_back(std::move(system));
        }
        if (selected.empty())
            throw UsageError { "unknown system '" + *name + "' (expected one of: " + known + ")" };
        systems = std::move(selected);
    }

    out << (parser.has("json") ? core::hardwareToJson(systems) + "\n" : formatHardwareTable(systems));
    return kExitOk;
}

} // namespace waferscope::cli
