#pragma once

// Loading helpers shared by the core suites: they throw (and the test fails with the located
// message) instead of returning errors, since a broken fixture is a defect of the test.
#include "core/compiler/compiler.h"
#include "core/engine/engine.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"

#include <filesystem>
#include <string>
#include <vector>

namespace waferscope::test {

core::ModelGraph load(const std::string& path);
core::SystemSpec preset(const std::string& name);
// CS-2 with a small program rectangle (width x height PEs): the same PE and clock, a fabric small
// enough for a test.
core::SystemSpec smallWafer(int width, int height);
core::ExecutionPlan plan(const core::ModelGraph& graph, const core::SystemSpec& system,
    core::RunMode mode = core::RunMode::Train, core::ExecutionChoice execution = core::ExecutionChoice::Auto,
    int numSystems = 0);
std::string sample(const std::string& name); // samples/NAME
// engine::run with these options, or the test fails with the engine's message.
core::engine::RunResult runOrThrow(const core::ExecutionPlan& compiled, const core::ModelGraph& graph,
    const core::SystemSpec& system, core::engine::RunMode mode = core::engine::RunMode::Train,
    std::int64_t globalBatch = 0, int steps = 1);
std::vector<std::filesystem::path> allConfigs(); // samples/ and ../shared/modelzoo, sorted
std::filesystem::path modelZooRelease(); // ../shared/modelzoo-release-2.10.0 (may be absent)
core::ModelGraph loadModelZooRelease(const std::string& relative); // a file of it, or the test fails

} // namespace waferscope::test
