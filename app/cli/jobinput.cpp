#include "app/cli/jobinput.h"

#include "app/cli/exitcode.h"

#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"

#include <charconv>

namespace waferscope::cli {

void addJobOptions(ArgParser& parser)
{
    parser.addOption("params", "FILE", "the Model Zoo params YAML");
    parser.addOption("system", "NAME", "hardware preset: cs1, cs2 or cs3 (default cs3)");
    parser.addOption("num_csx", "N", "CS-X systems for training (default: the config's num_csx)");
    parser.addOption("execution", "MODE", "auto (default), pipelined or weight_streaming (training)");
}

int parseNumCsx(const ArgParser& parser)
{
    const std::optional<std::string> count = parser.value("num_csx");
    if (!count)
        return 0;
    int value = 0;
    const auto [end, error] = std::from_chars(count->data(), count->data() + count->size(), value);
    if (error != std::errc() || end != count->data() + count->size() || value < 1 || value > 4096)
        throw UsageError { "--num_csx expects an integer 1..4096, got '" + *count + "'" };
    return value;
}

core::ExecutionChoice parseExecution(const ArgParser& parser)
{
    const std::string execution = parser.value("execution").value_or("auto");
    if (execution == "auto")
        return core::ExecutionChoice::Auto;
    if (execution == "pipelined")
        return core::ExecutionChoice::Pipelined;
    if (execution == "weight_streaming")
        return core::ExecutionChoice::WeightStreaming;
    throw UsageError { "--execution expects auto, pipelined or weight_streaming, got '" + execution + "'" };
}

std::optional<JobInput> loadJobInput(const ArgParser& parser, std::ostream& err)
{
    const std::optional<std::string> path = parser.value("params");
    if (!path)
        throw UsageError { "--params FILE is required" };
    core::Expected<core::SystemSpec> system = core::loadBuiltinPreset(parser.value("system").value_or("cs3"));
    if (!system) {
        err << system.error().format() << "\n";
        return std::nullopt;
    }
    core::Expected<core::ModelGraph> graph = core::loadModel(*path);
    if (!graph) {
        err << graph.error().format() << "\n";
        return std::nullopt;
    }
    return JobInput { *path, std::move(system).value(), std::move(graph).value() };
}

std::optional<core::ExecutionPlan> compileJob(
    const JobInput& input, const core::CompileOptions& options, const char* command, std::ostream& err, int& exitCode)
{
    core::Expected<core::ExecutionPlan> plan = core::compile(input.graph, input.system, options);
    if (!plan) {
        err << "waferscope-cli " << command << ": cannot map " << input.path << " onto " << input.system.displayName
            << " (" << plan.error().file << "): " << plan.error().message << "\n";
        exitCode = kExitCannotMap;
        return std::nullopt;
    }
    const std::vector<std::string> problems = core::checkPlan(*plan, input.graph, input.system);
    for (const std::string& problem : problems)
        err << "waferscope-cli " << command << ": internal error: invalid plan: " << problem << "\n";
    if (!problems.empty()) {
        exitCode = kExitInternalError;
        return std::nullopt;
    }
    return std::move(plan).value();
}

} // namespace waferscope::cli
