#pragma once

#include "core/common/diagnostic.h"
#include "core/common/expected.h"
#include "core/common/names.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace waferscope::core::cluster {

// A jobs file: the jobs submitted to one shared Wafer-Scale Cluster, for `waferscope-cli
// cluster --jobs FILE` and the GUI's Cluster dock. YAML with a top-level `jobs:` key:
//
//   cluster: {system: cs2, systems: 64, memoryx_bytes: 82e12}  # memoryx_bytes: optional
//   jobs:
//     - {name: xl, params: ../gpt3_xl.yaml, mode: train, num_csx: 16, max_steps: 2000}
//     - {name: serve, params: ../llama3_8b.yaml, mode: inference, num_csx: 1, replicas: 4,
//        users: 64, duration_s: 3600, tokens_per_s_per_user: 400, submit_s: 600, priority: 1}
//
// The keys are a contract. Every error is located at the value (or key) at fault, and an unknown
// key is an error, since a misspelt one would silently change a schedule.

// Where a value sits in the jobs file, for errors found after reading (a params file that does
// not load, say).
struct Location {
    int line = 0;
    int column = 0;
};

struct ClusterConfig {
    std::string system; // hardware preset key: "cs2"
    int systems = 1; // CS-X systems in the cluster
    std::optional<double> memoryxBytes; // MemoryX capacity; absent: the preset's
    Location at; // of the `cluster:` key
    Location systemsAt; // of its `systems` value
};

struct JobSpec {
    std::string name; // letters, digits, '_', '.', '-'; unique in the file
    std::string params; // as written
    std::string paramsPath; // resolved against the jobs file's directory
    RunMode mode = RunMode::Train;
    int numCsx = 1; // systems per replica
    // Training and eval: one of these.
    std::optional<std::int64_t> maxSteps;
    std::optional<double> tokens; // a token budget: ceil(tokens / tokens per step) steps
    // Inference: replicas of numCsx systems each, serving `users` between them for durationS.
    int replicas = 1;
    int users = 1;
    double durationS = 0.0;
    std::optional<double> tokensPerSPerUser; // the per-user target --size_inference sizes replicas for
    double submitS = 0.0;
    int priority = 0; // higher goes first among waiting jobs
    Location at; // of the job's entry
    Location paramsAt; // of its params value
    Location numCsxAt;
};

struct JobsFile {
    std::string path; // as given
    ClusterConfig cluster;
    std::vector<JobSpec> jobs; // in file order
    std::vector<Diagnostic> warnings; // repeated keys (the last value is kept)
};

inline constexpr std::size_t kMaxJobsFileBytes = 16u << 20;
inline constexpr int kMaxJobs = 100000;

// Whether YAML text is a jobs file (a top-level `jobs:` key: a line that starts with it) rather
// than a params file. A look at the text, linear in its length, that builds no YAML tree: for
// telling the two apart before either reader runs (the GUI's open, a job's params).
bool isJobsFileText(std::string_view text);

// Reads a jobs file; `fileName` names it in errors and its directory resolves `params`.
Expected<JobsFile> parseJobsFile(std::string_view text, const std::string& fileName);
Expected<JobsFile> readJobsFile(const std::string& path);

// The text of a jobs file holding these jobs, to be saved at `targetPath` (File > Save jobs as in
// the GUI): each params path is written relative to the target's directory, so that read back
// from there it gives the same cluster and jobs.
std::string jobsFileText(const JobsFile& file, const std::string& targetPath);

} // namespace waferscope::core::cluster
