// libFuzzer target for the Model Zoo params reader and graph builder: any input must yield a
// graph or a located diagnostic, never a crash, a hang or unbounded memory.
#include "core/model/modelloader.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    waferscope::core::Expected<waferscope::core::ModelConfig> config
        = waferscope::core::readParamsText(text, "fuzz.yaml");
    if (!config) {
        const waferscope::core::Diagnostic& error = config.error();
        if (error.line < 1 || error.column < 1 || error.message.empty())
            std::abort(); // every refusal must be located and explained
        return 0;
    }
    // Bound the graph work the fuzzer can ask for: huge but valid models are the bench's job.
    if (config->numLayers * std::max<std::int64_t>(1, config->numExperts) > 4096)
        return 0;
    const waferscope::core::ModelGraph graph = waferscope::core::buildModelGraph(config.value());
    if (graph.totalParams < 0 || graph.nonzeroParams > graph.totalParams)
        std::abort();
    return 0;
}
