// Soak: 200 consecutive load / compile / run / report cycles over every sample in one process,
// as a long GUI session or a sweep script drives the core. The heap in use after a cycle must
// not grow beyond 10% of what it was after the first pass over the samples: anything a cycle
// keeps (a cache without a bound, a leak) would grow it by every cycle.
#include "corefixtures.h"
#include "testing.h"

#include "core/common/textfile.h"
#include "core/compiler/compiler.h"
#include "core/engine/engine.h"
#include "core/model/modelloader.h"
#include "core/report/rundirectory.h"
#include "core/report/runreport.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <malloc.h>
#include <unistd.h>

#include "sanitizer.h"
#ifdef WAFERSCOPE_UNDER_ASAN
#include <sanitizer/allocator_interface.h>
#endif

using namespace waferscope;
using namespace waferscope::core;
namespace fs = std::filesystem;

namespace {

// Bytes of heap in use: what the program holds, not what the allocator keeps cached (under
// AddressSanitizer its quarantine of freed blocks would hide a leak or fake one in the RSS).
double heapInUse()
{
#ifdef WAFERSCOPE_UNDER_ASAN
    return double(__sanitizer_get_current_allocated_bytes());
#else
    const struct mallinfo2 info = ::mallinfo2();
    return double(info.uordblks + info.hblkhd);
#endif
}

double residentBytes()
{
    std::ifstream statm("/proc/self/statm");
    double pages = 0.0;
    double resident = 0.0;
    statm >> pages >> resident;
    return resident * double(::sysconf(_SC_PAGESIZE));
}

// How each sample is run: its usual mode and a cluster that its batch spreads over, so that
// every execution model (pipelined, weight streaming, multi-wafer inference) is in the loop.
struct Case {
    const char* sample;
    const char* system;
    int numSystems;
    bool inference;
};
constexpr Case kCases[] = {
    { "fc_mnist.yaml", "cs2", 1, false },
    { "gpt2_small.yaml", "cs2", 1, false },
    { "gpt3_xl.yaml", "cs2", 16, false },
    { "gpt3_xl_sparse90.yaml", "cs2", 1, false },
    { "gpt3_6p7b.yaml", "cs2", 4, false },
    { "gpt_1t_synthetic.yaml", "cs2", 64, false },
    { "llama3_8b.yaml", "cs3", 1, true },
    { "llama2_70b.yaml", "cs3", 1, true },
    { "llama3p1_70b.yaml", "cs3", 1, true },
    { "llama3p1_405b.yaml", "cs3", 1, true },
};
constexpr int kCycles = 200;

// One cycle, as `waferscope-cli run --model_dir` does it.
void cycle(const Case& job, const SystemSpec& system, const fs::path& directory)
{
    const std::string path = test::sample(job.sample);
    const Expected<std::string> bytes = readTextFile(path, std::size_t(64) << 20, "params YAML");
    WS_REQUIRE(bytes.hasValue());
    const Expected<ModelGraph> graph = loadModel(path);
    WS_REQUIRE(graph.hasValue());
    CompileOptions compileOptions;
    compileOptions.mode = job.inference ? RunMode::Inference : RunMode::Train;
    compileOptions.numSystems = job.inference ? 0 : job.numSystems;
    const Expected<ExecutionPlan> plan = compile(*graph, system, compileOptions);
    WS_REQUIRE(plan.hasValue());
    engine::RunOptions runOptions;
    runOptions.mode = compileOptions.mode;
    const Expected<engine::RunResult> run = engine::run(*plan, *graph, system, runOptions);
    WS_REQUIRE(run.hasValue());
    const report::RunReport report = report::buildReport(
        { path, *bytes, *graph, system, *plan, *run, compileOptions, runOptions, engine::builtinCalibration() });
    const std::optional<Diagnostic> written
        = report::writeRunDirectory(directory.string(), report::runDirectoryFiles(report, *run, *plan));
    WS_REQUIRE(!written.has_value());
    WS_REQUIRE(report::readReportFile(directory.string()).hasValue());
}

} // namespace

WS_TEST(twoHundredCyclesOverEverySampleKeepTheHeapFlat)
{
    const fs::path directory = fs::temp_directory_path() / ("waferscope-soak-" + std::to_string(::getpid()));
    fs::remove_all(directory);
    const SystemSpec cs2 = test::preset("cs2");
    const SystemSpec cs3 = test::preset("cs3");
    constexpr int kPass = int(std::size(kCases));
    double baselineHeap = 0.0;
    double baselineResident = 0.0;
    double peakHeap = 0.0;
    for (int i = 0; i < kCycles; ++i) {
        const Case& job = kCases[i % kPass];
        cycle(job, std::string(job.system) == "cs3" ? cs3 : cs2, directory);
        if (i + 1 == kPass) { // after the first pass: what every later cycle is compared with
            baselineHeap = heapInUse();
            baselineResident = residentBytes();
        } else if (i + 1 > kPass) {
            peakHeap = std::max(peakHeap, heapInUse());
        }
    }
    const double finalResident = residentBytes();
    std::printf("soak: %d cycles; heap in use %.2f MB after the first pass, at most %.2f MB after; resident %.1f MB "
                "-> %.1f MB\n",
        kCycles, baselineHeap / 1e6, peakHeap / 1e6, baselineResident / 1e6, finalResident / 1e6);
    WS_CHECK(baselineHeap > 0.0);
    WS_CHECK(peakHeap <= 1.10 * baselineHeap);
#ifndef WAFERSCOPE_UNDER_ASAN
    WS_CHECK(finalResident <= 1.10 * baselineResident); // (the sanitizer's quarantine grows the RSS by design)
#endif
    fs::remove_all(directory);
}
