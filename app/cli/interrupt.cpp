#include "app/cli/interrupt.h"

#include "core/report/atomicfile.h"

#include <csignal>
#include <cstring>
#include <thread>

#include <pthread.h>
#include <unistd.h>

namespace waferscope::cli {

namespace {

sigset_t stopSignals()
{
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGHUP);
    return signals;
}

void say(const char* text)
{
    const std::size_t size = std::strlen(text);
    for (std::size_t written = 0; written < size;) {
        const ssize_t n = ::write(STDERR_FILENO, text + written, size - written);
        if (n <= 0)
            return;
        written += std::size_t(n);
    }
}

} // namespace

void installInterruptHandling()
{
    const sigset_t signals = stopSignals();
    // Threads created from now on (TBB's workers among them) inherit the blocked set.
    ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    std::thread([signals] {
        int signal = 0;
        if (::sigwait(&signals, &signal) != 0)
            return;
        core::report::abandonStagedFiles();
        if (::isatty(STDERR_FILENO))
            say("\r\033[K"); // the progress line, if one is shown
        say("waferscope-cli: interrupted\n");
        // End the way the signal would have ended the process.
        std::signal(signal, SIG_DFL);
        sigset_t only;
        sigemptyset(&only);
        sigaddset(&only, signal);
        ::pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
        ::raise(signal);
        ::_exit(128 + signal); // not reached: the default action ends the process
    }).detach();
}

} // namespace waferscope::cli
