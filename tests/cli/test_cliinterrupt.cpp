// The real waferscope-cli stopped by a signal (Ctrl-C is SIGINT; batch schedulers send
// SIGTERM): it ends at once by that signal, leaves no temporary, and the report files already
// in place stay as they were. Also: work too large for memory is refused before it starts.
#include "clirunner.h"
#include "stagingwait.h"
#include "testing.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::string sample(const std::string& name)
{
    return waferscope::test::sourceDir() + "/samples/" + name;
}

// The CLI as a child process with stdout and stderr in `log`; `limitMb` sets its memory budget.
pid_t spawn(const std::vector<std::string>& args, const fs::path& log, const char* limitMb = nullptr)
{
    return waferscope::test::spawnCli(args, log.c_str(), limitMb);
}

// Waits for the child; the wait status, or -1 when it did not end within `limit`.
int waitFor(pid_t child, std::chrono::milliseconds limit)
{
    const Clock::time_point until = Clock::now() + limit;
    int status = 0;
    while (::waitpid(child, &status, WNOHANG) == 0) {
        if (Clock::now() > until) {
            ::kill(child, SIGKILL);
            ::waitpid(child, &status, 0);
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return status;
}

// Waits until the child blocks `signal` (bit signal-1 of SigBlk in /proc/PID/status): the CLI
// blocks its stop signals when it installs its handler thread, first thing in main. A signal sent
// earlier would end the child by the default action, before it could say "interrupted".
bool waitForHandler(pid_t child, int signal, std::chrono::seconds limit)
{
    const Clock::time_point until = Clock::now() + limit;
    const std::string statusPath = "/proc/" + std::to_string(child) + "/status";
    while (Clock::now() < until) {
        const std::string status = waferscope::test::readFile(statusPath);
        if (const std::size_t at = status.find("SigBlk:\t"); at != std::string::npos) {
            const unsigned long long blocked = std::stoull(status.substr(at + 8, 16), nullptr, 16);
            if (blocked & (1ull << (signal - 1)))
                return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
}

std::vector<std::string> temporariesIn(const fs::path& dir)
{
    std::vector<std::string> names;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir))
        if (entry.path().filename().string().find(".tmp") != std::string::npos)
            names.push_back(entry.path().filename().string());
    return names;
}

// Interrupts a run while it stages `file` (once the temporary has `bytes`), or, when `file` is
// empty, while it computes (once its handler is in place); checks the ending and returns the
// milliseconds from signal to exit.
double interrupt(int signal, const std::string& file, std::uintmax_t bytes)
{
    const fs::path dir = waferscope::test::freshDirectory("dir");
    const fs::path log = fs::temp_directory_path() / ("waferscope-int-log-" + std::to_string(::getpid()));
    // The first run leaves a complete directory to protect.
    const pid_t first = spawn({ "run", "--params", sample("gpt2_small.yaml"), "--model_dir", dir.string() }, log);
    WS_REQUIRE(waitFor(first, std::chrono::seconds(120)) == 0);
    std::vector<std::pair<std::string, std::string>> before;
    for (const char* name : { "report.json", "report.csv", "report.html", "trace.json", "summary.txt" })
        before.emplace_back(name, waferscope::test::readFile(dir / name));

    // GPT-3 XL on 16 CS-2 over 400 steps: a trace of hundreds of MB, written for seconds.
    const pid_t child = spawn({ "run", "--params", sample("gpt3_xl.yaml"), "--system", "cs2", "--num_csx", "16",
                                  "--max_steps", "400", "--model_dir", dir.string(), "--quiet" },
        log);
    WS_REQUIRE(child > 0);
    const bool ready = file.empty() ? waitForHandler(child, signal, std::chrono::seconds(120))
                                    : waferscope::test::waitForStaging(dir, file, bytes, std::chrono::seconds(120));
    WS_REQUIRE(ready);
    const Clock::time_point sent = Clock::now();
    ::kill(child, signal);
    const int status = waitFor(child, std::chrono::seconds(60)); // a hang guard, not the target
    const double latencyMs = std::chrono::duration<double, std::milli>(Clock::now() - sent).count();
    WS_REQUIRE(status != -1);
    WS_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == signal);
    WS_CHECK(waferscope::test::readFile(log).find("waferscope-cli: interrupted") != std::string::npos);
    WS_CHECK(temporariesIn(dir).empty());
    for (const auto& [name, content] : before)
        WS_CHECK(waferscope::test::readFile(dir / name) == content);
    fs::remove_all(dir);
    fs::remove(log);
    return latencyMs;
}

} // namespace

WS_TEST(ctrlCWhileTheTraceIsWrittenLeavesTheOldReport)
{
    const double latencyMs = interrupt(SIGINT, "trace.json", 1 << 20);
    std::printf("SIGINT while staging trace.json: ended after %.1f ms\n", latencyMs);
}

WS_TEST(sigtermWhileComputingWritesNothing)
{
    const double latencyMs = interrupt(SIGTERM, "", 0);
    std::printf("SIGTERM while computing: ended after %.1f ms\n", latencyMs);
}

WS_TEST(ctrlCDuringAFirstWriteLeavesNoDirectory)
{
    // --model_dir names a directory that does not exist yet (two levels): interrupted while the
    // trace is staged, the run leaves neither the files nor the directories it created.
    const fs::path parent = waferscope::test::freshDirectory("first");
    const fs::path dir = parent / "runs" / "a";
    fs::create_directories(parent);
    const fs::path log = fs::temp_directory_path() / ("waferscope-int-first-" + std::to_string(::getpid()));
    const pid_t child = spawn({ "run", "--params", sample("gpt3_xl.yaml"), "--system", "cs2", "--num_csx", "16",
                                  "--max_steps", "400", "--model_dir", dir.string(), "--quiet" },
        log);
    WS_REQUIRE(waferscope::test::waitForStaging(dir, "trace.json", 0, std::chrono::seconds(120)));
    ::kill(child, SIGINT);
    const int status = waitFor(child, std::chrono::seconds(60));
    WS_CHECK(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGINT);
    WS_CHECK(!fs::exists(parent / "runs"));
    WS_CHECK(fs::is_empty(parent));
    fs::remove_all(parent);
    fs::remove(log);
}

WS_TEST(aRunTooLargeForMemoryIsRefusedBeforeItStarts)
{
    // 1000 steps of GPT-3 XL on 16 CS-2 (one micro-batch of 170 layers forward and backward)
    // may hold 2 million timeline events, about 230 MB with the frame index: refused under a
    // 64 MB budget, with the largest step count that fits.
    const fs::path log = fs::temp_directory_path() / ("waferscope-int-mem-" + std::to_string(::getpid()));
    const pid_t child = spawn(
        { "run", "--params", sample("gpt3_xl.yaml"), "--system", "cs2", "--num_csx", "16", "--max_steps", "1000" }, log,
        "64");
    const int status = waitFor(child, std::chrono::seconds(60));
    WS_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 3);
    const std::string text = waferscope::test::readFile(log);
    WS_CHECK(text.find("--max_steps: error: 1000 steps of this run's timeline") != std::string::npos);
    WS_CHECK(text.find("WAFERSCOPE_MEMORY_LIMIT_MB=64") != std::string::npos);
    WS_CHECK(text.find("steps fit; lower --max_steps") != std::string::npos);
    fs::remove(log);
}
