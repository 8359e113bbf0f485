// waferscope-bench: one JSON object of named figures (`--json`), or a readable list. Each
// capability adds its figures here; targets are compared against this output, not asserted.
#include "core/compiler/compiler.h"
#include "core/engine/engine.h"
#include "core/engine/framesource.h"
#include "core/fabric/fabric.h"
#include "core/fabric/kernels.h"
#include "core/fabric/traffic.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"
#include "core/sweeps/scaling.h"
#include "core/sweeps/sensitivity.h"

#include <nlohmann/json.hpp>

#include "benchcluster.h"
#include "benchcyclelevel.h"
#include "benchfaults.h"
#include "benchmemory.h"
#include "benchreference.h"
#ifdef WAFERSCOPE_BENCH_GUI
#include "benchgui.h"
#endif

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

// Median-free but robust enough: the best of `rounds` averages of `iterations` calls, in ms.
double bestAverageMs(int rounds, int iterations, const std::function<void()>& body)
{
    double best = 1e300;
    for (int round = 0; round < rounds; ++round) {
        const auto start = Clock::now();
        for (int i = 0; i < iterations; ++i)
            body();
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count() / iterations;
        best = std::min(best, ms);
    }
    return best;
}

// Peak resident set of this process so far (VmHWM), in MB.
double peakRssMb()
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0)
            return std::stod(line.substr(6)) / 1024.0;
    return 0.0;
}

// A uniform synthetic-traffic run of `cycles` on a width x height mesh.
waferscope::core::fabric::TrafficConfig uniformTraffic(
    int width, int height, double rate, std::uint64_t cycles, int threads)
{
    waferscope::core::fabric::TrafficConfig config;
    config.width = width;
    config.height = height;
    config.rate = rate;
    config.cycles = cycles;
    config.threads = threads;
    return config;
}

// Router-cycles per second of a synthetic-traffic run (the best of `rounds`).
double trafficSpeed(int width, int height, double rate, std::uint64_t cycles, int threads, int rounds)
{
    const auto config = uniformTraffic(width, height, rate, cycles, threads);
    double best = 0.0;
    for (int round = 0; round < rounds; ++round) {
        const auto result = waferscope::core::fabric::runTraffic(config);
        best = std::max(best, result ? result->routerCyclesPerS : 0.0);
    }
    return best;
}

// Router-cycles per second of two 1-thread runs of the same shape at once, on two threads of
// this process: what the machine's cores give two jobs that share nothing, the ceiling for the
// parallel speedup of one job on as many cores.
double independentPairSpeed(int width, int height, double rate, std::uint64_t cycles)
{
    const auto config = uniformTraffic(width, height, rate, cycles, 1);
    bool ok[2] = { false, false };
    const auto start = Clock::now();
    {
        std::jthread other([&] { ok[1] = waferscope::core::fabric::runTraffic(config).hasValue(); });
        ok[0] = waferscope::core::fabric::runTraffic(config).hasValue();
    }
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    return ok[0] && ok[1] && wall > 0.0 ? 2.0 * double(cycles) * width * height / wall : 0.0;
}

// The fabric figures of issue 4.
bool fabricFigures(nlohmann::ordered_json& figures, bool quick, int rounds)
{
    using namespace waferscope::core::fabric;
    const std::uint64_t cycles = quick ? 2000 : 20000;
    // Rounds of one thread and of two alternate, so that a machine whose speed drifts (a shared
    // VM) does not favour either side of the speedup; each side keeps its best round.
    double oneThread = 0.0;
    double twoThreads = 0.0;
    double independentPair = 0.0;
    for (int round = 0; round < rounds; ++round) {
        oneThread = std::max(oneThread, trafficSpeed(32, 32, 0.05, cycles, 1, 1));
        twoThreads = std::max(twoThreads, trafficSpeed(32, 32, 0.05, cycles, 2, 1));
        independentPair = std::max(independentPair, independentPairSpeed(32, 32, 0.05, cycles));
    }
    figures["fabric_router_cycles_per_s_uniform_32x32"] = twoThreads; // rate 0.05, 2 threads
    figures["fabric_router_cycles_per_s_uniform_32x32_1_thread"] = oneThread;
    figures["fabric_parallel_speedup_2_threads"] = oneThread > 0 ? twoThreads / oneThread : 0.0;
    // The machine's own ceiling for that speedup: two unshared 1-thread runs at once.
    figures["fabric_independent_pair_speedup_2_threads"] = oneThread > 0 ? independentPair / oneThread : 0.0;
    const int large = quick ? 128 : 256;
    const std::uint64_t largeCycles = quick ? 100 : 1000;
    const double largeOne = trafficSpeed(large, large, 0.05, largeCycles, 1, 1);
    figures["fabric_parallel_speedup_2_threads_256x256"]
        = largeOne > 0 ? trafficSpeed(large, large, 0.05, largeCycles, 2, 1) / largeOne : 0.0;

    KernelConfig gemv; // 1024 x 1024 on a 32 x 32 region of CS-3 PEs
    const auto result = runKernel(gemv);
    if (!result || result->maxAbsError > 1e-2)
        return false;
    figures["fabric_gemv_1024_cycles"] = result->cycles;

    // A whole WSE-3 fabric (762 x 1172 PEs) at a low rate: speed, then this process's peak RSS.
    const auto cs3 = waferscope::core::loadBuiltinPreset("cs3");
    if (!cs3)
        return false;
    TrafficConfig full;
    full.width = cs3->wafer.fabricWidth;
    full.height = cs3->wafer.fabricHeight;
    full.rate = 0.001;
    full.cycles = quick ? 4 : 100;
    full.warmup = 1;
    full.threads = 2;
    const auto wafer = runTraffic(full);
    if (!wafer)
        return false;
    figures["fabric_router_cycles_per_s_full_wse3"] = wafer->routerCyclesPerS;
    figures["fabric_peak_rss_mb_full_wse3"] = peakRssMb();
    return true;
}

// The model-level engine: one GPT-3 XL training step on 16 CS-2 (compiled once), the scaling
// sweep 1..192 CS-2 (each point compiled and run), and frames of a full WSE-3.
bool engineFigures(nlohmann::ordered_json& figures, bool quick, int rounds)
{
    namespace core = waferscope::core;
    const core::Expected<core::ModelGraph> graph = core::loadModel(WAFERSCOPE_SOURCE_DIR "/samples/gpt3_xl.yaml");
    const core::Expected<core::SystemSpec> cs2 = core::loadBuiltinPreset("cs2");
    const core::Expected<core::SystemSpec> cs3 = core::loadBuiltinPreset("cs3");
    if (!graph || !cs2 || !cs3)
        return false;
    core::CompileOptions options;
    options.numSystems = 16;
    const core::Expected<core::ExecutionPlan> plan = core::compile(*graph, *cs2, options);
    if (!plan)
        return false;
    bool ok = true;
    figures["engine_train_step_ms_gpt3_xl_16csx"] = bestAverageMs(rounds, quick ? 1 : 20,
        [&] { ok = ok && core::engine::run(*plan, *graph, *cs2, core::engine::RunOptions {}).hasValue(); });
    core::sweeps::ScalingOptions sweep;
    sweep.numCsx = { 1, 2, 4, 8, 16, 32, 64, 128, 192 };
    figures["engine_scale_sweep_ms_1_to_192"]
        = bestAverageMs(quick ? 1 : 3, 1, [&] { ok = ok && core::sweeps::scale(*graph, *cs2, sweep).hasValue(); });
    // What the step depends on: every ranged value at its low and its high, compiled and run.
    core::engine::RunOptions train;
    figures["sensitivity_ms_gpt3_xl_16csx"] = bestAverageMs(quick ? 1 : 3, 1, [&] {
        ok = ok
            && core::sweeps::runSensitivity(*graph, *cs2, options, train, core::engine::builtinCalibration())
                   .hasValue();
    });

    const core::Expected<core::ExecutionPlan> wafer = core::compile(*graph, *cs3, core::CompileOptions {});
    if (!ok || !wafer)
        return false;
    const core::Expected<core::engine::RunResult> result
        = core::engine::run(*wafer, *graph, *cs3, core::engine::RunOptions {});
    if (!result)
        return false;
    const core::engine::FrameSource frames(*wafer, *graph, *cs3, *result);
    std::size_t next = 0;
    const int perRound = quick ? 5 : 60;
    const double frameMs = bestAverageMs(rounds, perRound, [&] {
        const core::engine::EngineFrame frame = frames.frame(next++ % frames.frameCount());
        ok = ok && frame.peActivity.size() == std::size_t(762) * 1172;
    });
    figures["frame_ms_full_wse3"] = frameMs;
    figures["frames_per_s_full_wse3"] = frameMs > 0.0 ? 1000.0 / frameMs : 0.0;

    // Decode tokens/s per user of the Llama models, with the calibrated launch-era overhead and
    // without it (the decode kernels and hand-offs alone), and without it on stacked tiers.
    core::engine::Calibration mechanisms = core::engine::builtinCalibration();
    mechanisms.regionLaunchCycles = 0.0;
    const std::pair<const char*, const char*> decodes[]
        = { { "llama3_8b", "cs3" }, { "llama3_8b", "cs2" }, { "llama3p1_70b", "cs3" }, { "llama3p1_405b", "cs3" } };
    for (const auto& [model, systemName] : decodes) {
        const core::Expected<core::ModelGraph> llama
            = core::loadModel(std::string(WAFERSCOPE_SOURCE_DIR "/samples/") + model + ".yaml");
        const core::Expected<core::SystemSpec> system = core::loadBuiltinPreset(systemName);
        core::CompileOptions inference;
        inference.mode = core::RunMode::Inference;
        const core::Expected<core::ExecutionPlan> placed = llama && system
            ? core::compile(*llama, *system, inference)
            : core::Expected<core::ExecutionPlan>(core::Diagnostic {});
        if (!placed)
            return false;
        core::engine::RunOptions decode;
        decode.mode = core::RunMode::Inference;
        decode.maxSteps = 1;
        const std::string key = std::string("engine_decode_tokens_per_s_") + model + "_" + systemName;
        for (const bool overhead : { true, false }) {
            const core::Expected<core::engine::RunResult> rate = overhead
                ? core::engine::run(*placed, *llama, *system, decode)
                : core::engine::run(*placed, *llama, *system, decode, mechanisms);
            if (!rate)
                return false;
            figures[overhead ? key : key + "_no_launch_overhead"] = rate->metrics.tokensPerS;
        }
        // The same without overhead under region_sizing "stacked" (blocks in SRAM tiers, heads
        // split over rows): the hardware part of what a later software profile could fit.
        core::engine::Calibration stacked = mechanisms;
        stacked.mechanisms.regionSizing = core::engine::RegionSizing::Stacked;
        const core::Expected<core::ExecutionPlan> tiers = core::engine::compileFor(*llama, *system, inference, stacked);
        const core::Expected<core::engine::RunResult> rate = tiers
            ? core::engine::run(*tiers, *llama, *system, decode, stacked)
            : core::Expected<core::engine::RunResult>(tiers.error());
        if (!rate)
            return false;
        figures[key + "_stacked_no_launch_overhead"] = rate->metrics.tokensPerS;
        // The 2024-11 profile (stacked tiers and speculative decoding), with its fitted overhead
        // and without it, and without it with tree-reduced GEMVs where they are faster.
        const core::Expected<core::engine::Calibration> november = core::engine::resolveCalibration("2024-11");
        if (!november)
            return false;
        core::engine::Calibration hardware = *november;
        hardware.regionLaunchCycles = 0.0;
        core::engine::Calibration trees = hardware;
        trees.mechanisms.gemv = core::engine::GemvReduction::Tree;
        const std::pair<const core::engine::Calibration*, const char*> profiles[] = { { &*november, "_2024_11" },
            { &hardware, "_2024_11_no_launch_overhead" }, { &trees, "_2024_11_tree_reduced_no_launch_overhead" } };
        for (const auto& [profile, suffix] : profiles) {
            const core::Expected<core::ExecutionPlan> drafting
                = core::engine::compileFor(*llama, *system, inference, *profile);
            const core::Expected<core::engine::RunResult> drafted = drafting
                ? core::engine::run(*drafting, *llama, *system, decode, *profile)
                : core::Expected<core::engine::RunResult>(drafting.error());
            if (!drafted)
                return false;
            figures[key + suffix] = drafted->metrics.tokensPerS;
        }
    }
    return ok;
}

} // namespace

int main(int argc, char** argv)
{
    bool json = false;
    bool quick = false; // CTest smoke run: one short round of each figure
    bool train = false; // only the training figures, GPT-2 small's block among them (hours on 2 cores)
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--json") == 0)
            json = true;
        else if (std::strcmp(argv[i], "--quick") == 0)
            quick = true;
        else if (std::strcmp(argv[i], "--train") == 0)
            train = true;
        else {
            std::cerr << "usage: waferscope-bench [--json] [--quick] [--train]\n";
            return 2;
        }
    }
    if (train) {
        nlohmann::ordered_json figures;
        if (!trainFigures(figures, quick, true)) {
            std::cerr << "waferscope-bench: a decoder's training step on the cycle-level fabric failed\n";
            return 1;
        }
        std::cout << figures.dump(2) << "\n";
        return 0;
    }
    const int rounds = quick ? 1 : 5;

    nlohmann::ordered_json figures;
    // Loading and validating all three built-in presets (parse, locate, range and consistency checks).
    bool loaded = true;
    figures["preset_load_ms"] = bestAverageMs(
        rounds, quick ? 5 : 200, [&] { loaded = loaded && waferscope::core::loadBuiltinPresets().hasValue(); });
    if (!loaded) {
        std::cerr << "waferscope-bench: built-in presets failed to load\n";
        return 1;
    }

    // Reading and building the graph of a ~400B-parameter model (Llama 3.1 405B, 126 blocks).
    const std::string largeModel = WAFERSCOPE_SOURCE_DIR "/samples/llama3p1_405b.yaml";
    std::int64_t params = 0;
    figures["inspect_ms_405b_class"] = bestAverageMs(rounds, quick ? 1 : 20, [&] {
        waferscope::core::Expected<waferscope::core::ModelGraph> graph = waferscope::core::loadModel(largeModel);
        params = graph ? graph->totalParams : -1;
    });
    if (params < 400'000'000'000) {
        std::cerr << "waferscope-bench: " << largeModel << " did not load as a ~400B model\n";
        return 1;
    }

    // Inspecting every model config of the latest Model Zoo release (../shared beside the source
    // tree), one after another in this process: read, validate and build each graph.
    {
        const std::filesystem::path corpus
            = std::filesystem::path(WAFERSCOPE_SOURCE_DIR).parent_path() / "shared/modelzoo-release-2.10.0";
        std::vector<std::string> files;
        if (std::filesystem::is_directory(corpus))
            for (const auto& entry : std::filesystem::recursive_directory_iterator(corpus))
                if (entry.is_regular_file() && entry.path().extension() == ".yaml")
                    files.push_back(entry.path().string());
        std::sort(files.begin(), files.end());
        if (!files.empty()) {
            std::size_t configsLoaded = 0;
            figures["inspect_ms_modelzoo_2_10"] = bestAverageMs(rounds, 1, [&] {
                configsLoaded = 0;
                for (const std::string& file : files)
                    configsLoaded += waferscope::core::loadModel(file).hasValue() ? 1 : 0;
            });
            figures["inspect_modelzoo_2_10_files"] = files.size();
            if (configsLoaded != files.size()) {
                std::cerr << "waferscope-bench: " << files.size() - loaded
                          << " of the Model Zoo 2.10.0 configs did not load\n";
                return 1;
            }
        }
    }

    // Compiling it: weight streaming for training on CS-3, and the multi-wafer inference split
    // (the graph is loaded once; the figure is the slower of the two).
    {
        const waferscope::core::Expected<waferscope::core::ModelGraph> graph = waferscope::core::loadModel(largeModel);
        const waferscope::core::Expected<waferscope::core::SystemSpec> cs3 = waferscope::core::loadBuiltinPreset("cs3");
        bool compiled = graph && cs3;
        const auto compileMs = [&](waferscope::core::RunMode mode) {
            waferscope::core::CompileOptions options;
            options.mode = mode;
            return bestAverageMs(rounds, quick ? 1 : 10,
                [&] { compiled = compiled && waferscope::core::compile(*graph, *cs3, options).hasValue(); });
        };
        if (compiled) {
            const double streaming = compileMs(waferscope::core::RunMode::Train);
            const double inference = compileMs(waferscope::core::RunMode::Inference);
            figures["compile_ms_405b_class"] = std::max(streaming, inference);
            figures["compile_ms_405b_class_weight_streaming"] = streaming;
            figures["compile_ms_405b_class_inference"] = inference;
        }
        if (!compiled) {
            std::cerr << "waferscope-bench: " << largeModel << " did not compile on CS-3\n";
            return 1;
        }
    }

    if (!fabricFigures(figures, quick, rounds)) {
        std::cerr << "waferscope-bench: a fabric run failed\n";
        return 1;
    }

    if (!engineFigures(figures, quick, rounds)) {
        std::cerr << "waferscope-bench: an engine run failed\n";
        return 1;
    }

    if (!referenceFigures(figures, quick)) {
        std::cerr << "waferscope-bench: a reference decode failed\n";
        return 1;
    }

    if (!cycleLevelFigures(figures, quick)) {
        std::cerr << "waferscope-bench: a decode token on the cycle-level fabric failed\n";
        return 1;
    }
    if (!trainFigures(figures, quick, false)) {
        std::cerr << "waferscope-bench: a decoder's training step on the cycle-level fabric failed\n";
        return 1;
    }

    if (!clusterFigures(figures, rounds)) {
        std::cerr << "waferscope-bench: scheduling a 1,000-job cluster failed\n";
        return 1;
    }

    if (!faultFigures(figures, quick ? 1 : 5)) {
        std::cerr << "waferscope-bench: an interrupted or cancelled run did not stop as expected\n";
        return 1;
    }

    if (!memoryFigures(figures, quick, rounds)) {
        std::cerr << "waferscope-bench: a memory estimate or a reader's largest input failed\n";
        return 1;
    }

#ifdef WAFERSCOPE_BENCH_GUI
    if (!guiFigures(figures, quick, rounds, argc, argv)) {
        std::cerr << "waferscope-bench: a GUI measurement failed\n";
        return 1;
    }
#endif

    if (json) {
        std::cout << figures.dump(2) << "\n";
    } else {
        for (const auto& [name, value] : figures.items())
            std::cout << name << ": " << value << "\n";
    }
    return 0;
}
