// The hostile-input suite (issue 39): at least 500 generated bad inputs a run, from a seed, over
// every reader and the CLI's options, each run in process through waferscope-cli's entry point.
// Every input must end in exit 0 (a harmless change), 2 (bad input) or 3 (cannot be mapped, over
// the memory budget), never 1, a crash or a hang; a refusal's first line is located at something
// the user gave (a path or an option) or at the command; nothing printed holds a raw control
// character; and the process's peak RSS stays under the memory budget the suite runs with.
//
//   WAFERSCOPE_HOSTILE_SEED (default 39) and WAFERSCOPE_HOSTILE_CASES (default 600) choose the
//   inputs; WAFERSCOPE_HOSTILE_HANG_S (default 300) is the watchdog's limit for one input.
//   A failure prints its seed and index: the same pair makes the same input.
#include "clirunner.h"
#include "hostilecases.h"
#include "testing.h"

#include "core/common/displaytext.h"
#include "core/common/memorybudget.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include <sys/resource.h>

using namespace waferscope;
namespace fs = std::filesystem;

namespace {

long environmentNumber(const char* name, long fallback)
{
    const char* text = std::getenv(name);
    return text && *text ? std::strtol(text, nullptr, 10) : fallback;
}

double peakRssBytes()
{
    struct rusage usage { };
    ::getrusage(RUSAGE_SELF, &usage);
    return double(usage.ru_maxrss) * 1024.0;
}

std::string shown(const std::vector<std::string>& args)
{
    std::string line = "waferscope-cli";
    for (const std::string& arg : args)
        line += " '" + core::displayText(arg) + "'";
    return line;
}

// The first raw control character in `text` (our own progress-line erase sequence aside), or -1.
long rawControlAt(std::string text)
{
    for (std::size_t at = text.find("\r\033[2K"); at != std::string::npos; at = text.find("\r\033[2K", at))
        text.erase(at, 5);
    for (std::size_t i = 0; i < text.size(); ++i)
        if ((static_cast<unsigned char>(text[i]) < 0x20 && text[i] != '\n') || text[i] == 0x7f)
            return long(i);
    return -1;
}

// Whether the first line of a refusal is `LOCATION[:LINE[:COL]]: error: MESSAGE`, located at an
// argument the user gave (a path or an option, as displayed), a file of the sources, or the command.
// (Parsed by hand: a message may echo a value of a million characters.)
bool locatedAtOurs(const std::string& line, const std::vector<std::string>& args)
{
    const std::size_t error = line.find(": error: ");
    if (error == std::string::npos || error == 0 || error + 9 >= line.size())
        return false;
    std::string location = line.substr(0, error);
    // LINE and COL, when present, are digits after the last colons.
    for (int field = 0; field < 2; ++field) {
        const std::size_t colon = location.rfind(':');
        if (colon == std::string::npos || colon + 1 == location.size()
            || location.find_first_not_of("0123456789", colon + 1) != std::string::npos)
            break;
        location.erase(colon);
    }
    if (location.rfind("waferscope-cli", 0) == 0 || location.rfind("--", 0) == 0
        || location.rfind(test::sourceDir(), 0) == 0 || location.rfind("<", 0) == 0)
        return true;
    for (const std::string& arg : args)
        if (!arg.empty() && location.rfind(core::displayText(arg), 0) == 0)
            return true;
    return false;
}

// Ends the process, naming the input, when one input runs longer than the limit: a hang.
class Watchdog {
public:
    explicit Watchdog(std::chrono::seconds limit)
        : m_limit(limit)
        , m_thread([this] { watch(); })
    {
    }
    ~Watchdog()
    {
        {
            std::lock_guard lock(m_mutex);
            m_stop = true;
        }
        m_wake.notify_all();
        m_thread.join();
    }
    void start(std::string what)
    {
        std::lock_guard lock(m_mutex);
        m_what = std::move(what);
        m_started = std::chrono::steady_clock::now();
        ++m_generation;
    }

private:
    void watch()
    {
        std::unique_lock lock(m_mutex);
        while (!m_stop) {
            const long generation = m_generation;
            if (m_wake.wait_until(lock, m_started + m_limit, [&] { return m_stop || m_generation != generation; }))
                continue;
            std::cerr << "HANG: one input ran over " << m_limit.count() << " s: " << m_what << std::endl;
            std::_Exit(1);
        }
    }

    std::chrono::seconds m_limit;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::string m_what;
    std::chrono::steady_clock::time_point m_started = std::chrono::steady_clock::now();
    long m_generation = 0;
    bool m_stop = false;
    std::thread m_thread;
};

} // namespace

WS_TEST(hostileInputsEndInALocatedRefusalWithinTheBudget)
{
    const auto seed = std::uint64_t(environmentNumber("WAFERSCOPE_HOSTILE_SEED", 39));
    const int count = int(environmentNumber("WAFERSCOPE_HOSTILE_CASES", 600));
    const fs::path scratch = test::freshDirectory("hostile");
    fs::create_directories(scratch / "base");
    const test::CliResult base
        = test::runCliCaptured({ "run", "--params", test::sourceDir() + "/samples/gpt2_small.yaml", "--system", "cs2",
            "--max_steps", "2", "--model_dir", (scratch / "base").string(), "--quiet" });
    WS_REQUIRE(base.code == 0);
    test::HostileCases cases(seed, scratch, scratch / "base" / "report.json");
    const core::MemoryBudget budget = core::memoryBudget();
    Watchdog watchdog(std::chrono::seconds(environmentNumber("WAFERSCOPE_HOSTILE_HANG_S", 300)));
    std::map<std::string, std::map<int, int>> exits; // kind -> exit code -> inputs
    double slowestS = 0;
    std::string slowest;
    int failures = 0;
    for (int index = 0; index < count; ++index) {
        const test::HostileCase input = cases.make(index);
        const std::string what = "seed " + std::to_string(seed) + " index " + std::to_string(index) + " (" + input.kind
            + ": " + core::displayText(input.description) + "): " + shown(input.args);
        watchdog.start(what);
        const auto started = std::chrono::steady_clock::now();
        const test::CliResult result = test::runCliCaptured(input.args);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (seconds > slowestS) {
            slowestS = seconds;
            slowest = what;
        }
        ++exits[input.kind][result.code];
        std::string problem;
        const std::string firstLine = result.err.substr(0, result.err.find('\n'));
        if (result.code != 0 && result.code != 2 && result.code != 3)
            problem = "exit " + std::to_string(result.code);
        else if (result.code != 0 && !locatedAtOurs(firstLine, input.args))
            problem = "not located at the user's input";
        else if (rawControlAt(result.err) >= 0 || rawControlAt(result.out) >= 0)
            problem = "a raw control character in the output";
        else if (peakRssBytes() > double(budget.bytes))
            problem = "peak RSS " + std::to_string(long(peakRssBytes() / 1e6)) + " MB over the budget";
        if (!problem.empty()) {
            ++failures;
            test::reportFailure(__FILE__, __LINE__,
                problem + ": " + what + "\n    stderr: " + core::displayText(result.err.substr(0, 400)));
            if (failures >= 20)
                break;
        }
    }
    std::cout << "hostile: " << count << " inputs from seed " << seed << "; peak RSS " << long(peakRssBytes() / 1e6)
              << " MB of a " << long(double(budget.bytes) / 1e6) << " MB budget (" << budget.origin << "); slowest "
              << slowestS << " s: " << slowest << "\n";
    for (const auto& [kind, codes] : exits) {
        std::cout << "  " << kind << ":";
        for (const auto& [code, inputs] : codes)
            std::cout << " exit " << code << " x" << inputs;
        std::cout << "\n";
    }
    fs::remove_all(scratch);
}
