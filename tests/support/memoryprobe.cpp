#include "memoryprobe.h"

#include <cerrno>
#include <cstdio>
#include <sstream>

#include <fcntl.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace waferscope::test {

ChildOutput runChild(const std::vector<std::string>& argv, const std::vector<std::string>& environment, int stream)
{
    ChildOutput result;
    std::vector<std::string> words = argv, settings = environment;
    std::vector<char*> argvPointers, environmentPointers;
    for (std::string& word : words)
        argvPointers.push_back(word.data());
    argvPointers.push_back(nullptr);
    for (std::string& setting : settings)
        environmentPointers.push_back(setting.data());
    environmentPointers.push_back(nullptr);
    int pipe[2];
    if (argv.empty() || ::pipe(pipe) != 0)
        return result;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe[1], stream);
    posix_spawn_file_actions_addopen(
        &actions, stream == STDOUT_FILENO ? STDERR_FILENO : STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclose(&actions, pipe[0]);
    posix_spawn_file_actions_addclose(&actions, pipe[1]);
    pid_t child = 0;
    const int spawned
        = ::posix_spawn(&child, argvPointers[0], &actions, nullptr, argvPointers.data(), environmentPointers.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipe[1]);
    char buffer[512];
    for (ssize_t got; spawned == 0 && (got = ::read(pipe[0], buffer, sizeof buffer)) != 0;) {
        if (got > 0)
            result.text.append(buffer, std::size_t(got));
        else if (errno != EINTR)
            break;
    }
    ::close(pipe[0]);
    if (spawned != 0)
        return result;
    result.started = true;
    while (::waitpid(child, &result.status, 0) < 0 && errno == EINTR) { }
    return result;
}

std::vector<std::string> currentEnvironment()
{
    std::vector<std::string> settings;
    for (char** entry = environ; *entry; ++entry)
        settings.emplace_back(*entry);
    return settings;
}

ProbeRun runMemoryProbe(const std::string& probePath, const std::string& kind, long size)
{
    ProbeRun run;
    const std::string sizeText = std::to_string(size);
    const ChildOutput child = runChild({ probePath, kind, sizeText }, currentEnvironment(), STDOUT_FILENO);
    if (!child.started) {
        run.error = "cannot start " + probePath;
        return run;
    }
    std::istringstream fields(child.text);
    fields >> run.estimateBytes >> run.inputBytes >> run.peakBytes;
    run.ok = WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0 && !fields.fail();
    if (!run.ok)
        run.error = kind + " " + sizeText + ": the probe failed (status " + std::to_string(child.status) + ")";
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
