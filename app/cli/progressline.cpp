#include "app/cli/progressline.h"

#include <cstdio>

#include <unistd.h>

namespace waferscope::cli {

namespace {

constexpr auto kDelay = std::chrono::seconds(1);
constexpr auto kRedraw = std::chrono::milliseconds(100);
constexpr int kBarWidth = 24;

} // namespace

ProgressLine::ProgressLine(std::ostream& err, bool enabled)
    : m_err(err)
    , m_enabled(enabled)
{
    if (m_enabled)
        m_thread = std::thread([this] { loop(); });
}

ProgressLine::~ProgressLine()
{
    if (!m_enabled)
        return;
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    m_thread.join();
    if (m_shown)
        m_err << "\r\033[2K" << std::flush;
}

void ProgressLine::set(const std::string& stage, int done, int total)
{
    std::lock_guard lock(m_mutex);
    m_stage = stage;
    m_done = done;
    m_total = total > 0 ? total : 1;
}

bool ProgressLine::stderrIsTerminal()
{
    return ::isatty(STDERR_FILENO) == 1;
}

void ProgressLine::loop()
{
    std::unique_lock lock(m_mutex);
    if (m_wake.wait_for(lock, kDelay, [this] { return m_stop; }))
        return;
    while (!m_stop) {
        draw(std::chrono::steady_clock::now() - m_start);
        m_wake.wait_for(lock, kRedraw, [this] { return m_stop; });
    }
}

void ProgressLine::draw(std::chrono::steady_clock::duration elapsed)
{
    const int filled = std::min(kBarWidth, kBarWidth * m_done / m_total);
    std::string bar(std::size_t(filled), '#');
    bar.append(std::size_t(kBarWidth - filled), '-');
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f s", std::chrono::duration<double>(elapsed).count());
    m_err << "\r\033[2K[" << bar << "] " << m_stage << " " << m_done << "/" << m_total << "  " << seconds << std::flush;
    m_shown = true;
}

} // namespace waferscope::cli
