// waferscope-cli run --model_dir and compare: the run directory as a user gets it (of a model-level
// and of a cycle-level run), the exit codes for directories that cannot be written, the real
// binary killed while it writes, and a second run into a directory another run is writing.
#include "testing.h"

#include "clirunner.h"
#include "stagingwait.h"

#include "core/report/commitjournal.h"
#include "core/report/rundirectorylock.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
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

// tiny_llama's decode at cycle level on a CS-2: a few seconds.
std::vector<std::string> cycleArgs(const std::string& tokens, const std::string& seed)
{
    return { "run", "--params", waferscope::test::dataDir() + "/cyclelevel/tiny_llama.yaml", "--system", "cs2",
        "--mode", "inference", "--level", "cycle", "--prompt_tokens", "3", "--tokens", tokens, "--seed", seed };
}

std::string refusal(const fs::path& dir, pid_t holder)
{
    return dir.string() + ": error: another WaferScope run is writing this directory (pid " + std::to_string(holder)
        + "); wait for it or choose another directory\n";
}

// A child process holding `dir`'s lock until `release` is written to; it has the lock on return.
struct LockHolder {
    pid_t pid = -1;
    int release = -1; // the write end of the pipe the holder waits on
};

LockHolder holdLock(const fs::path& dir)
{
    int ready[2], release[2];
    if (::pipe(ready) != 0 || ::pipe(release) != 0)
        return {};
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(ready[0]);
        ::close(release[1]); // so that the parent's close is an end of file here
        const auto lock = waferscope::core::report::RunDirectoryLock::acquire(dir.string());
        char byte = lock ? 1 : 0;
        if (::write(ready[1], &byte, 1) != 1 || ::read(release[0], &byte, 1) < 0)
            ::_exit(11);
        ::_exit(lock ? 0 : 10);
    }
    char byte = 0;
    const bool held = child > 0 && ::read(ready[0], &byte, 1) == 1 && byte == 1;
    for (const int fd : { ready[0], ready[1], release[0] })
        ::close(fd);
    return { held ? child : -1, release[1] };
}

int exitCodeOf(pid_t child)
{
    int status = 0;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<std::string> split(const std::string& text, char separator)
{
    std::vector<std::string> parts;
    std::istringstream in(text);
    for (std::string part; std::getline(in, part, separator);)
        parts.push_back(part);
    return parts;
}

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

WS_TEST(cycleLevelRunWritesTheModelReportBesideTheCycleFigures)
{
    const fs::path dir = waferscope::test::freshDirectory("cyclerun");
    std::vector<std::string> args = cycleArgs("2", "1");
    args.insert(args.end(), { "--model_dir", (dir / "a").string(), "--json" });
    const Result ran = run(args);
    WS_REQUIRE(ran.code == 0);
    const nlohmann::json printed = nlohmann::json::parse(ran.out);
    for (const char* name : kFiles)
        WS_CHECK(fs::is_regular_file(dir / "a" / name));
    const nlohmann::json report = nlohmann::json::parse(waferscope::test::readFile(dir / "a" / "report.json"));

    // The cycle-level figures are those --json printed for the same run, key for key.
    WS_CHECK(report["cycle_level"] == printed);
    WS_CHECK_EQ(report["manifest"]["seed"].get<int>(), 1);
    WS_CHECK_EQ(report["manifest"]["options"]["prompt_tokens"].get<int>(), 3);
    // The rest is the model level's report of the same plan and prompt.
    const Result model = run({ "run", "--params", waferscope::test::dataDir() + "/cyclelevel/tiny_llama.yaml",
        "--system", "cs2", "--mode", "inference", "--prompt_tokens", "3", "--json" });
    WS_REQUIRE(model.code == 0);
    const nlohmann::json modelJson = nlohmann::json::parse(model.out);
    WS_CHECK(report["totals"]["step_time_s"] == modelJson["step_time_s"]);
    WS_REQUIRE(report["layers"].size() == modelJson["layers"].size());
    for (std::size_t i = 0; i < report["layers"].size(); ++i)
        WS_CHECK(report["layers"][i]["time_s"] == modelJson["layers"][i]["time_s"]);

    // cycle_vs_model.csv: a row per region with the printed numbers and measured / model.
    const std::vector<std::string> lines = split(waferscope::test::readFile(dir / "a" / "cycle_vs_model.csv"), '\n');
    const nlohmann::json& regions = printed["regions"];
    WS_REQUIRE(regions.size() > 10 && lines.size() == regions.size() + 1);
    WS_CHECK_EQ(lines[0], std::string("op,kernel,measured_cycles,model_cycles,ratio,link_wavelets,busy_fraction,pes"));
    for (std::size_t i = 0; i < regions.size(); ++i) {
        const std::vector<std::string> cells = split(lines[i + 1] + ",", ',');
        WS_REQUIRE(cells.size() == 8);
        WS_CHECK_EQ(cells[0], regions[i]["op"].get<std::string>());
        WS_CHECK_EQ(cells[1], regions[i]["kernel"].get<std::string>());
        const double measured = regions[i]["measured_cycles"].get<double>();
        const double modelCycles = regions[i]["model_cycles"].get<double>();
        WS_CHECK_EQ(std::stod(cells[2]), measured);
        WS_CHECK_EQ(std::stod(cells[3]), modelCycles);
        if (modelCycles == 0.0)
            WS_CHECK(cells[4].empty());
        else
            WS_CHECK_NEAR(std::stod(cells[4]), measured / modelCycles, 1e-15);
        WS_CHECK_EQ(std::stod(cells[5]), regions[i]["link_wavelets"].get<double>());
        WS_CHECK_EQ(std::stod(cells[6]), regions[i]["busy_fraction"].get<double>());
        WS_CHECK_EQ(std::stoll(cells[7]), regions[i]["pes"].get<long long>());
    }

    // The HTML report: the tables, with every region of this two-block model and the totals.
    const std::string html = waferscope::test::readFile(dir / "a" / "report.html");
    WS_CHECK_CONTAINS(html, "<h2>Cycle level vs model</h2>");
    WS_CHECK_CONTAINS(html, "<h2>Cycle level vs model by kernel</h2>");
    for (const nlohmann::json& region : regions)
        WS_CHECK_CONTAINS(html, "<td>" + region["op"].get<std::string>() + "</td>");
    std::string cycles = std::to_string(std::llround(printed["cycles_per_token"].get<double>()));
    for (int at = int(cycles.size()) - 3; at > 0; at -= 3)
        cycles.insert(std::size_t(at), ",");
    WS_CHECK_CONTAINS(html, "<td class=\"num\">" + cycles + "</td>");
    WS_CHECK_CONTAINS(waferscope::test::readFile(dir / "a" / "summary.txt"), "cycle level: ");

    // Another run, in text: it names the directory; compare reads both and lines up the cycle totals.
    std::vector<std::string> other = cycleArgs("1", "2");
    other.insert(other.end(), { "--model_dir", (dir / "b").string() });
    const Result text = run(other);
    WS_REQUIRE(text.code == 0);
    WS_CHECK_CONTAINS(text.out, "cycle_vs_model.csv to " + (dir / "b").string());
    const nlohmann::json b = nlohmann::json::parse(waferscope::test::readFile(dir / "b" / "report.json"));
    const Result compared = run({ "compare", (dir / "a").string(), (dir / "b").string(), "--json" });
    WS_REQUIRE(compared.code == 0);
    const nlohmann::json comparison = nlohmann::json::parse(compared.out);
    bool found = false;
    for (const nlohmann::json& total : comparison["totals"])
        if (total["metric"] == "cycle_level_cycles_per_token") {
            found = true;
            WS_CHECK(total["a"] == printed["cycles_per_token"]);
            WS_CHECK(total["b"] == b["cycle_level"]["cycles_per_token"]);
        }
    WS_CHECK(found);
    WS_CHECK_CONTAINS(run({ "compare", (dir / "a").string(), (dir / "b").string() }).out, "cycle-level cycles/token");
    fs::remove_all(dir);
}

WS_TEST(aRunIntoADirectoryAnotherRunWritesIsRefusedBeforeItComputes)
{
    const fs::path dir = waferscope::test::freshDirectory("locked");
    fs::create_directories(dir);
    const LockHolder holder = holdLock(dir);
    WS_REQUIRE(holder.pid > 0);
    // Nothing printed but the refusal: the run neither computed nor wrote (a progress line or a
    // summary would show on out), and the directory holds the holder's lock file alone.
    const Result refused = run(runArgs(dir, "2"));
    WS_CHECK_EQ(refused.code, 2);
    WS_CHECK(refused.out.empty());
    WS_CHECK_EQ(refused.err, refusal(dir, holder.pid));
    const Result cluster = run({ "cluster", "--jobs", waferscope::test::sourceDir() + "/samples/cluster/inference.yaml",
        "--model_dir", dir.string() });
    WS_CHECK_EQ(cluster.code, 2);
    WS_CHECK(cluster.out.empty());
    WS_CHECK_EQ(cluster.err, refusal(dir, holder.pid));
    WS_CHECK_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);

    // Once the holder is gone the same run writes the directory, and leaves no lock file.
    ::close(holder.release);
    WS_CHECK_EQ(exitCodeOf(holder.pid), 0);
    WS_REQUIRE(run(runArgs(dir, "2")).code == 0);
    for (const char* name : kFiles)
        WS_CHECK(fs::is_regular_file(dir / name));
    WS_CHECK(!fs::exists(dir / std::string(waferscope::core::report::RunDirectoryLock::kFileName)));
    fs::remove_all(dir);
}

WS_TEST(twoCliRunsIntoOneDirectoryLeaveTheFirstsWhole)
{
    // The real binaries: the first is stopped (SIGSTOP) while it stages its trace; the second,
    // started then, exits 2 naming the first, and none of the first's temporaries goes; the
    // first, continued, commits a whole directory.
    const fs::path dir = waferscope::test::freshDirectory("tworuns");
    const fs::path log = fs::temp_directory_path() / ("waferscope-tworuns-" + std::to_string(::getpid()));
    const pid_t first = waferscope::test::spawnCli({ "run", "--params", gpt3Xl(), "--system", "cs2", "--num_csx", "16",
        "--max_steps", "100", "--model_dir", dir.string(), "--quiet" });
    WS_REQUIRE(first > 0);
    int status = 0;
    const bool staging = waferscope::test::waitForStaging(
        dir, "trace.json", 1, std::chrono::seconds(300), [&] { return ::waitpid(first, &status, WNOHANG) == first; });
    WS_REQUIRE(staging);
    ::kill(first, SIGSTOP);
    WS_REQUIRE(::waitpid(first, &status, WUNTRACED) == first && WIFSTOPPED(status));
    std::map<std::string, std::uintmax_t> temporaries; // name -> bytes, frozen while the first is stopped
    for (const fs::directory_entry& entry : fs::directory_iterator(dir))
        if (!waferscope::core::report::temporaryTarget(entry.path().filename().string()).empty())
            temporaries[entry.path().filename().string()] = entry.file_size();
    WS_CHECK(temporaries.size() >= 4); // report.json, report.csv, report.html whole; the trace's begun

    const pid_t second = waferscope::test::spawnCli(
        { "run", "--params", waferscope::test::sourceDir() + "/samples/gpt2_small.yaml", "--model_dir", dir.string() },
        log.c_str());
    WS_REQUIRE(second > 0);
    WS_CHECK_EQ(exitCodeOf(second), 2);
    WS_CHECK_EQ(waferscope::test::readFile(log), refusal(dir, first));
    for (const auto& [name, bytes] : temporaries)
        WS_CHECK(fs::exists(dir / name) && fs::file_size(dir / name) == bytes);

    ::kill(first, SIGCONT);
    WS_CHECK_EQ(exitCodeOf(first), 0);
    std::size_t entries = 0, events = 0;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
        ++entries;
        events += entry.path().filename().string().starts_with("events.out.tfevents.");
    }
    WS_CHECK_EQ(entries, std::size(kFiles) + 1); // the five and the event file: no journal, lock or temporary
    WS_CHECK_EQ(events, std::size_t(1));
    const nlohmann::json report = nlohmann::json::parse(waferscope::test::readFile(dir / "report.json"));
    WS_CHECK_EQ(report["manifest"]["options"]["max_steps"].get<int>(), 100);
    WS_CHECK(!nlohmann::json::parse(waferscope::test::readFile(dir / "trace.json"), nullptr, false).is_discarded());
    fs::remove_all(dir);
    fs::remove(log);
}

// run --mode train --level cycle: a weight-streaming step of a small classifier on the fabric,
// with the keys, and what it refuses, each with its exit code.
WS_TEST(aTrainingStepAtCycleLevelPrintsItsFigures)
{
    const std::string mlp = waferscope::test::dataDir() + "/cyclelevel/tiny_mlp.yaml";
    const std::vector<std::string> base = { "run", "--params", mlp, "--system", "cs2", "--execution",
        "weight_streaming", "--mode", "train", "--level", "cycle", "--micro_batch_size", "8" };
    std::vector<std::string> args = base;
    for (const char* extra : { "--max_steps", "3", "--learning_rate", "0.1", "--json" })
        args.push_back(extra);
    const Result result = run(args);
    WS_REQUIRE(result.code == 0);
    const nlohmann::json json = nlohmann::json::parse(result.out);
    for (const char* key : { "level", "loss", "reference_loss", "max_abs_grad_error", "grads_match_reference",
             "cycles_per_step", "regions", "losses", "reference_losses" })
        WS_CHECK(json.contains(key));
    WS_CHECK_EQ(json.at("level").get<std::string>(), "cycle");
    WS_CHECK(json.at("grads_match_reference").get<bool>());
    WS_CHECK_EQ(json.at("loss").get<double>(), json.at("reference_loss").get<double>());
    WS_CHECK_EQ(json.at("losses").size(), std::size_t(3));
    std::uint64_t sum = 0;
    for (const nlohmann::json& region : json.at("regions")) {
        for (const char* key : { "op", "measured_cycles", "model_cycles", "link_wavelets", "busy_fraction", "pass",
                 "bytes_in", "bytes_out" })
            WS_CHECK(region.contains(key));
        const std::string pass = region.at("pass").get<std::string>();
        WS_CHECK(pass == "forward" || pass == "backward_delta" || pass == "backward_gradient");
        sum += region.at("measured_cycles").get<std::uint64_t>();
    }
    WS_CHECK_EQ(sum, json.at("cycles_per_step").get<std::uint64_t>());

    const Result text = run(base);
    WS_CHECK_EQ(text.code, 0);
    WS_CHECK_CONTAINS(text.out, "a training step at cycle level, weight streaming, 8 samples");

    std::vector<std::string> pipelined = base;
    pipelined[6] = "pipelined";
    const Result refusedMode = run(pipelined);
    WS_CHECK_EQ(refusedMode.code, 3);
    WS_CHECK_CONTAINS(refusedMode.err, "--execution weight_streaming");
    std::vector<std::string> sequence = base;
    sequence.insert(sequence.end(), { "--max_sequence_length", "128" });
    WS_CHECK_EQ(run(sequence).code, 2);
    std::vector<std::string> llama = base;
    llama[2] = waferscope::test::dataDir() + "/cyclelevel/tiny_llama.yaml";
    const Result refusedModel = run(llama);
    WS_CHECK_EQ(refusedModel.code, 3);
    WS_CHECK_CONTAINS(refusedModel.err, "has no training kernel yet");
}

// A GPT-2-style decoder's step at cycle level: its sequences, its attention and norms in the
// regions, and the loss the reference gives.
WS_TEST(aDecoderTrainingStepAtCycleLevelPrintsItsFigures)
{
    const std::vector<std::string> args
        = { "run", "--params", waferscope::test::dataDir() + "/cyclelevel/tiny_gpt2_tied.yaml", "--system", "cs2",
              "--execution", "weight_streaming", "--mode", "train", "--level", "cycle", "--micro_batch_size", "2",
              "--max_sequence_length", "8", "--layers", "1" };
    const Result text = run(args);
    WS_REQUIRE(text.code == 0);
    WS_CHECK_CONTAINS(text.out, "a training step at cycle level, weight streaming, 2 sequences of 8 tokens");
    WS_CHECK_CONTAINS(text.out, "(reference ");
    std::vector<std::string> withJson = args;
    withJson.push_back("--json");
    const Result result = run(withJson);
    WS_REQUIRE(result.code == 0);
    const nlohmann::json json = nlohmann::json::parse(result.out);
    WS_CHECK_EQ(json.at("tokens").get<std::int64_t>(), std::int64_t(16));
    WS_CHECK_EQ(json.at("layers").get<int>(), 1);
    WS_CHECK(json.at("grads_match_reference").get<bool>());
    WS_CHECK(json.at("loss_matches_reference").get<bool>());
    std::set<std::string> kernels;
    for (const nlohmann::json& region : json.at("regions"))
        kernels.insert(region.at("kernel").get<std::string>());
    for (const char* kernel : { "gemm_stream", "gradient_stream", "gather", "attention", "layer_norm", "loss" })
        WS_CHECK(kernels.count(kernel) == 1);
    WS_CHECK_EQ(json.at("regions").size(), std::size_t(46 + 15));
    std::vector<std::string> tooLong = args;
    tooLong[14] = "4096";
    const Result refused = run(tooLong);
    WS_CHECK_EQ(refused.code, 2);
    WS_CHECK_CONTAINS(refused.err, "--max_sequence_length");
}
