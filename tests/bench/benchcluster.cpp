#include "benchcluster.h"

#include "core/cluster/cluster.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>

#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// 1,000 jobs on 64 CS-2 over twelve (model, mode, allocation) pairs, submitted over a day.
std::string thousandJobs()
{
    const std::string samples = WAFERSCOPE_SOURCE_DIR "/samples/";
    struct Kind {
        const char* params;
        const char* mode;
        int numCsx;
        const char* length;
    };
    const Kind kinds[] = { { "gpt3_xl.yaml", "train", 1, "max_steps: 500" },
        { "gpt3_xl.yaml", "train", 2, "max_steps: 500" }, { "gpt3_xl.yaml", "train", 4, "max_steps: 1000" },
        { "gpt3_xl.yaml", "train", 8, "max_steps: 2000" }, { "gpt3_xl.yaml", "eval", 1, "max_steps: 200" },
        { "gpt2_small.yaml", "train", 1, "max_steps: 5000" }, { "gpt2_small.yaml", "train", 2, "max_steps: 5000" },
        { "gpt3_xl_sparse90.yaml", "train", 4, "max_steps: 1000" }, { "gpt3_6p7b.yaml", "train", 8, "tokens: 1e9" },
        { "gpt3_6p7b.yaml", "train", 16, "tokens: 2e9" }, { "llama2_70b.yaml", "train", 32, "tokens: 5e8" },
        { "fc_mnist.yaml", "train", 1, "max_steps: 100000" } };
    std::mt19937 random(30);
    std::string text = "cluster: {system: cs2, systems: 64}\njobs:\n";
    for (int j = 0; j < 1000; ++j) {
        const Kind& kind = kinds[random() % std::size(kinds)];
        text += "  - {name: job" + std::to_string(j) + ", params: '" + samples + kind.params + "', mode: " + kind.mode
            + ", num_csx: " + std::to_string(kind.numCsx) + ", " + kind.length
            + ", submit_s: " + std::to_string(random() % 86400) + ", priority: " + std::to_string(random() % 3) + "}\n";
    }
    return text;
}

// 300 inference jobs on 192 CS-3 for --size_inference: Llama 3.1 70B and Llama 2 70B on 4 CS-3,
// Llama 3.1 405B on 24, Llama 3 8B on 1; 16 to 2,000 users each, wanting 50 to 400 tokens/s a user.
std::string inferenceJobs()
{
    const std::string samples = WAFERSCOPE_SOURCE_DIR "/samples/";
    const std::pair<const char*, int> models[] = { { "llama3p1_70b.yaml", 4 }, { "llama3p1_405b.yaml", 24 },
        { "llama2_70b.yaml", 4 }, { "llama3_8b.yaml", 1 } };
    const int targets[] = { 50, 100, 200, 400 };
    std::mt19937 random(39);
    std::string text = "cluster: {system: cs3, systems: 192}\njobs:\n";
    for (int j = 0; j < 300; ++j) {
        const auto& [params, numCsx] = models[random() % std::size(models)];
        text += "  - {name: serve" + std::to_string(j) + ", params: '" + samples + params
            + "', mode: inference, num_csx: " + std::to_string(numCsx)
            + ", users: " + std::to_string(16 + random() % 1985)
            + ", tokens_per_s_per_user: " + std::to_string(targets[random() % std::size(targets)]) + ", duration_s: "
            + std::to_string(600 + random() % 6601) + ", submit_s: " + std::to_string(random() % 86400) + "}\n";
    }
    return text;
}

// --size_inference on inferenceJobs() from a cold cache: the best of `rounds` in ms, and the
// compiles and engine runs it took.
bool sizingFigures(nlohmann::ordered_json& figures, const std::string& path, int rounds)
{
    namespace cluster = waferscope::core::cluster;
    std::ofstream(path) << inferenceJobs();
    cluster::ClusterOptions options;
    options.sizeInference = true;
    double best = 1e300;
    std::size_t compiles = 0;
    std::size_t runs = 0;
    for (int round = 0; round < rounds; ++round) {
        const Clock::time_point start = Clock::now();
        const waferscope::core::Expected<cluster::JobsFile> file = cluster::readJobsFile(path);
        cluster::TimingCache cache;
        if (!file || file->jobs.size() != 300)
            return false;
        const waferscope::core::Expected<cluster::ClusterResult> result
            = cluster::scheduleCluster(*file, options, cache);
        if (!result || !result->makespanS)
            return false;
        best = std::min(best, msSince(start));
        compiles = cache.compiles();
        runs = cache.engineRuns();
    }
    figures["cluster_size_inference_ms_300_jobs"] = best;
    figures["cluster_size_inference_compiles_300_jobs"] = compiles;
    figures["cluster_size_inference_engine_runs_300_jobs"] = runs;
    return true;
}

} // namespace

bool clusterFigures(nlohmann::ordered_json& figures, int rounds)
{
    namespace cluster = waferscope::core::cluster;
    const std::filesystem::path dir
        = std::filesystem::temp_directory_path() / ("waferscope-bench-cluster-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "jobs.yaml").string();
    std::ofstream(path) << thousandJobs();
    double best = 1e300;
    double schedulerBest = 1e300;
    std::size_t runs = 0;
    for (int round = 0; round < rounds; ++round) {
        const Clock::time_point start = Clock::now();
        const waferscope::core::Expected<cluster::JobsFile> file = cluster::readJobsFile(path);
        cluster::TimingCache cache;
        if (!file || file->jobs.size() != 1000 || !cluster::scheduleCluster(*file, {}, cache))
            return false;
        best = std::min(best, msSince(start));
        runs = cache.engineRuns();
        // Again with every timing cached: the scheduler's own share.
        const Clock::time_point again = Clock::now();
        const waferscope::core::Expected<cluster::ClusterResult> result = cluster::scheduleCluster(*file, {}, cache);
        schedulerBest = std::min(schedulerBest, msSince(again));
        if (!result || !result->makespanS)
            return false;
    }
    figures["cluster_schedule_ms_1000_jobs"] = best;
    figures["cluster_engine_runs_1000_jobs"] = runs;
    figures["cluster_scheduler_ms_1000_jobs"] = schedulerBest;
    // Sizing runs the engine far more than timing does: fewer rounds.
    const bool sized = sizingFigures(figures, (dir / "inference.yaml").string(), std::min(rounds, 3));
    std::filesystem::remove_all(dir);
    return sized;
}
