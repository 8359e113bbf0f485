// No header of its own: defines runInspectCommand, declared with every subcommand in app/cli/commands.h.
#include "app/cli/argparser.h"
#include "app/cli/commands.h"
#include "app/cli/exitcode.h"
#include "app/cli/inspecttable.h"

#include "core/model/graphjson.h"
#include "core/model/modelloader.h"

#include <ostream>

namespace waferscope::cli {

int runInspectCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err)
{
    ArgParser parser("waferscope-cli inspect",
        "Reads a Cerebras Model Zoo params YAML (legacy or trainer schema) and prints its exact model graph:\n"
        "parameters, FLOPs and bytes per op.");
    parser.addOption("params", "FILE", "the Model Zoo params YAML");
    parser.addFlag("json", "print one JSON object on stdout");
    parser.addFlag("ops", "list every op instead of collapsing identical transformer blocks");
    if (!parser.parse(args)) {
        out << parser.helpText();
        return kExitOk;
    }
    const std::optional<std::string> path = parser.value("params");
    if (!path)
        throw UsageError { "--params FILE is required" };

    core::Expected<core::ModelGraph> graph = core::loadModel(*path);
    if (!graph)
        return printDiagnostic(err, graph.error());
    if (parser.has("json")) {
        out << core::modelGraphToJson(*graph) << "\n";
    } else {
        out << formatInspectTable(*graph, parser.has("ops"));
    }
    for (const std::string& warning : core::formatWarnings(graph->config))
        err << warning << "\n";
    return kExitOk;
}

} // namespace waferscope::cli
