// waferscope-cli cluster: the samples schedule, the JSON keys are there, the run directory holds
// its three files, exit codes say whether any job runs, each kind of file refuses the other's
// command with what it is, the engine work is counted, and Ctrl-C stops a long sizing.
#include "testing.h"

#include "clirunner.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>

namespace {

using Result = waferscope::test::CliResult;
namespace fs = std::filesystem;

Result run(const std::vector<std::string>& args)
{
    return waferscope::test::runCliCaptured(args);
}

std::string sample(const std::string& name)
{
    return waferscope::test::sourceDir() + "/samples/" + name;
}

} // namespace

WS_TEST(theSamplesScheduleAndPrintTheirJobs)
{
    const Result condor = run({ "cluster", "--jobs", sample("cluster/condor_galaxy.yaml") });
    WS_CHECK_EQ(condor.code, 0);
    WS_CHECK_CONTAINS(condor.out, "64 x cs2, MemoryX 82.0 TB, policy backfill");
    WS_CHECK_CONTAINS(condor.out, "gpt3-6.7b-long");
    WS_CHECK_CONTAINS(condor.out, "makespan ");
    const Result fifo
        = run({ "cluster", "--jobs", sample("cluster/condor_galaxy.yaml"), "--policy", "fifo", "--json" });
    WS_CHECK_EQ(fifo.code, 0);
    const Result backfill = run({ "cluster", "--jobs", sample("cluster/condor_galaxy.yaml"), "--json" });
    const nlohmann::json a = nlohmann::json::parse(fifo.out);
    const nlohmann::json b = nlohmann::json::parse(backfill.out);
    WS_CHECK_EQ(a["policy"].get<std::string>(), std::string("fifo"));
    WS_CHECK_EQ(b["policy"].get<std::string>(), std::string("backfill"));
    // The evaluation job waits behind the queue's head under FIFO and is backfilled otherwise.
    const auto job = [](const nlohmann::json& schedule, const std::string& name) {
        for (const auto& entry : schedule["jobs"])
            if (entry["name"] == name)
                return entry;
        return nlohmann::json();
    };
    WS_CHECK(job(a, "gpt3-xl-eval")["wait_s"].get<double>() > 0.0);
    WS_CHECK_EQ(job(b, "gpt3-xl-eval")["wait_s"].get<double>(), 0.0);
    // The head it passed starts no later than under FIFO.
    WS_CHECK(job(b, "gpt3-6.7b-long")["start_s"].get<double>() <= job(a, "gpt3-6.7b-long")["start_s"].get<double>());

    const Result inference
        = run({ "cluster", "--jobs", sample("cluster/inference.yaml"), "--size_inference", "--json" });
    WS_CHECK_EQ(inference.code, 0);
    const nlohmann::json sized = nlohmann::json::parse(inference.out);
    WS_CHECK(sized["jobs"][1]["replicas_needed"].is_number_integer());
    WS_CHECK_EQ(sized["jobs"][1]["replicas"], sized["jobs"][1]["replicas_needed"]);
}

WS_TEST(aModelDirHoldsTheScheduleItsGanttAndItsTrace)
{
    const fs::path dir = waferscope::test::freshDirectory("cli-cluster");
    const Result written = run({ "cluster", "--jobs", sample("cluster/condor_galaxy.yaml"), "--model_dir", dir.string(),
        "--what_if", "llama2-70b=16", "--json" });
    WS_CHECK_EQ(written.code, 0);
    for (const char* name : { "cluster.json", "report.html", "trace.json" })
        WS_CHECK(fs::is_regular_file(dir / name));
    // cluster.json is what --json prints, what-if included.
    WS_CHECK_EQ(waferscope::test::readFile(dir / "cluster.json"), written.out);
    const nlohmann::json json = nlohmann::json::parse(written.out);
    WS_CHECK_EQ(json["what_if"]["num_csx"]["llama2-70b"].get<int>(), 16);
    WS_CHECK_CONTAINS(waferscope::test::readFile(dir / "report.html"), "Systems over time");
    const nlohmann::json trace = nlohmann::json::parse(waferscope::test::readFile(dir / "trace.json"));
    WS_CHECK(trace["traceEvents"].size() > 64); // a name per system, then the jobs' spans
    fs::remove_all(dir);
}

WS_TEST(exitCodesSayWhetherAnyJobRuns)
{
    const fs::path dir = waferscope::test::freshDirectory("cli-cluster-none");
    fs::create_directories(dir);
    const std::string none = (dir / "none.yaml").string();
    std::ofstream(none) << "cluster: {system: cs2, systems: 4}\njobs:\n  - {name: wide, params: '"
                        << sample("gpt3_xl.yaml") << "', num_csx: 8, max_steps: 2}\n";
    const Result refused = run({ "cluster", "--jobs", none });
    WS_CHECK_EQ(refused.code, 3);
    WS_CHECK_CONTAINS(refused.out, "never runs: needs 8 systems (1 x 8); the cluster has 4");
    const std::string tooBig = (dir / "big.yaml").string();
    std::ofstream(tooBig)
        << "cluster:\n  system: cs2\n  systems: 500\njobs:\n  - {name: a, params: x.yaml, max_steps: 1}\n";
    const Result big = run({ "cluster", "--jobs", tooBig });
    WS_CHECK_EQ(big.code, 2);
    WS_CHECK_CONTAINS(big.err, tooBig + ":3:12: error: cluster.systems is 500; a CS-2 cluster has 1 to 192 systems");
    // Each file kind refuses the other's command, saying what it is.
    const Result params = run({ "cluster", "--jobs", sample("gpt3_xl.yaml") });
    WS_CHECK_EQ(params.code, 2);
    WS_CHECK_CONTAINS(params.err, "this is a Model Zoo params file, not a WaferScope jobs file");
    for (const char* command : { "inspect", "run" }) {
        const Result jobs = run({ command, "--params", sample("cluster/inference.yaml") });
        WS_CHECK_EQ(jobs.code, 2);
        WS_CHECK_CONTAINS(jobs.err, "this is a WaferScope jobs file");
    }
    // Command-line mistakes.
    WS_CHECK_EQ(run({ "cluster" }).code, 2);
    WS_CHECK_EQ(run({ "cluster", "--jobs", none, "--policy", "sjf" }).code, 2);
    const Result badWhatIf = run({ "cluster", "--jobs", sample("cluster/condor_galaxy.yaml"), "--what_if", "gpt3-xl" });
    WS_CHECK_EQ(badWhatIf.code, 2);
    WS_CHECK_CONTAINS(badWhatIf.err, "--what_if expects JOB=N");
    const Result unknownJob = run({ "cluster", "--jobs", sample("cluster/condor_galaxy.yaml"), "--what_if", "nope=2" });
    WS_CHECK_EQ(unknownJob.code, 2);
    WS_CHECK_CONTAINS(unknownJob.err, "no job named 'nope'");
    fs::remove_all(dir);
}

WS_TEST(theJsonCountsTheEngineWorkUnderNewKeys)
{
    const Result sized
        = run({ "cluster", "--jobs", sample("cluster/inference.yaml"), "--size_inference", "--json", "--quiet" });
    WS_CHECK_EQ(sized.code, 0);
    const nlohmann::ordered_json json = nlohmann::ordered_json::parse(sized.out);
    // The keys shipped before, in their order, then the new one.
    std::vector<std::string> keys;
    for (const auto& item : json.items())
        keys.push_back(item.key());
    WS_CHECK((keys
        == std::vector<std::string> {
            "system", "systems", "memoryx_bytes", "policy", "notes", "makespan_s", "utilization", "jobs", "work" }));
    // Llama 3 8B on 1 CS-3 and Llama 3.1 70B on 4: two plans; the 8B job is timed at its 64 / 8
    // users a replica, the two 70B searches and jobs on the one 70B plan.
    WS_CHECK_EQ(json["work"]["compiles"].get<int>(), 2);
    const int runs = json["work"]["engine_runs"].get<int>();
    // 8B: 1 run. 70B at 400 (500 users, at most 16 replicas: 32 to 500) and at 100 (2000 users:
    // 125 to 2000): at most 9 + 11 search runs and one more for each job.
    WS_CHECK(runs >= 3 && runs <= 1 + 9 + 11 + 2);
    // A sized job holds its sized replicas.
    for (const auto& job : json["jobs"])
        if (job["replicas_needed"].is_number_integer() && job["start_s"].is_number())
            WS_CHECK_EQ(
                job["systems_held"].size(), job["num_csx"].get<std::size_t>() * job["replicas"].get<std::size_t>());
    // Without sizing: one run per model and allocation at its users per replica.
    const nlohmann::json timed
        = nlohmann::json::parse(run({ "cluster", "--jobs", sample("cluster/inference.yaml"), "--json" }).out);
    WS_CHECK_EQ(timed["work"]["compiles"].get<int>(), 2);
    WS_CHECK_EQ(timed["work"]["engine_runs"].get<int>(), 3); // 64/8, 500/8 and 2000/8 users a replica
}

WS_TEST(ctrlCStopsALongSizingAtOnce)
{
    // Llama 3.1 405B on twenty allocations: a compile and a dozen runs each, seconds of work.
    const fs::path dir = waferscope::test::freshDirectory("cli-cluster-int");
    fs::create_directories(dir);
    const std::string jobs = (dir / "jobs.yaml").string();
    {
        std::ofstream file(jobs);
        file << "cluster: {system: cs3, systems: 2048}\njobs:\n";
        for (int numCsx = 22; numCsx < 42; ++numCsx)
            file << "  - {name: j" << numCsx << ", params: '" << sample("llama3p1_405b.yaml")
                 << "', mode: inference, num_csx: " << numCsx
                 << ", users: 1000, tokens_per_s_per_user: 100, duration_s: 600}\n";
    }
    const fs::path log = dir / "log.txt";
    const pid_t child
        = waferscope::test::spawnCli({ "cluster", "--jobs", jobs, "--size_inference", "--json" }, log.c_str());
    WS_REQUIRE(child > 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(child, SIGINT);
    int status = 0;
    bool ended = true;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5); // a hang guard
    while (ended && ::waitpid(child, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > until) {
            ::kill(child, SIGKILL);
            ::waitpid(child, &status, 0);
            ended = false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    WS_REQUIRE(ended);
    WS_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT);
    const std::string text = waferscope::test::readFile(log);
    WS_CHECK_CONTAINS(text, "waferscope-cli: interrupted");
    WS_CHECK(text.find("\"jobs\"") == std::string::npos); // nothing printed before the end
    fs::remove_all(dir);
}
