#include "memoryprobe.h"

#include <cerrno>
#include <cstdio>
#include <sstream>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace waferscope::test {

ProbeRun runMemoryProbe(const std::string& probePath, const std::string& kind, long size)
{
    ProbeRun run;
    int pipe[2];
    if (::pipe(pipe) != 0) {
        run.error = "no pipe";
        return run;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe[0]);
    posix_spawn_file_actions_addclose(&actions, pipe[1]);
    const std::string sizeText = std::to_string(size);
    char* argv[] = { const_cast<char*>(probePath.c_str()), const_cast<char*>(kind.c_str()),
        const_cast<char*>(sizeText.c_str()), nullptr };
    pid_t child = 0;
    const int spawned = ::posix_spawn(&child, probePath.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipe[1]);
    std::string output;
    char buffer[256];
    for (ssize_t got; spawned == 0 && (got = ::read(pipe[0], buffer, sizeof buffer)) != 0;) {
        if (got > 0)
            output.append(buffer, std::size_t(got));
        else if (errno != EINTR)
            break;
    }
    ::close(pipe[0]);
    if (spawned != 0) {
        run.error = "cannot start " + probePath;
        return run;
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) { }
    std::istringstream fields(output);
    fields >> run.estimateBytes >> run.inputBytes >> run.peakBytes;
    run.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !fields.fail();
    if (!run.ok)
        run.error = kind + " " + sizeText + ": the probe failed (status " + std::to_string(status) + ")";
    return run;
}

std::vector<EstimateRatio> memoryEstimateRatios(
    const std::string& probePath, const std::string& kind, long baselineSize, const std::vector<long>& sizes)
{
    std::vector<EstimateRatio> ratios;
    const ProbeRun baseline = runMemoryProbe(probePath, kind, baselineSize);
    for (const long size : sizes) {
        EstimateRatio ratio;
        ratio.size = size;
        const ProbeRun run = runMemoryProbe(probePath, kind, size);
        if (!baseline.ok || !run.ok) {
            ratio.error = baseline.ok ? run.error : baseline.error;
        } else {
            ratio.measuredBytes = run.peakBytes - baseline.peakBytes;
            ratio.estimatedBytes
                = (run.estimateBytes + run.inputBytes) - (baseline.estimateBytes + baseline.inputBytes);
            ratio.ratio = ratio.estimatedBytes > 0.0 ? ratio.measuredBytes / ratio.estimatedBytes : 0.0;
        }
        ratios.push_back(ratio);
    }
    return ratios;
}

} // namespace waferscope::test
