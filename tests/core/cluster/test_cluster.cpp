// The appliance scheduler against hand-worked schedules, the jobs file reader's located errors,
// and whole jobs files timed by the engine.
#include "corefixtures.h"
#include "testing.h"

#include "core/cluster/cluster.h"
#include "core/cluster/clusterreport.h"
#include "core/cluster/jobsfile.h"
#include "core/cluster/scheduler.h"
#include "core/compiler/compiler.h"
#include "core/engine/engine.h"
#include "core/model/modelloader.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

using namespace waferscope::core;
using namespace waferscope::core::cluster;
using namespace waferscope::test;
namespace fs = std::filesystem;

namespace {

struct Expect {
    double start;
    double end;
};

void checkPlaced(const std::vector<std::optional<Placement>>& placed, const std::vector<Expect>& expected)
{
    WS_REQUIRE(placed.size() == expected.size());
    for (std::size_t j = 0; j < expected.size(); ++j) {
        WS_REQUIRE(placed[j].has_value());
        WS_CHECK_EQ(placed[j]->startS, expected[j].start);
        WS_CHECK_EQ(placed[j]->endS, expected[j].end);
    }
}

// No system is held by two jobs at once, and each job holds as many as it asked for.
void checkNoOverlap(const std::vector<QueuedJob>& jobs, const std::vector<std::optional<Placement>>& placed)
{
    std::map<int, std::vector<std::pair<double, double>>> held;
    for (std::size_t j = 0; j < jobs.size(); ++j) {
        if (!placed[j])
            continue;
        WS_CHECK_EQ(int(placed[j]->systems.size()), jobs[j].systems);
        for (int s : placed[j]->systems)
            held[s].push_back({ placed[j]->startS, placed[j]->endS });
    }
    for (auto& [system, intervals] : held) {
        std::sort(intervals.begin(), intervals.end());
        for (std::size_t i = 1; i < intervals.size(); ++i)
            WS_CHECK(intervals[i].first >= intervals[i - 1].second);
    }
}

// Writes a jobs file into a fresh directory; `{samples}` stands for the samples directory.
std::string jobsFile(const std::string& name, std::string text)
{
    const std::string samples = sample("");
    for (std::size_t at = text.find("{samples}"); at != std::string::npos; at = text.find("{samples}"))
        text.replace(at, 9, samples);
    const fs::path dir = freshDirectory("cluster-" + name);
    fs::create_directories(dir);
    const fs::path path = dir / "jobs.yaml";
    std::ofstream(path) << text;
    return path.string();
}

Diagnostic parseError(const std::string& text)
{
    const Expected<JobsFile> file = parseJobsFile(text, "jobs.yaml");
    WS_REQUIRE(!file.hasValue());
    return file.error();
}

} // namespace

// Eight systems and five jobs, worked by hand (times in seconds):
//   A: submit 0, 6 systems, 10 s   B: submit 1, 4 systems, 5 s   C: submit 2, 2 systems, 3 s
//   D: submit 3, 2 systems, 20 s   E: submit 4, 4 systems, 2 s
// FIFO: A runs 0-10; B waits for it and C, D wait behind B; at 10 B, C and D start (8 systems) and
// E waits for B: 15-17. Backfill: B's reservation is 10 (when A ends), with 8 - 4 = 4 systems
// spare then. C fits the 2 free systems and ends at 5, before 10: it starts at 2. At 5 D fits the
// 2 freed and ends at 25, after 10, but takes 2 of the 4 spare: it starts at 5. B still starts at
// 10, E at 15.
WS_TEST(fifoAndBackfillMatchTheHandWorkedSchedule)
{
    const std::vector<QueuedJob> jobs { { 0, 6, 0, 10, 0 }, { 1, 4, 0, 5, 0 }, { 2, 2, 0, 3, 0 }, { 3, 2, 0, 20, 0 },
        { 4, 4, 0, 2, 0 } };
    const auto fifo = scheduleJobs(jobs, 8, 0.0, Policy::Fifo);
    checkPlaced(fifo, { { 0, 10 }, { 10, 15 }, { 10, 13 }, { 10, 30 }, { 15, 17 } });
    checkNoOverlap(jobs, fifo);
    const auto backfill = scheduleJobs(jobs, 8, 0.0, Policy::Backfill);
    checkPlaced(backfill, { { 0, 10 }, { 10, 15 }, { 2, 5 }, { 5, 25 }, { 15, 17 } });
    checkNoOverlap(jobs, backfill);
    // The head of the queue (B) starts when it would have under FIFO.
    WS_CHECK_EQ(backfill[1]->startS, fifo[1]->startS);
    // Lowest free systems first: A takes 0-5, C takes 6-7.
    WS_CHECK(backfill[0]->systems == std::vector<int>({ 0, 1, 2, 3, 4, 5 }));
    WS_CHECK(backfill[2]->systems == std::vector<int>({ 6, 7 }));
}

// Four systems. X (3 systems) runs 0-10; Y needs all 4 and reserves 10. Z needs 1 system, which
// is free, but ends at 22, after 10, and nothing is spare at 10: starting it would delay Y, so it
// waits until Y ends (15). W needs 1 and ends at 7: it is backfilled at once.
WS_TEST(backfillNeverDelaysTheHeadOfTheQueue)
{
    const std::vector<QueuedJob> jobs { { 0, 3, 0, 10, 0 }, { 1, 4, 0, 5, 0 }, { 2, 1, 0, 20, 0 }, { 2, 1, 0, 5, 0 } };
    const auto placed = scheduleJobs(jobs, 4, 0.0, Policy::Backfill);
    checkPlaced(placed, { { 0, 10 }, { 10, 15 }, { 15, 35 }, { 2, 7 } });
    checkNoOverlap(jobs, placed);
}

WS_TEST(memoryxAndPriorityDecideWhoWaits)
{
    // MemoryX of 100: two jobs of 60 cannot run together though systems are free.
    const std::vector<QueuedJob> memory { { 0, 1, 60, 10, 0 }, { 0, 1, 60, 5, 0 }, { 0, 1, 30, 4, 0 } };
    checkPlaced(scheduleJobs(memory, 4, 100.0, Policy::Fifo), { { 0, 10 }, { 10, 15 }, { 10, 14 } });
    // Backfill starts the third (30 of the 40 left) at once: it ends at 4, before the second's 10.
    checkPlaced(scheduleJobs(memory, 4, 100.0, Policy::Backfill), { { 0, 10 }, { 10, 15 }, { 0, 4 } });
    // Waiting jobs go by priority: the later, higher-priority job passes the earlier one.
    const std::vector<QueuedJob> ranked { { 0, 2, 0, 10, 0 }, { 1, 2, 0, 5, 0 }, { 2, 2, 0, 5, 3 } };
    checkPlaced(scheduleJobs(ranked, 2, 0.0, Policy::Fifo), { { 0, 10 }, { 15, 20 }, { 10, 15 } });
}

// Many random jobs: no system is ever double-booked, every job that fits runs, and backfill never
// starts the head of the queue later than... itself: each job starts no earlier than it is
// submitted, and a job only waits while it does not fit.
WS_TEST(randomSchedulesHoldTheirInvariants)
{
    std::mt19937 random(7);
    std::vector<QueuedJob> jobs;
    for (int j = 0; j < 300; ++j)
        jobs.push_back({ double(random() % 1000), int(1 + random() % 16), double(random() % 50),
            double(1 + random() % 200), int(random() % 3) });
    for (const Policy policy : { Policy::Fifo, Policy::Backfill }) {
        const auto placed = scheduleJobs(jobs, 16, 100.0, policy);
        checkNoOverlap(jobs, placed);
        for (std::size_t j = 0; j < jobs.size(); ++j) {
            WS_REQUIRE(placed[j].has_value());
            WS_CHECK(placed[j]->startS >= jobs[j].submitS);
            WS_CHECK_NEAR(placed[j]->endS - placed[j]->startS, jobs[j].durationS, 1e-9);
        }
    }
    // A job larger than the cluster is never placed.
    const auto refused = scheduleJobs({ { 0, 17, 0, 1, 0 } }, 16, 0.0, Policy::Fifo);
    WS_CHECK(!refused[0].has_value());
}

WS_TEST(badJobsFilesAreLocated)
{
    const std::string head = "cluster: {system: cs2, systems: 4}\njobs:\n";
    const auto check = [&](const std::string& text, int line, int column, const std::string& fragment) {
        const Diagnostic error = parseError(text);
        WS_CHECK_EQ(error.file, std::string("jobs.yaml"));
        WS_CHECK_EQ(error.line, line);
        WS_CHECK_EQ(error.column, column);
        WS_CHECK_CONTAINS(error.message, fragment);
    };
    check("jobs:\n  - {name: a, params: x.yaml, max_steps: 1}\n", 1, 1, "missing section 'cluster'");
    check("cluster: {system: cs9, systems: 4}\njobs: [{name: a, params: x.yaml, max_steps: 1}]\n", 1, 19,
        "unknown system 'cs9'");
    check(head + "  - {name: a, params: x.yaml, max_steps: 1, num_cs: 2}\n", 3, 45, "unknown key 'jobs[0].num_cs'");
    check(head + "  - {name: 'a b', params: x.yaml, max_steps: 1}\n", 3, 12, "may only hold letters");
    check(head + "  - {name: a, params: x.yaml, max_steps: 1}\n  - {name: a, params: y.yaml, max_steps: 2}\n", 4, 12,
        "a second job named 'a'");
    check(head + "  - {name: a, params: x.yaml, max_steps: 1, tokens: 1e9}\n", 3, 53, "both max_steps and tokens");
    check(head + "  - {name: a, params: x.yaml}\n", 3, 5, "needs max_steps or a token budget");
    check(head + "  - {name: a, params: x.yaml, mode: inference, max_steps: 3, duration_s: 1}\n", 3, 59,
        "is for training");
    check(head + "  - {name: a, params: x.yaml, mode: inference}\n", 3, 5, "missing 'jobs[0].duration_s'");
    check(head + "  - {name: a, params: x.yaml, users: 3, max_steps: 1}\n", 3, 38, "is for inference jobs");
    check(head + "  - {name: a, params: x.yaml, max_steps: 0}\n", 3, 42, "expected an integer in [1,");
    check(head + "  - {name: a, params: x.yaml, mode: serve, max_steps: 1}\n", 3, 37, "serve");
    check("cluster: {system: cs2, systems: 4}\njobs: []\n", 2, 7, "'jobs' is empty");
    check("cluster: {system: cs2, systems: 4}\njobs: {a: 1}\n", 2, 7, "'jobs' must be a list");
    check("cluster: {system: cs2, systems: 4}\njobs:\n  - 3\n", 3, 5, "must be a mapping");
    check("cluster: {system: cs2, systems: 4}\njobs: [{name: a, params: x.yaml, max_steps: 1}]\nextra: 1\n", 3, 1,
        "unknown key 'extra'");
    // A params file given as a jobs file, and a jobs file given as a params file, say what they are.
    const Diagnostic params = parseError("model:\n  hidden_size: 8\ntrain_input:\n  batch_size: 1\n");
    WS_CHECK_CONTAINS(params.message, "this is a Model Zoo params file, not a WaferScope jobs file");
    const Expected<ModelConfig> asParams
        = readParamsText(head + "  - {name: a, params: x.yaml, max_steps: 1}\n", "jobs.yaml");
    WS_REQUIRE(!asParams.hasValue());
    WS_CHECK_EQ(asParams.error().line, 2);
    WS_CHECK_CONTAINS(asParams.error().message, "this is a WaferScope jobs file");
    WS_CHECK(isJobsFileText(head + "  - {name: a}\n"));
    WS_CHECK(!isJobsFileText("model: {hidden_size: 8}\n"));
}

WS_TEST(aJobsFileReadsItsKeysAndResolvesParamsBesideIt)
{
    const Expected<JobsFile> file
        = parseJobsFile("cluster:\n  system: cs3\n  systems: 16\n  memoryx_bytes: 5e12\njobs:\n"
                        "  - {name: t.1, params: ../m.yaml, num_csx: 4, tokens: 2e9, submit_s: 30, priority: 2}\n"
                        "  - {name: s-2, params: /abs/m.yaml, mode: inference, replicas: 3, users: 12, duration_s: 60,"
                        " tokens_per_s_per_user: 50}\n",
            "dir/sub/jobs.yaml");
    WS_REQUIRE(file.hasValue());
    WS_CHECK_EQ(file->cluster.system, std::string("cs3"));
    WS_CHECK_EQ(file->cluster.systems, 16);
    WS_CHECK_EQ(file->cluster.memoryxBytes.value_or(0.0), 5e12);
    WS_REQUIRE(file->jobs.size() == 2);
    const JobSpec& train = file->jobs[0];
    WS_CHECK_EQ(train.paramsPath, std::string("dir/m.yaml"));
    WS_CHECK(train.mode == RunMode::Train && train.numCsx == 4 && train.tokens == 2e9 && !train.maxSteps);
    WS_CHECK(train.submitS == 30.0 && train.priority == 2);
    const JobSpec& serve = file->jobs[1];
    WS_CHECK_EQ(serve.paramsPath, std::string("/abs/m.yaml"));
    WS_CHECK(serve.mode == RunMode::Inference && serve.replicas == 3 && serve.users == 12 && serve.durationS == 60.0);
    WS_CHECK_EQ(serve.tokensPerSPerUser.value_or(0.0), 50.0);
    // Saved elsewhere and read back: the same jobs, params still found.
    const std::string saved = jobsFileText(*file, "dir/other/place/saved.yaml");
    const Expected<JobsFile> again = parseJobsFile(saved, "dir/other/place/saved.yaml");
    WS_REQUIRE(again.hasValue());
    WS_CHECK_EQ(
        fs::absolute(again->jobs[0].paramsPath).lexically_normal(), fs::absolute("dir/m.yaml").lexically_normal());
    WS_CHECK_EQ(again->jobs[1].paramsPath, std::string("/abs/m.yaml"));
    WS_CHECK_EQ(again->jobs[0].tokens.value_or(0.0), 2e9);
    WS_CHECK_EQ(again->jobs[1].tokensPerSPerUser.value_or(0.0), 50.0);
    WS_CHECK_EQ(again->cluster.memoryxBytes.value_or(0.0), 5e12);
    WS_CHECK_EQ(jobsFileText(*again, "dir/other/place/saved.yaml"), saved);
}

// Condor Galaxy's sample: every job runs; a training job lasts its first step plus its steady
// steps, as the engine times them for that allocation; utilization is the busy system-time over
// the cluster's.
WS_TEST(theCondorGalaxySampleRunsEveryJobForItsEngineTime)
{
    const Expected<JobsFile> file = readJobsFile(sample("cluster/condor_galaxy.yaml"));
    WS_REQUIRE(file.hasValue());
    TimingCache cache;
    const Expected<ClusterResult> result = scheduleCluster(*file, {}, cache);
    WS_REQUIRE(result.hasValue());
    WS_CHECK_EQ(result->systems, 64);
    WS_CHECK_EQ(result->memoryxBytes, 82e12);
    double firstSubmit = 1e300, lastEnd = 0.0, busy = 0.0;
    for (const JobResult& job : result->jobs) {
        WS_REQUIRE(job.startS.has_value());
        WS_CHECK(job.reason.empty());
        firstSubmit = std::min(firstSubmit, job.submitS);
        lastEnd = std::max(lastEnd, *job.endS);
        busy += double(job.numCsx * job.replicas) * (*job.endS - *job.startS);
        WS_CHECK_NEAR(*job.waitS, *job.startS - job.submitS, 1e-9);
    }
    WS_CHECK_NEAR(*result->makespanS, lastEnd - firstSubmit, 1e-9);
    WS_CHECK_NEAR(*result->utilization, busy / (64.0 * (lastEnd - firstSubmit)), 1e-12);
    // Seven jobs on seven (model, mode, allocation) pairs: seven engine runs; again, none.
    WS_CHECK_EQ(cache.engineRuns(), std::size_t(7));
    WS_REQUIRE(scheduleCluster(*file, {}, cache).hasValue());
    WS_CHECK_EQ(cache.engineRuns(), std::size_t(7));

    // Llama 2 70B's token budget on 32 CS-2: ceil(tokens / tokens per step) steps, the first with
    // the stream's fill.
    const JobResult& llama = result->jobs[1];
    const ModelGraph graph = load(sample("llama2_70b.yaml"));
    const SystemSpec cs2 = preset("cs2");
    CompileOptions options;
    options.numSystems = 32;
    const ExecutionPlan plan = engine::compileFor(graph, cs2, options, engine::builtinCalibration()).value();
    const engine::RunResult run = runOrThrow(plan, graph, cs2, RunMode::Train, 0, 2);
    const auto steps = std::int64_t(std::ceil(5.0e9 / run.metrics.tokensPerStep));
    WS_CHECK_EQ(llama.steps, steps);
    WS_CHECK_NEAR(*llama.durationS, run.metrics.stepTimesS[0] + double(steps - 1) * run.metrics.stepTimesS[1], 1e-6);
    WS_CHECK_EQ(llama.memoryxBytes, memoryxStateBytes(graph, cs2.memoryx));
    // The report: a Gantt chart and a trace event per held system.
    const std::string html = clusterHtml(*result, "condor_galaxy.yaml");
    WS_CHECK_CONTAINS(html, "Systems over time");
    const nlohmann::json trace = nlohmann::json::parse(clusterTrace(*result));
    std::size_t spans = 0;
    for (const auto& event : trace["traceEvents"])
        spans += event["ph"] == "X" ? 1 : 0;
    std::size_t held = 0;
    for (const JobResult& job : result->jobs)
        held += job.systems.size();
    WS_CHECK_EQ(spans, held);
}

WS_TEST(jobsThatCanNeverRunSayWhy)
{
    const std::string path = jobsFile("never",
        "cluster: {system: cs2, systems: 8, memoryx_bytes: 1e12}\njobs:\n"
        "  - {name: too-wide, params: '{samples}gpt3_xl.yaml', num_csx: 16, max_steps: 10}\n"
        "  - {name: too-heavy, params: '{samples}llama2_70b.yaml', num_csx: 4, max_steps: 10}\n"
        "  - {name: fits, params: '{samples}gpt3_xl.yaml', num_csx: 2, max_steps: 10}\n"
        "  - {name: no-room, params: '{samples}llama3p1_405b.yaml', mode: inference, num_csx: 1, duration_s: 60}\n");
    const Expected<JobsFile> file = readJobsFile(path);
    WS_REQUIRE(file.hasValue());
    TimingCache cache;
    const Expected<ClusterResult> result = scheduleCluster(*file, {}, cache);
    WS_REQUIRE(result.hasValue());
    WS_CHECK_CONTAINS(result->jobs[0].reason, "needs 16 systems (1 x 16); the cluster has 8");
    WS_CHECK_CONTAINS(result->jobs[1].reason, "of MemoryX; the cluster has 1.00 TB");
    WS_CHECK(result->jobs[2].reason.empty() && result->jobs[2].startS == 0.0);
    WS_CHECK_CONTAINS(result->jobs[3].reason, "wafers for its weights; num_csx is 1");
    for (const std::size_t j : { 0, 1, 3 })
        WS_CHECK(!result->jobs[j].startS && !result->jobs[j].endS && !result->jobs[j].durationS);
    // The makespan is the one job that runs.
    WS_CHECK_NEAR(*result->makespanS, *result->jobs[2].endS, 1e-12);
    // A params file that is not there is located where the jobs file names it.
    const std::string missing = jobsFile(
        "missing", "cluster: {system: cs2, systems: 8}\njobs:\n  - {name: a, params: nowhere.yaml, max_steps: 1}\n");
    const Expected<ClusterResult> failed = scheduleCluster(readJobsFile(missing).value(), {}, cache);
    WS_REQUIRE(!failed.hasValue());
    WS_CHECK_EQ(failed.error().file, missing);
    WS_CHECK_EQ(failed.error().line, 3);
    WS_CHECK_EQ(failed.error().column, 23);
    WS_CHECK_CONTAINS(failed.error().message, "job 'a': params 'nowhere.yaml'");
}

WS_TEST(inferenceReplicasAreSizedForTheirUsers)
{
    const Expected<JobsFile> file = readJobsFile(sample("cluster/inference.yaml"));
    WS_REQUIRE(file.hasValue());
    TimingCache cache;
    ClusterOptions options;
    options.sizeInference = true;
    const Expected<ClusterResult> result = scheduleCluster(*file, options, cache);
    WS_REQUIRE(result.hasValue());
    const JobResult& chat = result->jobs[1]; // 500 users at 400 tokens/s each, 4 CS-3 a replica
    WS_REQUIRE(chat.replicasNeeded.has_value());
    // Independently: per-user rates at ceil(500 / R) users for R and R - 1 replicas.
    const ModelGraph graph = load(sample("llama3p1_70b.yaml"));
    const SystemSpec cs3 = preset("cs3");
    const auto perUser = [&](int replicas) {
        const int users = (500 + replicas - 1) / replicas;
        const ExecutionPlan plan = engine::compileFor(graph, cs3, { .mode = RunMode::Inference },
            engine::builtinCalibration(), { .mode = RunMode::Inference, .users = users })
                                       .value();
        engine::RunOptions run;
        run.mode = RunMode::Inference;
        run.users = users;
        return engine::run(plan, graph, cs3, run).value().metrics.tokensPerS;
    };
    const int needed = *chat.replicasNeeded;
    WS_CHECK(perUser(needed) >= 400.0);
    if (needed > 1)
        WS_CHECK(perUser(needed - 1) < 400.0);
    WS_CHECK_EQ(chat.replicas, needed);
    WS_CHECK_EQ(chat.usersPerReplica.value_or(0), (500 + needed - 1) / needed);
    WS_CHECK_NEAR(chat.tokensPerS, perUser(needed), 1e-9 * chat.tokensPerS);
    // An inference job lasts its service time.
    WS_CHECK_EQ(*chat.durationS, 3600.0);
}

WS_TEST(whatIfChangesOnlyTheNamedJobs)
{
    const Expected<JobsFile> file = readJobsFile(sample("cluster/condor_galaxy.yaml"));
    WS_REQUIRE(file.hasValue());
    const Expected<JobsFile> changed = withNumCsx(*file, { { "llama2-70b", 16 } });
    WS_REQUIRE(changed.hasValue());
    WS_CHECK_EQ(changed->jobs[1].numCsx, 16);
    WS_CHECK_EQ(changed->jobs[0].numCsx, file->jobs[0].numCsx);
    const Expected<JobsFile> unknown = withNumCsx(*file, { { "nope", 2 } });
    WS_REQUIRE(!unknown.hasValue());
    WS_CHECK_CONTAINS(unknown.error().message, "no job named 'nope'");
    TimingCache cache;
    const ClusterResult before = scheduleCluster(*file, {}, cache).value();
    const ClusterResult after = scheduleCluster(*changed, {}, cache).value();
    // Half the systems: the 70B job's steady steps take longer.
    WS_CHECK(after.jobs[1].stepTimeS > before.jobs[1].stepTimeS);
    const nlohmann::json json = nlohmann::json::parse(clusterToJson(before, &after, { { "llama2-70b", 16 } }));
    WS_CHECK_EQ(json["what_if"]["num_csx"]["llama2-70b"].get<int>(), 16);
    WS_CHECK_EQ(json["what_if"]["makespan_s"].get<double>(), *after.makespanS);
    WS_CHECK_EQ(json["what_if"]["jobs"][1]["end_s"].get<double>(), *after.jobs[1].endS);
    for (const char* key : { "systems", "policy", "notes", "makespan_s", "utilization", "jobs" })
        WS_CHECK(json.contains(key));
    for (const char* key : { "name", "mode", "num_csx", "replicas", "users", "submit_s", "start_s", "end_s", "wait_s",
             "duration_s", "step_time_s", "steps", "tokens_per_s", "reason" })
        WS_CHECK(json["jobs"][0].contains(key));
}

// tests/data/badjobs: each file refused where expected.tsv says, and every file listed.
WS_TEST(theBadJobsCorpusIsRefusedWhereExpected)
{
    const fs::path dir = fs::path(dataDir()) / "badjobs";
    std::ifstream tsv(dir / "expected.tsv");
    std::string line;
    WS_REQUIRE(std::getline(tsv, line) && line == "file\tline\tcolumn\tkeyword");
    std::set<std::string> listed;
    while (std::getline(tsv, line)) {
        if (line.empty())
            continue;
        std::vector<std::string> fields;
        for (std::size_t start = 0, tab = 0; tab != std::string::npos; start = tab + 1) {
            tab = line.find('\t', start);
            fields.push_back(line.substr(start, tab == std::string::npos ? tab : tab - start));
        }
        WS_REQUIRE(fields.size() == 4);
        listed.insert(fields[0]);
        const std::string path = (dir / fields[0]).string();
        const Expected<JobsFile> file = readJobsFile(path);
        WS_REQUIRE(!file.hasValue());
        WS_CHECK_EQ(file.error().file, path);
        WS_CHECK_EQ(file.error().line, std::stoi(fields[1]));
        WS_CHECK_EQ(file.error().column, std::stoi(fields[2]));
        std::string message = file.error().message;
        std::transform(
            message.begin(), message.end(), message.begin(), [](unsigned char c) { return char(std::tolower(c)); });
        WS_CHECK_CONTAINS(message, fields[3]);
    }
    WS_CHECK(listed.size() >= 20);
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (name != "expected.tsv" && name != "README.md" && !listed.count(name))
            reportFailure(__FILE__, __LINE__, name + " has no row in expected.tsv");
    }
}

// Names that YAML would read as null, a list or a number, and a params path with control
// characters, survive a save; a schedule whose jobs all arrive late starts its makespan there.
WS_TEST(savedJobsKeepOddNamesAndTheMakespanStartsAtTheFirstSubmission)
{
    const Expected<JobsFile> file = parseJobsFile("cluster: {system: cs2, systems: 4}\njobs:\n"
                                                  "  - {name: 'null', params: \"a\\tb\\nc.yaml\", max_steps: 1}\n"
                                                  "  - {name: '-', params: x.yaml, max_steps: 1}\n"
                                                  "  - {name: '1e3', params: x.yaml, max_steps: 1}\n",
        "jobs.yaml");
    WS_REQUIRE(file.hasValue());
    WS_CHECK_EQ(file->jobs[0].params, std::string("a\tb\nc.yaml"));
    const std::string saved = jobsFileText(*file, "jobs.yaml");
    const Expected<JobsFile> again = parseJobsFile(saved, "jobs.yaml");
    WS_REQUIRE(again.hasValue());
    for (std::size_t j = 0; j < 3; ++j) {
        WS_CHECK_EQ(again->jobs[j].name, file->jobs[j].name);
        WS_CHECK_EQ(again->jobs[j].params, file->jobs[j].params);
    }

    const std::string late = jobsFile("late",
        "cluster: {system: cs2, systems: 4}\njobs:\n"
        "  - {name: a, params: '{samples}gpt3_xl.yaml', num_csx: 2, max_steps: 10, submit_s: 3600}\n"
        "  - {name: b, params: '{samples}gpt3_xl.yaml', num_csx: 4, max_steps: 10, submit_s: 3700}\n");
    TimingCache cache;
    const ClusterResult result = scheduleCluster(readJobsFile(late).value(), {}, cache).value();
    WS_CHECK_EQ(result.firstSubmitS.value_or(0.0), 3600.0);
    WS_CHECK_NEAR(*result.makespanS, *result.jobs[1].endS - 3600.0, 1e-9);
    // The Gantt chart draws from the first submission: every bar inside the plot (x 70 to 710).
    const std::string html = clusterHtml(result, late);
    for (std::size_t at = html.find("<rect fill=\"#"); at != std::string::npos;
         at = html.find("<rect fill=\"#", at + 1)) {
        const std::size_t x = html.find(" x=\"", at) + 4;
        const std::size_t w = html.find(" width=\"", at) + 8;
        const double left = std::stod(html.substr(x));
        const double width = std::stod(html.substr(w));
        WS_CHECK(left >= 69.99 && left + width <= 710.01);
    }
}

namespace {

// 300 inference jobs of six kinds (model, num_csx, users, tokens/s per user), in turn, on 64 CS-3.
struct InferenceKind {
    const char* params;
    int numCsx;
    int users;
    double target;
};
// Llama 3 8B gives a user 1,800 tokens/s up to about 150 users a replica, Llama 3.1 70B 472 up to
// about 400, both less beyond: the kinds need one replica, a dozen, or more than the rate (8B at
// 2,000) or the cluster (70B, 20,000 users at 300: 32 replicas of 4 CS-3) allows.
constexpr InferenceKind kInferenceKinds[] = { { "llama3_8b.yaml", 1, 64, 400 }, { "llama3_8b.yaml", 1, 3000, 1000 },
    { "llama3_8b.yaml", 1, 1000, 2000 }, { "llama3p1_70b.yaml", 4, 5000, 400 }, { "llama3p1_70b.yaml", 4, 120, 400 },
    { "llama3p1_70b.yaml", 4, 20000, 300 } };

std::string inferenceJobs(int count)
{
    std::string text = "cluster: {system: cs3, systems: 64}\njobs:\n";
    for (int j = 0; j < count; ++j) {
        const InferenceKind& kind = kInferenceKinds[std::size_t(j) % std::size(kInferenceKinds)];
        text += "  - {name: job" + std::to_string(j) + ", params: '{samples}" + kind.params
            + "', mode: inference, num_csx: " + std::to_string(kind.numCsx) + ", users: " + std::to_string(kind.users)
            + ", tokens_per_s_per_user: " + std::to_string(int(kind.target))
            + ", duration_s: 600, submit_s: " + std::to_string(60 * j) + "}\n";
    }
    return text;
}

// The reference: the kind's plan compiled here, and replica counts tried one by one from 1 to the
// most the cluster holds (64 CS-3 / num_csx, and a user each at most); the first whose per-user
// rate at ceil(users / replicas) meets the target, and that rate.
struct Sized {
    std::optional<int> replicas;
    double tokensPerS = 0.0;
};

Sized linearSearch(const InferenceKind& kind)
{
    const ModelGraph graph = load(sample(kind.params));
    const SystemSpec cs3 = preset("cs3");
    CompileOptions options;
    options.mode = RunMode::Inference;
    options.numSystems = kind.numCsx;
    const ExecutionPlan plan = engine::compileFor(graph, cs3, options, engine::builtinCalibration()).value();
    const int most = std::min(kind.users, 64 / kind.numCsx);
    for (int replicas = 1; replicas <= most; ++replicas) {
        engine::RunOptions run;
        run.mode = RunMode::Inference;
        run.maxSteps = 2;
        run.users = (kind.users + replicas - 1) / replicas;
        const Expected<engine::RunResult> ran = engine::run(plan, graph, cs3, run);
        if (ran && ran->metrics.tokensPerS >= kind.target)
            return { replicas, ran->metrics.tokensPerS };
    }
    return {};
}

} // namespace

// --size_inference over 300 jobs of six kinds: two allocations (Llama 3 8B on 1 CS-3, Llama 3.1
// 70B on 4), so two compiles; five searches (model, allocation, target), each a binary search over
// the users per replica its jobs could use, from the fewest (users / most replicas, rounded up)
// to the most users of its jobs: at most floor(log2(most - fewest + 1)) + 1 runs each:
//   8B at 400:   users 64, most replicas 64: 1 to 64                          -> 7
//   8B at 1000:  users 3000, most replicas 64: 47 to 3000                     -> 12
//   8B at 2000:  users 1000, most replicas 64: 16 to 1000                     -> 10
//   70B at 400:  users 5000 and 120, most replicas 16 and 16: 8 to 5000       -> 13
//   70B at 300:  users 20000, most replicas 16: 1250 to 20000                 -> 15
// then at most one run per kind at its own users per replica (6): at most 63 engine runs, the
// same for 30 jobs as for 300. Each kind's replicas are those of a linear search.
WS_TEST(sizingInferenceCompilesEachAllocationOnceAndItsRunsDoNotGrowWithTheJobs)
{
    const Expected<JobsFile> many = readJobsFile(jobsFile("size-300", inferenceJobs(300)));
    const Expected<JobsFile> few = readJobsFile(jobsFile("size-30", inferenceJobs(30)));
    WS_REQUIRE(many.hasValue() && few.hasValue());
    ClusterOptions options;
    options.sizeInference = true;
    TimingCache manyCache;
    const Expected<ClusterResult> result = scheduleCluster(*many, options, manyCache);
    WS_REQUIRE(result.hasValue());
    TimingCache fewCache;
    const Expected<ClusterResult> fewResult = scheduleCluster(*few, options, fewCache);
    WS_REQUIRE(fewResult.hasValue());
    WS_CHECK_EQ(result->compiles, std::size_t(2));
    WS_CHECK_EQ(manyCache.compiles(), std::size_t(2));
    WS_CHECK_EQ(fewResult->compiles, std::size_t(2));
    WS_CHECK(result->engineRuns <= std::size_t(63));
    WS_CHECK(result->engineRuns >= std::size_t(5)); // a search runs at least once
    WS_CHECK_EQ(result->engineRuns, manyCache.engineRuns());
    WS_CHECK_EQ(fewResult->engineRuns, result->engineRuns);
    // Scheduled again on the same cache: no work at all.
    const Expected<ClusterResult> again = scheduleCluster(*many, options, manyCache);
    WS_REQUIRE(again.hasValue());
    WS_CHECK_EQ(again->compiles, std::size_t(0));
    WS_CHECK_EQ(again->engineRuns, std::size_t(0));

    int several = 0; // kinds the reference gives more than one replica
    int none = 0; // kinds it cannot serve
    for (std::size_t k = 0; k < std::size(kInferenceKinds); ++k) {
        const InferenceKind& kind = kInferenceKinds[k];
        const Sized reference = linearSearch(kind);
        several += reference.replicas.value_or(0) > 1 ? 1 : 0;
        none += reference.replicas ? 0 : 1;
        for (std::size_t j = k; j < result->jobs.size(); j += 7 * std::size(kInferenceKinds)) {
            const JobResult& job = result->jobs[j];
            WS_REQUIRE(job.users == kind.users); // job j is of kind j mod 6
            WS_CHECK(job.replicasNeeded == reference.replicas);
            if (!reference.replicas) {
                WS_CHECK_CONTAINS(job.reason, "no replica count reaches");
                continue;
            }
            WS_CHECK_EQ(job.replicas, *reference.replicas);
            WS_CHECK_EQ(job.usersPerReplica.value_or(0), (kind.users + job.replicas - 1) / job.replicas);
            WS_CHECK_NEAR(job.tokensPerS, reference.tokensPerS, 1e-12);
            // A sized job holds its sized replicas.
            WS_CHECK_EQ(int(job.systems.size()), job.replicas * kind.numCsx);
        }
    }
    WS_CHECK_EQ(several, 2);
    WS_CHECK_EQ(none, 2);
}

// Cancelled from the progress callback once five engine runs are done: the schedule stops with
// "cancelled" before a sixth, and a schedule on the same cache later does only the runs left.
WS_TEST(sizingInferenceStopsWhenCancelledAndKeepsWhatItRan)
{
    const Expected<JobsFile> file = readJobsFile(jobsFile("size-cancel", inferenceJobs(300)));
    WS_REQUIRE(file.hasValue());
    ClusterOptions options;
    options.sizeInference = true;
    TimingCache whole;
    const std::size_t allRuns = scheduleCluster(*file, options, whole).value().engineRuns;
    WS_REQUIRE(allRuns > 5);

    bool stop = false;
    std::string phases; // each phase once, in the order they came
    int lastTimed = -1;
    const auto heard = [&](const ClusterProgress& at) {
        if (!phases.ends_with(std::string(at.phase) + " "))
            phases += std::string(at.phase) + " ";
        if (std::string(at.phase) == "timing")
            lastTimed = at.done;
    };
    options.cancelled = [&stop] { return stop; };
    options.progress = [&](const ClusterProgress& at) {
        heard(at);
        stop = at.engineRuns >= 5;
    };
    TimingCache cache;
    const Expected<ClusterResult> cancelled = scheduleCluster(*file, options, cache);
    WS_REQUIRE(!cancelled.hasValue());
    WS_CHECK_EQ(cancelled.error().message, std::string("cancelled"));
    WS_CHECK(cancelled.error().kind == Diagnostic::Kind::Internal);
    // The first search (8B at 400 tokens/s, 7 runs) was under way: one compile, five runs.
    WS_CHECK_EQ(cache.compiles(), std::size_t(1));
    WS_CHECK_EQ(cache.engineRuns(), std::size_t(5));
    WS_CHECK_EQ(phases, std::string("sizing "));

    stop = false;
    phases.clear();
    options.progress = heard;
    const Expected<ClusterResult> resumed = scheduleCluster(*file, options, cache);
    WS_REQUIRE(resumed.hasValue());
    WS_CHECK_EQ(resumed->engineRuns, allRuns - 5);
    WS_CHECK_EQ(resumed->compiles, std::size_t(1)); // the 70B's
    WS_CHECK_EQ(phases, std::string("sizing timing scheduling "));
    WS_CHECK_EQ(lastTimed, 299);
}
