#include "corefixtures.h"

#include "testing.h"

#include "core/cluster/jobsfile.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"

#include <algorithm>
#include <stdexcept>

namespace waferscope::test {

core::ModelGraph load(const std::string& path)
{
    core::Expected<core::ModelGraph> graph = core::loadModel(path);
    if (!graph)
        throw std::runtime_error(graph.error().format());
    return *graph;
}

core::engine::RunResult runOrThrow(const core::ExecutionPlan& compiled, const core::ModelGraph& graph,
    const core::SystemSpec& system, core::engine::RunMode mode, std::int64_t globalBatch, int steps)
{
    core::engine::RunOptions options;
    options.mode = mode;
    options.globalBatch = globalBatch;
    options.maxSteps = steps;
    core::Expected<core::engine::RunResult> result = core::engine::run(compiled, graph, system, options);
    if (!result)
        throw std::runtime_error(result.error().message);
    return *result;
}

core::SystemSpec preset(const std::string& name)
{
    core::Expected<core::SystemSpec> system = core::loadBuiltinPreset(name);
    if (!system)
        throw std::runtime_error(system.error().format());
    return *system;
}

core::SystemSpec smallWafer(int width, int height)
{
    core::SystemSpec system = preset("cs2");
    system.wafer.usableWidth = width;
    system.wafer.usableHeight = height;
    system.wafer.fabricWidth = width + 7;
    system.wafer.fabricHeight = height + 2;
    return system;
}

core::ExecutionPlan plan(const core::ModelGraph& graph, const core::SystemSpec& system, core::RunMode mode,
    core::ExecutionChoice execution, int numSystems)
{
    core::CompileOptions options;
    options.mode = mode;
    options.execution = execution;
    options.numSystems = numSystems;
    core::Expected<core::ExecutionPlan> result = core::compile(graph, system, options);
    if (!result)
        throw std::runtime_error(result.error().message);
    return *result;
}

std::string sample(const std::string& name)
{
    return sourceDir() + "/samples/" + name;
}

std::vector<std::filesystem::path> allConfigs()
{
    std::vector<std::filesystem::path> files;
    for (const auto& root :
        { std::filesystem::path(sourceDir()) / "samples", std::filesystem::path(sharedDir()) / "modelzoo" })
        if (std::filesystem::is_directory(root))
            for (const auto& entry : std::filesystem::recursive_directory_iterator(root))
                if (entry.is_regular_file() && entry.path().extension() == ".yaml"
                    && !core::cluster::isJobsFileText(readFile(entry.path()))) // samples/cluster: jobs files
                    files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    return files;
}

std::filesystem::path modelZooRelease()
{
    return std::filesystem::path(sharedDir()) / "modelzoo-release-2.10.0";
}

core::ModelGraph loadModelZooRelease(const std::string& relative)
{
    return load((modelZooRelease() / relative).string());
}

} // namespace waferscope::test
