// libFuzzer target for the jobs file reader and the scheduler: any input must yield jobs or a
// located diagnostic, never a crash, a hang or unbounded memory. Jobs that read are scheduled
// with both policies (durations standing in for the engine's), and written back as a jobs file
// that reads again.
#include "core/cluster/jobsfile.h"
#include "core/cluster/scheduler.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace waferscope::core::cluster;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const waferscope::core::Expected<JobsFile> file = parseJobsFile(text, "fuzz/jobs.yaml");
    if (!file) {
        const waferscope::core::Diagnostic& error = file.error();
        if (error.line < 1 || error.column < 1 || error.message.empty())
            std::abort(); // every refusal must be located and explained
        return 0;
    }
    if (file->jobs.empty() || file->jobs.size() > 2000)
        return 0;
    std::vector<QueuedJob> jobs;
    for (const JobSpec& job : file->jobs)
        jobs.push_back({ job.submitS, int(std::min<std::int64_t>(std::int64_t(job.numCsx) * job.replicas, 1 << 20)),
            double(job.maxSteps.value_or(0)), job.durationS + double(job.maxSteps.value_or(1)), job.priority });
    for (const Policy policy : { Policy::Fifo, Policy::Backfill }) {
        const auto placed
            = scheduleJobs(jobs, file->cluster.systems, file->cluster.memoryxBytes.value_or(1e15), policy);
        for (std::size_t j = 0; j < jobs.size(); ++j)
            if (placed[j] && (placed[j]->startS < jobs[j].submitS || int(placed[j]->systems.size()) != jobs[j].systems))
                std::abort();
    }
    if (!parseJobsFile(jobsFileText(*file, "fuzz/saved.yaml"), "fuzz/saved.yaml"))
        std::abort();
    return 0;
}
