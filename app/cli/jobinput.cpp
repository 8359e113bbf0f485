#include "app/cli/jobinput.h"

#include "app/cli/exitcode.h"

#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"
#include "core/study/study.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include <unistd.h>

namespace waferscope::cli {

void addJobOptions(ArgParser& parser)
{
    parser.addOption("params", "FILE", "the Model Zoo params YAML");
    parser.addOption("system", "NAME",
        "hardware preset: " + core::builtinPresetChoices() + " (default " + std::string(core::defaultPresetName())
            + ")");
    parser.addOption("num_csx", "N", "CS-X systems for training (default: the config's num_csx)");
    parser.addOption("execution", "MODE", "auto (default), pipelined or weight_streaming (training)");
}

void addCalibrationOption(ArgParser& parser)
{
    const core::engine::Calibration& builtin = core::engine::builtinCalibration();
    std::string profiles;
    for (const std::string& name : builtin.profiles)
        profiles += (profiles.empty() ? "" : ", ") + name;
    parser.addOption("calibration", "NAME|FILE",
        "the engine's software profile: a built-in one (" + profiles + "; default " + builtin.defaultProfile
            + ")\nor a calibration file, FILE#PROFILE for one of its profiles");
}

core::Expected<core::engine::Calibration> parseCalibration(const ArgParser& parser)
{
    const std::optional<std::string> value = parser.value("calibration");
    return value ? core::engine::resolveCalibration(*value) : core::engine::builtinCalibration();
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
    const std::string execution = parser.value("execution").value_or(core::toString(core::ExecutionChoice::Auto));
    if (const std::optional<core::ExecutionChoice> choice = core::fromName<core::ExecutionChoice>(execution))
        return *choice;
    throw UsageError { "--execution expects " + core::choiceList(core::allNames<core::ExecutionChoice>()) + ", got '"
        + execution + "'" };
}

// The directory --model_dir names must be creatable: its nearest existing ancestor is a
// writable directory. Checked before the run so that a long run is not lost to a typo.
std::optional<std::string> modelDirProblem(const std::string& directory)
{
    namespace fs = std::filesystem;
    std::error_code error;
    fs::path path = fs::absolute(fs::path(directory), error);
    while (!path.empty() && !fs::exists(path, error) && path != path.parent_path())
        path = path.parent_path();
    if (!fs::is_directory(path, error))
        return path.string() + " is not a directory";
    if (::access(path.c_str(), W_OK | X_OK) != 0)
        return "cannot write in " + path.string() + ": " + std::strerror(errno);
    return std::nullopt;
}

std::optional<JobInput> loadJobInput(const ArgParser& parser, std::ostream& err, int& exitCode)
{
    const std::optional<std::string> path = parser.value("params");
    if (!path)
        throw UsageError { "--params FILE is required" };
    core::Expected<core::SystemSpec> system
        = core::loadBuiltinPreset(parser.value("system").value_or(std::string(core::defaultPresetName())));
    if (!system) {
        exitCode = printDiagnostic(err, system.error());
        return std::nullopt;
    }
    core::Expected<core::LoadedModelFile> model = core::loadModelFile(*path);
    if (!model) {
        exitCode = printDiagnostic(err, model.error());
        return std::nullopt;
    }
    return JobInput { *path, std::move(model->bytes), std::move(system).value(), std::move(model->graph) };
}

std::optional<core::ExecutionPlan> compileJob(const JobInput& input, const core::CompileOptions& options,
    const core::engine::Calibration& calibration, const core::engine::RunOptions& run, const char* command,
    std::ostream& err, int& exitCode)
{
    if (options.mode == core::RunMode::Inference && options.numSystems > 0) { // the compiler would ignore it
        exitCode = printDiagnostic(err,
            core::Diagnostic { "--num_csx", 0, 0,
                "--num_csx is for training and eval: inference places the model on as many " + input.system.displayName
                    + " wafers as it needs (the plan says how many)" });
        return std::nullopt;
    }
    core::Expected<core::ExecutionPlan> plan
        = core::study::compileStudyPlan(input.graph, input.path, input.system, options, calibration, run, command);
    if (!plan) {
        exitCode = printDiagnostic(err, plan.error());
        return std::nullopt;
    }
    return std::move(plan).value();
}

std::optional<core::Diagnostic> openModelDir(
    const std::optional<std::string>& modelDir, std::optional<core::report::RunDirectoryWriter>& writer)
{
    if (!modelDir)
        return std::nullopt;
    core::Expected<core::report::RunDirectoryWriter> opened = core::report::RunDirectoryWriter::open(*modelDir);
    if (!opened)
        return opened.error();
    writer.emplace(std::move(opened).value());
    return std::nullopt;
}

} // namespace waferscope::cli
