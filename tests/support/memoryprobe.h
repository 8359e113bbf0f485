#pragma once

// Runs waferscope-memoryprobe (memoryprobemain.cpp), which does one estimated allocation in a
// worker process and reports the worker's peak resident set as wait4() gave it, for the test and
// the benchmark that hold the memory budget's estimates to what the work really takes. Linux only.

#include <string>
#include <vector>

namespace waferscope::test {

// Runs the program `argv[0]` with `argv` and `environment`, reading what it writes on `stream`
// (STDOUT_FILENO or STDERR_FILENO; the other goes to /dev/null) until it ends.
struct ChildOutput {
    bool started = false;
    int status = 0; // the wait status
    std::string text;
};
ChildOutput runChild(const std::vector<std::string>& argv, const std::vector<std::string>& environment, int stream);
// This process's environment, as `runChild` takes it.
std::vector<std::string> currentEnvironment();

struct ProbeRun {
    bool ok = false; // the child did the work and reported its estimate
    double peakBytes = 0.0; // the worker's peak resident set
    double estimateBytes = 0.0; // the core's estimate of the work
    double inputBytes = 0.0; // the input the probe made, which the estimate leaves out
    std::string error; // when not ok: why
};
ProbeRun runMemoryProbe(const std::string& probePath, const std::string& kind, long size);

// The work at `size` against the same work at `baselineSize`: what the larger one took beyond
// the smaller (its peak minus the baseline's) over what the estimates say it adds (with the
// inputs). A ratio of 1 is an exact estimate; 0 when a child failed.
struct EstimateRatio {
    long size = 0;
    double measuredBytes = 0.0;
    double estimatedBytes = 0.0;
    double ratio = 0.0;
    std::string error;
};
std::vector<EstimateRatio> memoryEstimateRatios(
    const std::string& probePath, const std::string& kind, long baselineSize, const std::vector<long>& sizes);

} // namespace waferscope::test
