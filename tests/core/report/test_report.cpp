// core/report: the Chrome trace of a run (every timeline event as a complete event, in
// microseconds, on named processes and threads) and atomic file writes.
#include "corefixtures.h"
#include "testing.h"

#include "core/engine/engine.h"
#include "core/report/atomicfile.h"
#include "core/report/chrometrace.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace waferscope::core;
using namespace waferscope::test;

namespace {

} // namespace

WS_TEST(chromeTraceHasEveryEventOfTheRun)
{
    // GPT-3 XL on 2 CS-2 for 2 steps (weight streaming).
    const SystemSpec cs2 = preset("cs2");
    const ModelGraph graph = load(sample("gpt3_xl.yaml"));
    const ExecutionPlan compiled = plan(graph, cs2, RunMode::Train, ExecutionChoice::Auto, 2);
    engine::RunOptions options;
    options.maxSteps = 2;
    const engine::RunResult run = engine::run(compiled, graph, cs2, options).value();
    const nlohmann::json trace = nlohmann::json::parse(report::chromeTrace(run, &compiled));
    WS_REQUIRE(trace.contains("traceEvents"));
    std::set<int> namedPids;
    std::set<std::pair<int, int>> namedTids;
    std::vector<const nlohmann::json*> complete;
    for (const nlohmann::json& event : trace["traceEvents"]) {
        if (event["ph"] == "M" && event["name"] == "process_name")
            namedPids.insert(event["pid"].get<int>());
        else if (event["ph"] == "M" && event["name"] == "thread_name")
            namedTids.insert({ event["pid"].get<int>(), event["tid"].get<int>() });
        else if (event["ph"] == "X")
            complete.push_back(&event);
    }
    WS_REQUIRE(complete.size() == run.timeline.events.size());
    double lastEndUs = 0.0;
    std::set<std::string> lanesSeen;
    for (std::size_t i = 0; i < complete.size(); ++i) {
        const nlohmann::json& x = *complete[i];
        const engine::TimelineEvent& e = run.timeline.events[i];
        WS_CHECK_NEAR(x["ts"].get<double>(), e.start * 1e6, 1e-9);
        WS_CHECK_NEAR(x["dur"].get<double>(), (e.end - e.start) * 1e6, 1e-9);
        WS_CHECK_EQ(x["cat"].get<std::string>(), std::string(engine::toString(e.phase)));
        WS_CHECK_EQ(x["args"]["iteration"].get<int>(), e.iteration);
        WS_CHECK_EQ(x["args"]["bytes"].get<double>(), e.bytes);
        WS_CHECK_EQ(x["args"]["flops"].get<double>(), e.flops);
        if (e.layer >= 0)
            WS_CHECK_EQ(x["name"].get<std::string>(), run.metrics.layers[std::size_t(e.layer)].name);
        WS_CHECK(namedPids.count(x["pid"].get<int>()) == 1);
        WS_CHECK(namedTids.count({ x["pid"].get<int>(), x["tid"].get<int>() }) == 1);
        lanesSeen.insert(std::to_string(x["pid"].get<int>()) + "/" + std::to_string(x["tid"].get<int>()));
        lastEndUs = std::max(lastEndUs, x["ts"].get<double>() + x["dur"].get<double>());
    }
    // MemoryX, SwarmX, the CS-X's I/O and wafer.
    WS_CHECK_EQ(lanesSeen.size(), std::size_t(4));
    WS_CHECK_NEAR(lastEndUs, run.timeline.span * 1e6, 1e-6);
    WS_CHECK_EQ(run.metrics.stepTimesS.size(), std::size_t(2));
}

WS_TEST(chromeTracePutsInferenceRegionsOnTheirWafers)
{
    const SystemSpec cs3 = preset("cs3");
    const ModelGraph graph = load(sample("llama3p1_70b.yaml"));
    const ExecutionPlan compiled = plan(graph, cs3, RunMode::Inference);
    engine::RunOptions options;
    options.mode = engine::RunMode::Inference;
    const engine::RunResult run = engine::run(compiled, graph, cs3, options).value();
    const nlohmann::json trace = nlohmann::json::parse(report::chromeTrace(run, &compiled));
    std::set<int> waferPids;
    for (const nlohmann::json& event : trace["traceEvents"])
        if (event["ph"] == "M" && event["name"] == "process_name"
            && event["args"]["name"].get<std::string>().rfind("wafer ", 0) == 0)
            waferPids.insert(event["pid"].get<int>());
    WS_CHECK_EQ(waferPids.size(), std::size_t(compiled.numSystems));
}

WS_TEST(atomicWritesReplaceWholeFilesOrNothing)
{
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "waferscope-test-atomic";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "trace.json").string();
    WS_CHECK(!report::writeFileAtomically(path, "first").has_value());
    WS_CHECK_EQ(waferscope::test::readFile(path), std::string("first"));
    WS_CHECK(!report::writeFileAtomically(path, std::string(1 << 20, 'x')).has_value());
    WS_CHECK_EQ(waferscope::test::readFile(path).size(), std::size_t(1 << 20));
    // A directory that does not exist: a located error, and nothing left behind.
    const std::string missing = (dir / "no" / "such" / "trace.json").string();
    const std::optional<Diagnostic> error = report::writeFileAtomically(missing, "x");
    WS_REQUIRE(error.has_value());
    WS_CHECK_EQ(error->file, missing);
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir))
        ++files;
    WS_CHECK_EQ(files, std::size_t(1));
    std::filesystem::remove_all(dir);
}
