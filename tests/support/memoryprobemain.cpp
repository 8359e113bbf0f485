// waferscope-memoryprobe KIND SIZE: one allocation the memory budget estimates, done in a fresh
// process whose peak resident set wait4() reports, for tests/core/common/test_memoryestimates.cpp and
// waferscope-bench. No header: it is a main.
//
// A process's ru_maxrss starts at what its parent held when it forked (the parent's pages are
// its own until it execs, and Linux keeps that peak across exec), so the work is not done in the
// process the caller starts, which may come from a large one: that process forks a worker from
// itself, small, which execs this program again (`--work KIND SIZE`), waits for it with wait4()
// and prints its peak. The worker prints the core's estimate of what the work holds and the bytes
// of the input it made for it, then does the work. The caller reads two lines:
//
//   ESTIMATE_BYTES INPUT_BYTES
//   PEAK_BYTES
//
//   json N      a report-like JSON text of N MB through core::parseJsonDocument
//   yaml N      a params file holding a flow sequence of N thousand small scalars, read by
//               core::readParamsText
//   moe N       the graph of Mixtral 8x7B with N blocks of 1,024 experts (core::buildModelGraph)
//   timeline N  GPT-3 XL trained by weight streaming on CS-2 for --max_steps N, and the
//               FrameSource the GUI and a report make of it
//   kernel N    row_broadcast of 16 floats on an N x N region (core::fabric::runKernel)
//   traffic N   two cycles of uniform traffic on an N x N mesh (core::fabric::runTraffic)
//
// Exit status 0 when the work was done, 1 when it failed (the message on stderr), 2 on usage.
#include "core/common/jsondocument.h"
#include "core/common/jsonfootprint.h"
#include "core/compiler/compiler.h"
#include "core/engine/engine.h"
#include "core/engine/framesource.h"
#include "core/fabric/kernels.h"
#include "core/fabric/traffic.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"
#include "core/model/yamlfootprint.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace waferscope::core;

// What the parent compares the peak with: the estimate, and the input the estimate leaves out.
void report(double estimateBytes, double inputBytes)
{
    std::printf("%.0f %.0f\n", estimateBytes, inputBytes);
    std::fflush(stdout);
}

int failed(const std::string& message)
{
    std::cerr << "waferscope-memoryprobe: " << message << "\n";
    return 1;
}

// Layer rows as a report holds them, until the text has `megabytes` MB. The text is reserved
// whole, so that growing it leaves no freed copy behind in the peak.
int json(long megabytes)
{
    const auto target = std::size_t(megabytes) * 1000000;
    std::string text;
    text.reserve(target + 4096);
    text += "{\"layers\": [";
    for (long i = 0; text.size() < target; ++i)
        text += std::string(i > 0 ? ",\n" : "\n") + "  {\"name\": \"layers." + std::to_string(i % 1000)
            + ".attn.q\", \"kind\": \"linear\", \"region\": " + std::to_string(i) + ", \"params\": 16777216, "
            + "\"flops\": 1.25e12, \"time_s\": 0.00123, \"utilization\": 0.81, \"bound\": \"compute\"}";
    text += "\n]}\n";
    report(estimateJsonFootprint(text).bytes, double(text.capacity()));
    const Expected<JsonTree> tree = parseJsonDocument(text, "report.json", 64, "not valid JSON: ", "too deep");
    return tree ? 0 : failed(tree.error().message);
}

// A params file whose tree is as large as a params file's may be: a flow sequence of small
// scalars (a node for every two bytes of text).
int yaml(long thousands)
{
    std::string text;
    text.reserve(std::size_t(thousands) * 1000 * 2 + 4096);
    text += "model:\n  name: gpt2\n  vocab_size: 50257\n  hidden_size: 768\n  num_hidden_layers: 12\n"
            "  num_heads: 12\n  max_position_embeddings: 1024\n  filter_size: 3072\ndata: [";
    for (long i = 0; i < thousands * 1000; ++i)
        text += i > 0 ? ",1" : "1";
    text += "]\n";
    report(estimateYamlFootprint(text).bytes, double(text.capacity()));
    (void)readParamsText(text, "params.yaml"); // an unknown key or a valid config: the tree was read either way
    return 0;
}

int moe(long blocks)
{
    const std::string text = "model:\n  name: mixtral\n  vocab_size: 32000\n  hidden_size: 4096\n"
                             "  num_hidden_layers: "
        + std::to_string(blocks)
        + "\n  num_heads: 32\n  filter_size: 14336\n  max_position_embeddings: 4096\n  nonlinearity: swiglu\n"
          "  moe:\n    num_experts: 1024\n    top_k: 2\ntrain_input:\n  batch_size: 64\n"
          "  max_sequence_length: 4096\n";
    const Expected<ModelConfig> config = readParamsText(text, "moe.yaml");
    if (!config)
        return failed(config.error().message);
    report(estimateGraphFootprint(*config).bytes, 0.0);
    const ModelGraph graph = buildModelGraph(*config);
    return graph.ops.empty() ? failed("no ops") : 0;
}

int timeline(long steps)
{
    const Expected<ModelGraph> graph = loadModel(WAFERSCOPE_SOURCE_DIR "/samples/gpt3_xl.yaml");
    const Expected<SystemSpec> cs2 = loadBuiltinPreset("cs2");
    if (!graph || !cs2)
        return failed("gpt3_xl.yaml or cs2 did not load");
    CompileOptions options;
    options.execution = ExecutionChoice::WeightStreaming;
    const Expected<ExecutionPlan> plan = compile(*graph, *cs2, options);
    if (!plan)
        return failed(plan.error().message);
    engine::RunOptions run;
    run.maxSteps = int(steps);
    const Expected<engine::RunResult> result = engine::run(*plan, *graph, *cs2, run);
    if (!result)
        return failed(result.error().message);
    report(engine::timelineBudgetBytes(result->timeline.events.capacity()), 0.0);
    const engine::FrameSource frames(*plan, *graph, *cs2, *result);
    return frames.frameCount() > 0 ? 0 : failed("no frames");
}

int kernel(long side)
{
    fabric::KernelConfig config;
    config.kind = fabric::KernelKind::RowBroadcast;
    config.regionRows = int(side);
    config.regionCols = int(side);
    config.matrixCols = 16;
    report(fabric::estimateKernelFootprint(config).bytes(), 0.0);
    const Expected<fabric::KernelResult> result = fabric::runKernel(config);
    return result ? 0 : failed(result.error().message);
}

int traffic(long side)
{
    fabric::TrafficConfig config;
    config.width = int(side);
    config.height = int(side);
    config.cycles = 2;
    config.warmup = 1;
    config.rate = 0.001;
    report(fabric::estimateTrafficBytes(config), 0.0);
    const Expected<fabric::TrafficResult> result = fabric::runTraffic(config);
    return result ? 0 : failed(result.error().message);
}

// Runs the work in a worker started from this (small) process and prints the worker's peak.
int measure(const char* self, const char* kind, const char* size)
{
    const pid_t worker = ::fork();
    if (worker < 0)
        return failed("cannot fork");
    if (worker == 0) {
        const char* argv[] = { self, "--work", kind, size, nullptr };
        ::execv(self, const_cast<char* const*>(argv));
        ::_exit(127);
    }
    int status = 0;
    struct rusage usage { };
    while (::wait4(worker, &status, 0, &usage) < 0)
        if (errno != EINTR)
            return failed("lost the worker");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return WIFEXITED(status) ? WEXITSTATUS(status) : failed("the worker was killed");
    std::printf("%.0f\n", double(usage.ru_maxrss) * 1024.0);
    return 0;
}

int work(const std::string& kind, long size)
{
    if (kind == "json")
        return json(size);
    if (kind == "yaml")
        return yaml(size);
    if (kind == "moe")
        return moe(size);
    if (kind == "timeline")
        return timeline(size);
    if (kind == "kernel")
        return kernel(size);
    if (kind == "traffic")
        return traffic(size);
    std::cerr << "waferscope-memoryprobe: unknown kind '" << kind << "'\n";
    return 2;
}

} // namespace

int main(int argc, char** argv)
{
    const bool worker = argc == 4 && std::string(argv[1]) == "--work";
    if (argc != 3 && !worker) {
        std::cerr << "usage: waferscope-memoryprobe json|yaml|moe|timeline|kernel|traffic SIZE\n";
        return 2;
    }
    const char* kind = argv[worker ? 2 : 1];
    const char* size = argv[worker ? 3 : 2];
    const long count = std::strtol(size, nullptr, 10);
    if (count < 1) {
        std::cerr << "waferscope-memoryprobe: SIZE must be a positive integer, got '" << size << "'\n";
        return 2;
    }
    return worker ? work(kind, count) : measure("/proc/self/exe", kind, size);
}
