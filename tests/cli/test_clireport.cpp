// waferscope-cli run --model_dir and compare: the run directory as a user gets it, the exit
// codes for directories that cannot be written, and the real binary killed while it writes.
#include "testing.h"

#include "clirunner.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

using Result = waferscope::test::CliResult;

Result run(const std::vector<std::string>& args)
{
    return waferscope::test::runCliCaptured(args);
}

std::string gpt3Xl()
{
    return waferscope::test::sourceDir() + "/samples/gpt3_xl.yaml";
}

std::vector<std::string> runArgs(const fs::path& dir, const std::string& numCsx)
{
    return { "run", "--params", gpt3Xl(), "--system", "cs2", "--num_csx", numCsx, "--max_steps", "2", "--model_dir",
        dir.string() };
}

const char* const kFiles[] = { "report.json", "report.csv", "report.html", "trace.json", "summary.txt" };

} // namespace

WS_TEST(runWritesTheRunDirectoryAndKeepsJsonUnchanged)
{
    const fs::path dir = waferscope::test::freshDirectory("rundir");
    std::vector<std::string> args = runArgs(dir, "2");
    args.push_back("--quiet");
    const Result quiet = run(args);
    WS_REQUIRE(quiet.code == 0);
    WS_CHECK(quiet.out.empty());
    WS_CHECK(quiet.err.empty());
    for (const char* name : kFiles)
        WS_CHECK(fs::is_regular_file(dir / name));
    const nlohmann::json report = nlohmann::json::parse(waferscope::test::readFile(dir / "report.json"));
    WS_CHECK_EQ(report["manifest"]["input"]["path"].get<std::string>(), gpt3Xl());
    WS_CHECK_EQ(report["manifest"]["options"]["max_steps"].get<int>(), 2);

    // --json prints the same object with or without a run directory.
    args.back() = "--json";
    const Result withDir = run(args);
    const Result without
        = run({ "run", "--params", gpt3Xl(), "--system", "cs2", "--num_csx", "2", "--max_steps", "2", "--json" });
    WS_REQUIRE(withDir.code == 0 && without.code == 0);
    WS_CHECK_EQ(withDir.out, without.out);
    const nlohmann::json printed = nlohmann::json::parse(withDir.out);
    WS_CHECK_EQ(printed["step_time_s"], report["totals"]["step_time_s"]);

    // The text names the directory; the summary file is what a person reads.
    args.pop_back();
    const Result text = run(args);
    WS_CHECK(text.out.find(dir.string()) != std::string::npos);
    WS_CHECK(waferscope::test::readFile(dir / "summary.txt").find("weight_streaming") != std::string::npos);
    fs::remove_all(dir);
}

WS_TEST(unwritableOrFailedRunsLeaveTheDirectoryAlone)
{
    const fs::path dir = waferscope::test::freshDirectory("unwritable");
    fs::create_directories(dir);
    std::ofstream(dir / "file") << "x";
    const Result underFile = run(runArgs(dir / "file" / "run", "2"));
    WS_CHECK_EQ(underFile.code, 2);
    WS_CHECK(underFile.err.find("is not a directory") != std::string::npos);
    const Result proc = run(runArgs("/proc/waferscope-run", "2"));
    WS_CHECK_EQ(proc.code, 2);
    WS_CHECK(proc.err.find("/proc/waferscope-run: error:") != std::string::npos);

    // A run that fails (bad input, or a model the system cannot hold) writes nothing.
    const fs::path runDir = dir / "run";
    WS_REQUIRE(run(runArgs(runDir, "2")).code == 0);
    const std::string before = waferscope::test::readFile(runDir / "report.json");
    std::vector<std::string> badMode = runArgs(runDir, "2");
    badMode.insert(badMode.end(), { "--mode", "fly" });
    WS_CHECK_EQ(run(badMode).code, 2);
    std::vector<std::string> cs1 = runArgs(runDir, "1");
    cs1[4] = "cs1";
    WS_CHECK_EQ(run(cs1).code, 3);
    WS_CHECK_EQ(waferscope::test::readFile(runDir / "report.json"), before);
    fs::remove_all(dir);
}

WS_TEST(compareLinesUpTwoRunDirectories)
{
    const fs::path dir = waferscope::test::freshDirectory("compare");
    WS_REQUIRE(run(runArgs(dir / "two", "2")).code == 0);
    WS_REQUIRE(run(runArgs(dir / "four", "4")).code == 0);
    const Result json = run({ "compare", (dir / "two").string(), (dir / "four" / "report.json").string(), "--json" });
    WS_REQUIRE(json.code == 0);
    const nlohmann::json c = nlohmann::json::parse(json.out);
    const nlohmann::json a = nlohmann::json::parse(waferscope::test::readFile(dir / "two" / "report.json"));
    const nlohmann::json b = nlohmann::json::parse(waferscope::test::readFile(dir / "four" / "report.json"));
    WS_CHECK(c["same_input"].get<bool>());
    WS_CHECK_EQ(c["layers"].size(), a["layers"].size());
    WS_CHECK_EQ(c["totals"][0]["metric"].get<std::string>(), std::string("step_time_s"));
    WS_CHECK_NEAR(c["totals"][0]["change"].get<double>(),
        b["totals"]["step_time_s"].get<double>() / a["totals"]["step_time_s"].get<double>() - 1.0, 1e-12);
    WS_CHECK_EQ(c["layers"][3]["b_time_s"], b["layers"][3]["time_s"]);
    const Result text = run({ "compare", (dir / "two").string(), (dir / "four").string() });
    WS_CHECK_EQ(text.code, 0);
    WS_CHECK(text.out.find("step time") != std::string::npos);
    const Result missing = run({ "compare", (dir / "two").string(), (dir / "none").string() });
    WS_CHECK_EQ(missing.code, 2);
    WS_CHECK(missing.err.find("none") != std::string::npos);
    WS_CHECK_EQ(run({ "compare", (dir / "two").string() }).code, 2);
    fs::remove_all(dir);
}

WS_TEST(killedCliLeavesWholeReports)
{
    // The real binary, killed at times spread over its run: each file is either the first
    // report's or the second's, whole. (The core suite kills a writer mid-staging for certain.)
    const fs::path dir = waferscope::test::freshDirectory("kill");
    WS_REQUIRE(run(runArgs(dir, "1")).code == 0);
    const std::string csvOne = waferscope::test::readFile(dir / "report.csv");
    WS_REQUIRE(run(runArgs(dir, "2")).code == 0);
    const std::string csvTwo = waferscope::test::readFile(dir / "report.csv");
    WS_REQUIRE(csvOne != csvTwo);
    for (int attempt = 0; attempt < 24; ++attempt) {
        const std::vector<std::string> args = runArgs(dir, attempt % 2 ? "1" : "2");
        const pid_t child = waferscope::test::spawnCli(args);
        WS_REQUIRE(child >= 0);
        std::this_thread::sleep_for(std::chrono::milliseconds(10 * attempt));
        ::kill(child, SIGKILL);
        ::waitpid(child, nullptr, 0);
        const std::string csv = waferscope::test::readFile(dir / "report.csv");
        WS_CHECK(csv == csvOne || csv == csvTwo);
        const nlohmann::json report
            = nlohmann::json::parse(waferscope::test::readFile(dir / "report.json"), nullptr, false);
        WS_CHECK(!report.is_discarded());
        WS_CHECK(!nlohmann::json::parse(waferscope::test::readFile(dir / "trace.json"), nullptr, false).is_discarded());
        const std::string html = waferscope::test::readFile(dir / "report.html");
        WS_CHECK(html.rfind("</html>") != std::string::npos && html.size() - html.rfind("</html>") <= 8);
    }
    fs::remove_all(dir);
}
