#include "benchcyclelevel.h"

#include "core/compiler/compiler.h"
#include "core/cyclelevel/reference.h"
#include "core/cyclelevel/trainrun.h"
#include "core/cyclelevel/waferdecoder.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace {

using namespace waferscope::core;

// Resets the kernel's peak-RSS mark of this process (Linux: clear_refs 5).
void resetPeakRss()
{
    std::ofstream("/proc/self/clear_refs") << "5";
}

double peakRssMb()
{
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmHWM:", 0) == 0)
            return std::stod(line.substr(6)) / 1024.0; // kB
    return -1.0;
}

bool decodeToken(nlohmann::ordered_json& figures, const std::string& key, const std::string& path, const char* system,
    int threads, bool withMemory = true)
{
    resetPeakRss();
    const Expected<ModelGraph> graph = loadModel(path);
    const Expected<SystemSpec> spec = loadBuiltinPreset(system);
    if (!graph || !spec)
        return false;
    CompileOptions compileOptions;
    compileOptions.mode = RunMode::Inference;
    const Expected<ExecutionPlan> plan = compile(*graph, *spec, compileOptions);
    if (!plan)
        return false;
    cyclelevel::FabricDecodeOptions options;
    options.threads = threads;
    options.capacity = 1;
    Expected<std::unique_ptr<cyclelevel::WaferDecoder>> decoder
        = cyclelevel::WaferDecoder::build(*graph, *plan, *spec, options);
    if (!decoder)
        return false;
    const std::int32_t token = cyclelevel::promptTokens((*decoder)->shape(), 1, 1).front();
    const auto start = std::chrono::steady_clock::now();
    const Expected<cyclelevel::TokenOnFabric> result = (*decoder)->decode(0, token, true);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!result)
        return false;
    if (!withMemory) { // beside the main figures
        figures["fabric_" + key + "_decode_token_s_" + std::to_string(threads)
            + (threads == 1 ? "_thread" : "_threads")]
            = seconds;
        return true;
    }
    figures["fabric_" + key + "_decode_token_s"] = seconds;
    figures["fabric_" + key + "_decode_token_threads"] = threads;
    figures["fabric_" + key + "_decode_token_cycles"] = result->cycles;
    figures["fabric_" + key + "_decode_token_peak_rss_mb"] = peakRssMb();
    return true;
}

// A weight-streaming training step of fc_mnist at cycle level (16 samples on a full CS-2), as
// `run --mode train --level cycle` runs it: its wall time on every core, its cycles and its peak
// RSS.
bool trainStep(nlohmann::ordered_json& figures, int threads)
{
    resetPeakRss();
    const Expected<ModelGraph> graph = loadModel(WAFERSCOPE_SOURCE_DIR "/samples/fc_mnist.yaml");
    const Expected<SystemSpec> spec = loadBuiltinPreset("cs2");
    if (!graph || !spec)
        return false;
    cyclelevel::TrainRunOptions options;
    options.threads = threads;
    const auto start = std::chrono::steady_clock::now();
    const Expected<cyclelevel::TrainRunResult> result = cyclelevel::runTrainCycleLevel(*graph, *spec, options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!result || !result->gradsMatchReference)
        return false;
    figures["fabric_fc_mnist_train_step_s"] = seconds;
    figures["fabric_fc_mnist_train_step_cycles"] = result->cyclesPerStep;
    figures["fabric_fc_mnist_train_step_peak_rss_mb"] = peakRssMb();
    return true;
}

// A decoder's training step at cycle level with weight streaming on a full CS-2, as `run --mode
// train --level cycle --layers L` runs it with its defaults (one sequence of up to 128 tokens): the
// step's wall time, cycles and peak RSS, and the wall time and cycles of its first block's
// kernels (forward, delta and gradient) beside them.
bool decoderTrainStep(nlohmann::ordered_json& figures, const std::string& key, const std::string& file, int layers,
    std::int64_t sequence, int threads)
{
    resetPeakRss();
    const Expected<ModelGraph> graph = loadModel(file);
    const Expected<SystemSpec> spec = loadBuiltinPreset("cs2");
    if (!graph || !spec)
        return false;
    cyclelevel::TrainRunOptions options;
    options.threads = threads;
    options.layers = layers;
    options.sequence = sequence;
    const auto start = std::chrono::steady_clock::now();
    const Expected<cyclelevel::TrainRunResult> result = cyclelevel::runTrainCycleLevel(*graph, *spec, options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!result || !result->gradsMatchReference || !result->lossMatchesReference)
        return false;
    double blockSeconds = 0.0;
    std::uint64_t blockCycles = 0;
    for (const cyclelevel::TrainKernelRecord& record : result->regions)
        if (record.op.rfind("h0.", 0) == 0) {
            blockSeconds += record.wallS;
            blockCycles += record.measuredCycles;
        }
    figures["fabric_" + key + "_block_train_s"] = blockSeconds;
    figures["fabric_" + key + "_block_train_cycles"] = blockCycles;
    figures["fabric_" + key + "_train_step_s"] = seconds;
    figures["fabric_" + key + "_train_step_cycles"] = result->cyclesPerStep;
    figures["fabric_" + key + "_train_step_peak_rss_mb"] = peakRssMb();
    return true;
}

} // namespace

bool trainFigures(nlohmann::ordered_json& figures, bool quick, bool heavy)
{
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    const std::string tiny = WAFERSCOPE_SOURCE_DIR "/tests/data/cyclelevel/tiny_gpt2.yaml";
    if (quick)
        return decoderTrainStep(figures, "tiny_gpt2", tiny, 1, 16, 1);
    return decoderTrainStep(figures, "tiny_gpt2", tiny, 0, 0, cores)
        && (!heavy
            || decoderTrainStep(figures, "gpt2_small", WAFERSCOPE_SOURCE_DIR "/samples/gpt2_small.yaml", 1, 0, cores));
}

bool cycleLevelFigures(nlohmann::ordered_json& figures, bool quick)
{
    if (quick)
        return decodeToken(
            figures, "tiny_llama", WAFERSCOPE_SOURCE_DIR "/tests/data/cyclelevel/tiny_llama.yaml", "cs2", 1);
    // On every core, as `run --level cycle` runs by default; GPT-2 small on one thread beside it.
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    const std::string gpt2 = WAFERSCOPE_SOURCE_DIR "/samples/gpt2_small.yaml";
    if (!decodeToken(figures, "gpt2_small", gpt2, "cs2", cores))
        return false;
    if (cores > 1)
        figures["fabric_gpt2_small_decode_token_s_" + std::to_string(cores) + "_threads"]
            = figures["fabric_gpt2_small_decode_token_s"];
    return (cores == 1 || decodeToken(figures, "gpt2_small", gpt2, "cs2", 1, false))
        && decodeToken(figures, "llama3p2_1b", WAFERSCOPE_SOURCE_DIR "/samples/llama3p2_1b.yaml", "cs3", cores)
        && trainStep(figures, cores);
}
