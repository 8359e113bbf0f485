// libFuzzer target for `cluster --size_inference`: a jobs file read, then scheduled with its
// inference jobs sized by the engine. Any input must yield a schedule or a located diagnostic,
// never a crash, a hang or unbounded work: each allocation is compiled once, the replica searches
// take at most floor(log2(users)) + 1 engine runs each, and a second schedule on the same cache
// runs nothing. To keep an execution short the harness takes small files only (16 jobs, 64
// systems, 4 systems a replica, 1,024 users a job) and points every job at one of two small
// built-in models (or at a file that is not there), chosen by its params value (modelOf).
#include "core/cluster/cluster.h"
#include "core/cluster/jobsfile.h"
#include "core/model/builtinsamples.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <unistd.h>

namespace {

using namespace waferscope::core;
using namespace waferscope::core::cluster;

// A scratch directory for this process, removed when it exits.
struct ScratchDirectory {
    std::filesystem::path path
        = std::filesystem::temp_directory_path() / ("waferscope-fuzz-size-inference-" + std::to_string(::getpid()));
    ScratchDirectory() { std::filesystem::create_directories(path); }
    ~ScratchDirectory()
    {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
};

// The small models, written once into the scratch directory, and a path that does not exist.
const std::vector<std::string>& paramsPaths()
{
    static const ScratchDirectory scratch;
    static const std::vector<std::string> paths = [] {
        const std::filesystem::path& dir = scratch.path;
        std::vector<std::string> written;
        for (const char* name : { "gpt2_small.yaml", "llama3p2_1b.yaml" }) {
            const std::optional<std::string_view> text = builtinSample(name);
            if (!text)
                std::abort();
            std::ofstream((dir / name).string()) << *text;
            written.push_back((dir / name).string());
        }
        written.push_back((dir / "missing.yaml").string());
        return written;
    }();
    return paths;
}

// Which of paramsPaths() a params value stands for: "missing" anywhere in it, the file that is not
// there; "1b", Llama 3.2 1B; anything else, GPT-2 small.
std::size_t modelOf(const std::string& params)
{
    return params.find("missing") != std::string::npos ? 2 : params.find("1b") != std::string::npos ? 1 : 0;
}

void check(bool condition)
{
    if (!condition)
        std::abort();
}

// Every refusal is located (the jobs file's value at fault, or a line of a params file) and
// explained; none is "cancelled" or an internal error.
void checkRefusal(const Diagnostic& error)
{
    check(error.line >= 1 && error.column >= 1 && !error.message.empty() && error.kind != Diagnostic::Kind::Internal);
}

unsigned floorLog2(unsigned value)
{
    unsigned log = 0;
    while (value >>= 1)
        ++log;
    return log;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    Expected<JobsFile> read = parseJobsFile(text, "fuzz/jobs.yaml");
    if (!read) {
        checkRefusal(read.error());
        return 0;
    }
    JobsFile file = std::move(read).value();
    if (file.jobs.empty() || file.jobs.size() > 16 || file.cluster.systems > 64)
        return 0;
    for (JobSpec& job : file.jobs) {
        if (job.numCsx > 4 || job.replicas > 64 || job.users > 1024)
            return 0;
        job.paramsPath = paramsPaths()[modelOf(job.params)];
    }

    ClusterOptions options;
    options.sizeInference = true;
    // A backstop far above the bound checked below: an input that would run away stops here.
    TimingCache cache;
    options.cancelled = [&cache] { return cache.engineRuns() > 1000; };
    const Expected<ClusterResult> result = scheduleCluster(file, options, cache);
    if (!result) {
        checkRefusal(result.error());
        return 0;
    }
    // The work: a compile per allocation; per sized kind (model, allocation, target) a binary
    // search; then a run per job at most.
    std::set<std::tuple<std::string, RunMode, int>> allocations;
    std::set<std::tuple<std::string, int, double>> searches;
    int mostUsers = 1;
    for (const JobSpec& job : file.jobs) {
        allocations.insert({ job.paramsPath, job.mode, job.numCsx });
        if (job.mode == RunMode::Inference && job.tokensPerSPerUser) {
            searches.insert({ job.paramsPath, job.numCsx, *job.tokensPerSPerUser });
            mostUsers = std::max(mostUsers, job.users);
        }
    }
    check(result->compiles == cache.compiles() && result->compiles <= allocations.size());
    check(result->engineRuns == cache.engineRuns()
        && result->engineRuns <= searches.size() * (floorLog2(unsigned(mostUsers)) + 1) + file.jobs.size());
    for (std::size_t j = 0; j < file.jobs.size(); ++j) {
        const JobResult& job = result->jobs[j];
        if (job.replicasNeeded) {
            check(job.replicas == *job.replicasNeeded && job.replicas >= 1 && job.replicas <= file.jobs[j].users);
            check(std::int64_t(job.replicas) * job.numCsx <= file.cluster.systems);
        }
        if (job.startS)
            check(std::int64_t(job.systems.size()) == std::int64_t(job.numCsx) * job.replicas);
    }
    // Everything is cached now.
    const Expected<ClusterResult> again = scheduleCluster(file, options, cache);
    check(again.hasValue() && again->compiles == 0 && again->engineRuns == 0);
    return 0;
}
