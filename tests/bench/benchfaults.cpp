#include "benchfaults.h"
#include "stagingwait.h"

#include "core/compiler/compiler.h"
#include "core/engine/engine.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"
#include "core/report/rundirectory.h"
#include "core/report/runreport.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// One interrupted CLI run: its trace is being staged when SIGINT is sent. -1 on failure.
double interruptOnce(const fs::path& dir)
{
    const std::vector<std::string> args { WAFERSCOPE_CLI_PATH, "run", "--params",
        WAFERSCOPE_SOURCE_DIR "/samples/gpt3_xl.yaml", "--system", "cs2", "--num_csx", "16", "--max_steps", "400",
        "--model_dir", dir.string(), "--quiet" };
    const pid_t child = ::fork();
    if (child < 0)
        return -1.0;
    if (child == 0) {
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, STDERR_FILENO);
        std::vector<char*> argv;
        for (const std::string& arg : args)
            argv.push_back(const_cast<char*>(arg.c_str()));
        argv.push_back(nullptr);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    const bool staging = waferscope::test::waitForStaging(dir, "trace.json", 1u << 20, std::chrono::seconds(60));
    const Clock::time_point sent = Clock::now();
    ::kill(child, SIGINT);
    int status = 0;
    ::waitpid(child, &status, 0);
    const double ms = msSince(sent);
    return staging && WIFSIGNALED(status) && WTERMSIG(status) == SIGINT ? ms : -1.0;
}

// One cancelled run-directory write of GPT-3 XL on 16 CS-2 over 400 steps. -1 on failure.
double cancelOnce(const fs::path& dir)
{
    using namespace waferscope::core;
    const Expected<SystemSpec> cs2 = loadBuiltinPreset("cs2");
    const Expected<ModelGraph> graph = loadModel(WAFERSCOPE_SOURCE_DIR "/samples/gpt3_xl.yaml");
    if (!cs2 || !graph)
        return -1.0;
    CompileOptions options;
    options.numSystems = 16;
    const Expected<ExecutionPlan> plan = compile(*graph, *cs2, options);
    engine::RunOptions runOptions;
    runOptions.maxSteps = 400;
    const Expected<engine::RunResult> run
        = plan ? engine::run(*plan, *graph, *cs2, runOptions) : Expected<engine::RunResult>(plan.error());
    if (!run)
        return -1.0;
    const std::string path = "gpt3_xl.yaml";
    const std::string bytes;
    const report::RunReport report = report::buildReport(
        { path, bytes, *graph, *cs2, *plan, *run, options, runOptions, engine::builtinCalibration() });
    std::atomic<bool> cancelled { false };
    std::atomic<bool> returned { false };
    Clock::time_point end;
    std::thread writer([&] {
        report::writeRunDirectory(dir.string(), report::runDirectoryFiles(report, *run, *plan), &cancelled);
        end = Clock::now();
        returned = true;
    });
    // Cancel once the trace is being written.
    const bool staging = waferscope::test::waitForStaging(
        dir, "trace.json", 1u << 20, std::chrono::seconds(60), [&] { return returned.load(); });
    const Clock::time_point sent = Clock::now();
    cancelled = true;
    writer.join();
    return staging ? std::chrono::duration<double, std::milli>(end - sent).count() : -1.0;
}

} // namespace

bool faultFigures(nlohmann::ordered_json& figures, int rounds)
{
    const fs::path dir = fs::temp_directory_path() / ("waferscope-bench-stop-" + std::to_string(::getpid()));
    double interruptMs = 0.0;
    double cancelMs = 0.0;
    for (int round = 0; round < rounds; ++round) {
        fs::remove_all(dir);
        fs::create_directories(dir);
        const double interrupted = interruptOnce(dir);
        fs::remove_all(dir);
        fs::create_directories(dir);
        const double cancelled = cancelOnce(dir);
        if (interrupted < 0.0 || cancelled < 0.0) {
            fs::remove_all(dir);
            return false;
        }
        interruptMs = std::max(interruptMs, interrupted);
        cancelMs = std::max(cancelMs, cancelled);
    }
    fs::remove_all(dir);
    figures["cli_interrupt_ms"] = interruptMs;
    figures["report_cancel_ms"] = cancelMs;
    return true;
}
