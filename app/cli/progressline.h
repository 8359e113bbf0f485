#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

namespace waferscope::cli {

// A one-line progress bar on stderr for long commands: "[#####-----] running 2/5  3.1 s".
// It appears only once the command has taken a second, only when enabled (stderr is a
// terminal and --quiet was not given), and is erased when the command finishes, so output
// captured by scripts never contains it. Stages are set from the command's thread; a small
// drawing thread redraws the line ten times a second.
class ProgressLine {
public:
    ProgressLine(std::ostream& err, bool enabled);
    ~ProgressLine(); // erases the line
    ProgressLine(const ProgressLine&) = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;

    // `stage` is what runs now; `done` of `total` units are finished.
    void set(const std::string& stage, int done, int total);

    // Whether progress goes to stderr of this process at all: stderr is a terminal.
    static bool stderrIsTerminal();

private:
    void draw(std::chrono::steady_clock::duration elapsed);
    void loop();

    std::ostream& m_err;
    const bool m_enabled;
    const std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
    std::mutex m_mutex; // guards the fields below
    std::condition_variable m_wake;
    std::string m_stage;
    int m_done = 0;
    int m_total = 1;
    bool m_stop = false;
    bool m_shown = false; // a line is on the terminal and must be erased
    std::thread m_thread; // last: starts after the fields it reads
};

} // namespace waferscope::cli
