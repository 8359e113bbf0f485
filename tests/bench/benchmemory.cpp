#include "benchmemory.h"

#include "memoryprobe.h"

#include "core/cluster/jobsfile.h"
#include "core/compiler/compiler.h"
#include "core/engine/engine.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"
#include "core/report/rundirectory.h"
#include "core/report/runreport.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace {

namespace core = waferscope::core;
using Clock = std::chrono::steady_clock;

// The best of `rounds` calls, in ms; false from `body` fails the figure.
template <typename Body>
double bestMs(int rounds, bool& ok, const Body& body)
{
    double best = 1e300;
    for (int round = 0; round < rounds; ++round) {
        const auto start = Clock::now();
        ok = body() && ok;
        best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
    return best;
}

// GPT-2 small with a flow sequence of three-digit scalars under a key of its own, 4,000,000 bytes
// or so, as many nodes as a params file may hold (kMaxExpandedNodes, a million) but a few: its
// text is counted, then its tree built, walked for aliases, merge keys and repeated keys, and read.
std::string largestParamsFile()
{
    std::string text = "model:\n  name: gpt2\n  vocab_size: 50257\n  hidden_size: 768\n  num_hidden_layers: 12\n"
                       "  num_heads: 12\n  max_position_embeddings: 1024\n  filter_size: 3072\n"
                       "train_input:\n  batch_size: 64\n  max_sequence_length: 1024\neval_input:\n  batch_size: 64\n"
                       "data: [";
    for (int i = 0; i < 999'950; ++i)
        text += i > 0 ? ",123" : "123";
    return text + "]\n";
}

// Inference jobs of about 170 bytes each, as many as fit 16 MiB (at most kMaxJobs).
std::string largestJobsFile()
{
    std::string text = "cluster: {system: cs2, systems: 64}\njobs:\n";
    for (int i = 0; i < core::cluster::kMaxJobs; ++i) {
        const std::string job = "  - {name: serve-" + std::to_string(100000 + i)
            + ", params: ../llama3_8b.yaml, mode: inference, num_csx: 1, replicas: 4, users: 64, duration_s: 3600, "
              "tokens_per_s_per_user: 400, submit_s: "
            + std::to_string(i) + ", priority: 1}\n";
        if (text.size() + job.size() > core::cluster::kMaxJobsFileBytes)
            break;
        text += job;
    }
    return text;
}

// The report of GPT-3 XL trained on 16 CS-2, its layer rows repeated until the JSON has 64 MiB.
std::string largeReportJson()
{
    const std::string path = WAFERSCOPE_SOURCE_DIR "/samples/gpt3_xl.yaml";
    const core::Expected<core::ModelGraph> graph = core::loadModel(path);
    const core::Expected<core::SystemSpec> cs2 = core::loadBuiltinPreset("cs2");
    if (!graph || !cs2)
        return {};
    core::CompileOptions options;
    options.numSystems = 16;
    const core::Expected<core::ExecutionPlan> plan = core::compile(*graph, *cs2, options);
    if (!plan)
        return {};
    const core::engine::RunOptions runOptions;
    const core::Expected<core::engine::RunResult> run = core::engine::run(*plan, *graph, *cs2, runOptions);
    if (!run)
        return {};
    const std::string bytes;
    core::report::RunReport report = core::report::buildReport(
        { path, bytes, *graph, *cs2, *plan, *run, options, runOptions, core::engine::builtinCalibration() });
    // The text grows linearly with the copies of the rows: two sizes give the copies 64 MiB takes.
    const std::vector<core::engine::LayerMetrics> layers = report.metrics.layers;
    const std::size_t once = core::report::reportToJson(report).size();
    report.metrics.layers.insert(report.metrics.layers.end(), layers.begin(), layers.end());
    const std::size_t perCopy = core::report::reportToJson(report).size() - once;
    const std::size_t target = std::size_t(64) << 20;
    for (std::size_t copies = 2; copies < (target - once) / perCopy + 2; ++copies)
        report.metrics.layers.insert(report.metrics.layers.end(), layers.begin(), layers.end());
    const std::string json = core::report::reportToJson(report);
    return json;
}

} // namespace

bool memoryFigures(nlohmann::ordered_json& figures, bool quick, int rounds)
{
    struct Kind {
        const char* key;
        const char* probe;
        long baseline;
        long size;
        long quickSize;
    };
    const Kind kinds[] = { { "memory_estimate_ratio_json_report", "json", 1, 40, 10 },
        { "memory_estimate_ratio_yaml_params", "yaml", 1, 400, 100 },
        { "memory_estimate_ratio_moe_graph", "moe", 2, 128, 32 },
        { "memory_estimate_ratio_timeline", "timeline", 1, 40, 10 },
        { "memory_estimate_ratio_fabric", "kernel", 8, 512, 128 },
        { "memory_estimate_ratio_fabric_traffic", "traffic", 8, 1024, 256 } };
    for (const Kind& kind : kinds) {
        const std::vector<waferscope::test::EstimateRatio> ratios = waferscope::test::memoryEstimateRatios(
            WAFERSCOPE_MEMORYPROBE_PATH, kind.probe, kind.baseline, { quick ? kind.quickSize : kind.size });
        if (ratios.size() != 1 || !ratios.front().error.empty())
            return false;
        figures[kind.key] = ratios.front().ratio;
    }

    bool ok = true;
    const std::string params = largestParamsFile();
    figures["reader_ms_params_4mib"]
        = bestMs(quick ? 1 : rounds, ok, [&] { return core::readParamsText(params, "params.yaml").hasValue(); });
    figures["reader_params_4mib_bytes"] = params.size();

    const std::string jobs = largestJobsFile();
    figures["reader_ms_jobs_16mib"] = bestMs(quick ? 1 : rounds, ok, [&] {
        return core::cluster::parseJobsFile(jobs, WAFERSCOPE_SOURCE_DIR "/samples/cluster/jobs.yaml").hasValue();
    });
    figures["reader_jobs_16mib_bytes"] = jobs.size();

    const std::string report = largeReportJson();
    const std::filesystem::path file
        = std::filesystem::temp_directory_path() / ("waferscope-bench-report-" + std::to_string(::getpid()) + ".json");
    std::ofstream(file, std::ios::binary) << report;
    figures["reader_ms_report_64mib"] = bestMs(quick ? 1 : rounds, ok,
        [&] { return !report.empty() && core::report::readReportFile(file.string()).hasValue(); });
    figures["reader_report_64mib_bytes"] = report.size();
    std::filesystem::remove(file);
    return ok;
}
