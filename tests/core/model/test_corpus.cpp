// Every model config of the latest Model Zoo release (../shared/modelzoo-release-2.10.0) loads,
// compiles and runs one training step on CS-2 and on CS-3; decoder-only language models also run
// inference, every region of their plans timed by its decode kernel. A file that does not pass
// yet would be listed below with the reason (none is today); the list only shrinks: a listed
// file that passes is a failure too.
#include "testing.h"

#include "core/compiler/compiler.h"
#include "core/compiler/decoderegions.h"
#include "core/engine/engine.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace waferscope::core;
using waferscope::test::reportFailure;
using waferscope::test::sharedDir;

namespace {

// Relative path -> why it does not pass yet.
const std::map<std::string, std::string> kKnownFailures = {};

// Empty when `graph` compiles and runs one step of `mode` on `system`; else what failed.
std::string compileAndRun(const ModelGraph& graph, const SystemSpec& system, RunMode mode)
{
    CompileOptions options;
    options.mode = mode;
    const Expected<ExecutionPlan> plan = compile(graph, system, options);
    if (!plan)
        return "compile: " + plan.error().message;
    engine::RunOptions run;
    run.mode = mode;
    run.maxSteps = 1;
    const Expected<engine::RunResult> result = engine::run(*plan, graph, system, run);
    if (!result)
        return "run: " + result.error().message;
    if (!(result->metrics.stepTimeS > 0.0))
        return "run: no time elapsed";
    if (mode == RunMode::Inference) {
        // Every region of a language model in inference has its decode kernel's closed form:
        // nothing is timed by FLOPs or hatched as unmodelled traffic.
        const DecodeRegions decode(graph, *plan, system);
        std::string without;
        for (const Region& region : plan->regions)
            if (region.replica == 0 && !decode.cost(region, 0))
                without += (without.empty() ? "" : ", ") + region.opName;
        if (!without.empty())
            return "inference: no decode kernel for " + without.substr(0, 200);
    }
    return {};
}

} // namespace

WS_TEST(everyConfigOfTheLatestReleaseLoadsCompilesAndRuns)
{
    const std::filesystem::path root = std::filesystem::path(sharedDir()) / "modelzoo-release-2.10.0";
    if (!std::filesystem::is_directory(root))
        WS_SKIP("Model Zoo 2.10.0 corpus not found at " + root.string());
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root))
        if (entry.is_regular_file() && entry.path().extension() == ".yaml")
            files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    WS_CHECK_EQ(files.size(), std::size_t(113));

    const SystemSpec systems[] = { loadBuiltinPreset("cs2").value(), loadBuiltinPreset("cs3").value() };
    int passed = 0;
    for (const std::filesystem::path& file : files) {
        const std::string relative = file.lexically_relative(root).generic_string();
        std::string failure;
        const Expected<ModelGraph> graph = loadModel(file.string());
        if (!graph)
            failure = "load: " + graph.error().format();
        for (const SystemSpec& system : systems) {
            if (!failure.empty())
                break;
            failure = compileAndRun(*graph, system, RunMode::Train);
            if (failure.empty() && isDecoderLanguageModel(graph->config.family))
                failure = compileAndRun(*graph, system, RunMode::Inference);
            if (!failure.empty())
                failure = system.name + " " + failure;
        }
        const bool known = kKnownFailures.count(relative) > 0;
        if (failure.empty() && known)
            reportFailure(__FILE__, __LINE__, relative + " passes now: take it off the known failures");
        else if (!failure.empty() && !known)
            reportFailure(__FILE__, __LINE__, relative + ": " + failure);
        passed += failure.empty() ? 1 : 0;
    }
    WS_CHECK_EQ(passed + int(kKnownFailures.size()), int(files.size()));
}
