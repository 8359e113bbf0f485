#include "core/cyclelevel/reference.h"

#include "core/cyclelevel/referencemodel.h"
#include "core/cyclelevel/referenceops.h"

#include <optional>
#include <string>

namespace waferscope::core::cyclelevel {

namespace {

std::optional<std::string> generationProblem(
    const DecoderShape& shape, const std::vector<std::int32_t>& prompt, int tokens)
{
    if (prompt.empty())
        return "the prompt is empty";
    if (tokens < 1)
        return "tokens to generate must be at least 1 (got " + std::to_string(tokens) + ")";
    for (const std::int32_t id : prompt)
        if (id < 0 || id >= shape.vocab)
            return "prompt token " + std::to_string(id) + " is outside the vocabulary [0, "
                + std::to_string(shape.vocab) + ")";
    const std::int64_t positions = std::int64_t(prompt.size()) + tokens - 1;
    if (positions > shape.maxPositions)
        return "a prompt of " + std::to_string(prompt.size()) + " tokens and " + std::to_string(tokens)
            + " generated need " + std::to_string(positions) + " positions; " + shape.name + " has "
            + std::to_string(shape.maxPositions);
    return std::nullopt;
}

} // namespace

std::vector<std::int32_t> promptTokens(const DecoderShape& shape, std::uint64_t seed, int count)
{
    std::vector<std::int32_t> tokens;
    const std::uint64_t key = WeightTensor::mix(seed ^ 0x70726f6d7074ull); // "prompt": apart from the weights' keys
    for (int i = 0; i < count; ++i) {
        const std::uint64_t bits = WeightTensor::mix(key + std::uint64_t(i + 1) * WeightTensor::kGolden);
        tokens.push_back(std::int32_t((bits >> 32) * std::uint64_t(shape.vocab) >> 32));
    }
    return tokens;
}

Expected<GenerationResult> referenceGenerate(
    const DecoderShape& shape, const DecoderWeights& weights, const std::vector<std::int32_t>& prompt, int tokens)
{
    if (!(shape == weights.shape()))
        return Diagnostic { "<reference>", 0, 0, "the weights were drawn for another shape than " + shape.name,
            Diagnostic::Kind::Internal };
    if (std::optional<std::string> problem = generationProblem(shape, prompt, tokens))
        return Diagnostic { "<reference>", 0, 0, *problem, Diagnostic::Kind::BadInput };
    GenerationResult result;
    result.prompt = prompt;
    ReferenceModel model(weights);
    std::vector<float> logits = model.forward(prompt);
    for (int i = 0; i < tokens; ++i) {
        const std::int32_t next = std::int32_t(argmax(logits));
        result.tokens.push_back(next);
        result.top2Gap.push_back(topTwoGap(logits));
        result.logits.push_back(std::move(logits));
        if (i + 1 < tokens)
            logits = model.forward(std::span<const std::int32_t>(&next, 1));
    }
    return result;
}

} // namespace waferscope::core::cyclelevel
