#include "benchreference.h"

#include "core/cyclelevel/reference.h"
#include "core/model/modelloader.h"

#include <chrono>
#include <filesystem>
#include <string>

namespace {

// Seconds of one 16 + 2 generation of the config at `path`; -1 when it does not load or map.
double generationSeconds(const std::string& path)
{
    namespace cyclelevel = waferscope::core::cyclelevel;
    const waferscope::core::Expected<waferscope::core::ModelConfig> config = waferscope::core::readParamsFile(path);
    if (!config)
        return -1.0;
    const waferscope::core::Expected<cyclelevel::DecoderShape> shape = cyclelevel::decoderShape(*config);
    if (!shape)
        return -1.0;
    const cyclelevel::DecoderWeights weights(*shape, 1);
    const std::vector<std::int32_t> prompt = cyclelevel::promptTokens(*shape, 1, 16);
    const auto start = std::chrono::steady_clock::now();
    const bool generated = cyclelevel::referenceGenerate(*shape, weights, prompt, 2).hasValue();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return generated ? seconds : -1.0;
}

} // namespace

bool referenceFigures(nlohmann::ordered_json& figures, bool quick)
{
    const double gpt2 = generationSeconds(WAFERSCOPE_SOURCE_DIR "/samples/gpt2_small.yaml");
    if (gpt2 < 0.0)
        return false;
    figures["reference_generate_s_gpt2_small"] = gpt2;
    const std::filesystem::path llama = std::filesystem::path(WAFERSCOPE_SOURCE_DIR).parent_path()
        / "shared/modelzoo-release-2.10.0/nlp/llama/configs/params_llama3p2_1b_msl_8k.yaml";
    if (quick || !std::filesystem::is_regular_file(llama))
        return true;
    const double seconds = generationSeconds(llama.string());
    if (seconds < 0.0)
        return false;
    figures["reference_generate_s_llama3p2_1b"] = seconds;
    return true;
}
