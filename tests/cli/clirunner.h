#pragma once

// Runs waferscope-cli in-process (runCli), capturing both streams, or as the real binary in a
// child process, as the CLI suites do.
#include "app/cli/cli.h"

#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace waferscope::test {

struct CliResult {
    int code = -1;
    std::string out;
    std::string err;
};

inline CliResult runCliCaptured(const std::vector<std::string>& args)
{
    std::ostringstream out, err;
    CliResult result;
    result.code = cli::runCli(args, out, err);
    result.out = out.str();
    result.err = err.str();
    return result;
}

// The binary (WAFERSCOPE_CLI_PATH) as a child process; its pid, or -1. With `log`, stdout and
// stderr go there; with `memoryLimitMb`, it runs under that WAFERSCOPE_MEMORY_LIMIT_MB.
inline pid_t spawnCli(
    const std::vector<std::string>& args, const char* log = nullptr, const char* memoryLimitMb = nullptr)
{
    const pid_t child = ::fork();
    if (child != 0)
        return child;
    if (log) {
        const int fd = ::open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(fd, STDOUT_FILENO);
        ::dup2(fd, STDERR_FILENO);
    }
    if (memoryLimitMb)
        ::setenv("WAFERSCOPE_MEMORY_LIMIT_MB", memoryLimitMb, 1);
    std::vector<char*> argv { const_cast<char*>(WAFERSCOPE_CLI_PATH) };
    for (const std::string& arg : args)
        argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ::execv(WAFERSCOPE_CLI_PATH, argv.data());
    ::_exit(127);
}

} // namespace waferscope::test
