// waferscope-bench: one JSON object of named figures (`--json`), or a readable list. Each
// capability adds its figures here; targets are compared against this output, not asserted.
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>

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

} // namespace

int main(int argc, char** argv)
{
    bool json = false;
    bool quick = false; // CTest smoke run: one short round of each figure
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--json") == 0)
            json = true;
        else if (std::strcmp(argv[i], "--quick") == 0)
            quick = true;
        else {
            std::cerr << "usage: waferscope-bench [--json] [--quick]\n";
            return 2;
        }
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

    if (json) {
        std::cout << figures.dump(2) << "\n";
    } else {
        for (const auto& [name, value] : figures.items())
            std::cout << name << ": " << value << "\n";
    }
    return 0;
}
