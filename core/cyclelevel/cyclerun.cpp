#include "core/cyclelevel/cyclerun.h"

#include "core/common/memorybudget.h"
#include "core/common/units.h"
#include "core/cyclelevel/reference.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <map>
#include <span>

namespace waferscope::core::cyclelevel {

namespace {

double secondsSince(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::optional<Diagnostic> prefill(WaferDecoder& decoder, const CycleRunOptions& options, CycleRunResult& result)
{
    if (decoder.hasPrefill()) {
        Expected<PrefillOnFabric> run = decoder.prefill(
            std::span<const std::int32_t>(result.prompt).first(std::size_t(options.promptTokens - 1)));
        if (!run)
            return run.error();
        result.prefillCycles = run->cycles;
        result.prefillBlock = run->block;
        result.prefillModelCycles = run->modelCycles;
        return std::nullopt;
    }
    for (int p = 0; p + 1 < options.promptTokens; ++p) {
        Expected<TokenOnFabric> token = decoder.decode(p, result.prompt[std::size_t(p)], true);
        if (!token)
            return token.error();
        result.prefillCycles += token->cycles;
    }
    return std::nullopt;
}

void notePrefill(const WaferDecoder& decoder, const CycleRunOptions& options, CycleRunResult& result)
{
    if (options.promptTokens > 1 && decoder.hasPrefill())
        result.notes.push_back("the prompt's " + std::to_string(options.promptTokens - 1)
            + " positions before the last ran at once on the prefill kernels (embedding, norms, GEMMs on MeshGEMM "
              "rings, ring attention) on a "
            + std::to_string(result.prefillBlock) + " x " + std::to_string(result.prefillBlock)
            + " block of PEs below the plan's regions (which holds a copy of the blocks' weights of its own), each "
              "block's keys and values then moved into its attention region's cache");
    else if (options.promptTokens > 1 && !options.prefillKernels)
        result.notes.push_back("the prompt fills the KV cache one position at a time through the decode kernels");
    else if (options.promptTokens > 1)
        result.notes.push_back("the prompt fills the KV cache one position at a time through the decode kernels: the "
                               "prefill kernels cannot run it here ("
            + decoder.prefillRefusal() + ")");
}

} // namespace

Expected<CycleRunResult> runCycleLevel(
    const ModelGraph& graph, const ExecutionPlan& plan, const SystemSpec& system, const CycleRunOptions& options)
{
    if (options.tokens < 1 || options.tokens > 4096)
        return Diagnostic { "--tokens", 0, 0, "--tokens expects 1..4096 decode steps" };
    if (options.promptTokens < 1 || options.promptTokens > 4096)
        return Diagnostic { "--prompt_tokens", 0, 0, "--prompt_tokens expects 1..4096 tokens" };
    Expected<DecoderShape> shape = decoderShape(graph);
    if (!shape)
        return shape.error();
    if (plan.stackedLayers)
        return Diagnostic { "--level", 0, 0,
            "the plan stacks blocks in SRAM tiers (its software profile's region_sizing is stacked); the cycle-level "
            "run executes strip layouts, a block's regions on PEs of their own: run it with a profile whose "
            "region_sizing is by_weights (--calibration 2024-08-launch)",
            Diagnostic::Kind::CannotMap };
    const std::int64_t positions = std::int64_t(options.promptTokens) + options.tokens - 1;
    const double estimate = double(WaferDecoder::estimateHostBytes(plan, system));
    if (std::optional<Diagnostic> tooBig
        = checkMemory("the cycle-level state of " + graph.config.name + " on " + system.displayName, estimate,
            "choose a smaller model or a machine with more memory",
            Diagnostic { "--level", 0, 0, "", Diagnostic::Kind::CannotMap }))
        return *tooBig;

    CycleRunResult result;
    result.model = graph.config.name;
    result.system = system.displayName;
    result.clockHz = system.wafer.clockHz;
    const auto progress = [&](const std::string& phase, std::int64_t position, const fabric::Fabric* fabric) {
        return !options.progress || options.progress(phase, position, positions, fabric);
    };
    if (!progress("building", 0, nullptr))
        return Diagnostic { "--level", 0, 0, "cancelled", Diagnostic::Kind::CannotMap };

    auto start = std::chrono::steady_clock::now();
    FabricDecodeOptions decodeOptions;
    decodeOptions.threads = options.threads;
    decodeOptions.seed = options.seed;
    decodeOptions.capacity = int(positions);
    decodeOptions.maxCyclesPerToken = options.maxCyclesPerToken;
    decodeOptions.observeEveryCycles = std::max<std::uint64_t>(1, options.observeEveryCycles);
    decodeOptions.prefillTokens = options.prefillKernels ? options.promptTokens - 1 : 0;
    std::string phase = "prefill";
    decodeOptions.observer
        = [&](const fabric::Fabric& fabric, std::int64_t position) { return progress(phase, position, &fabric); };
    Expected<std::unique_ptr<WaferDecoder>> built = WaferDecoder::build(graph, plan, system, decodeOptions);
    if (!built)
        return built.error();
    WaferDecoder& decoder = **built;
    result.buildS = secondsSince(start);
    result.hostBytes = decoder.hostBytes();
    result.peakSramBytesPerPe = decoder.peakSramBytesPerPe();
    result.colorsAtBusiestRouter = decoder.colorsAtBusiestRouter();

    // The reference first: its tokens say what the fabric should generate.
    start = std::chrono::steady_clock::now();
    result.prompt = promptTokens(decoder.shape(), options.seed, options.promptTokens);
    Expected<GenerationResult> reference
        = referenceGenerate(decoder.shape(), decoder.weights(), result.prompt, options.tokens);
    if (!reference)
        return reference.error();
    result.referenceTokens = reference->tokens;
    result.referenceS = secondsSince(start);

    // Prefill: the prompt but its last token, at once on the prefill kernels where the build
    // placed them, else one position at a time through the decode kernels.
    start = std::chrono::steady_clock::now();
    if (std::optional<Diagnostic> failure = prefill(decoder, options, result))
        return *failure;
    result.prefillS = secondsSince(start);
    // Decode: the last prompt token, then each generated one fed back over the fabric.
    phase = "decode";
    start = std::chrono::steady_clock::now();
    bool diverged = false;
    for (int step = 0; step < options.tokens; ++step) {
        const std::int64_t position = options.promptTokens - 1 + step;
        const bool fromHost = step == 0;
        const std::int32_t input = fromHost ? result.prompt.back() : result.tokens.back();
        Expected<TokenOnFabric> token = decoder.decode(position, input, fromHost);
        if (!token)
            return token.error();
        result.tokens.push_back(token->output);
        if (!diverged) {
            const std::vector<float>& expected = reference->logits[std::size_t(step)];
            for (std::size_t v = 0; v < expected.size(); ++v)
                result.maxAbsLogitError
                    = std::max(result.maxAbsLogitError, double(std::abs(token->logits[v] - expected[v])));
            if (token->output != reference->tokens[std::size_t(step)]) {
                diverged = true;
                result.gapAtDifference = reference->top2Gap[std::size_t(step)];
            }
        }
        result.decode.push_back(std::move(*token));
    }
    result.decodeS = secondsSince(start) / options.tokens;
    result.tokensMatchReference = !diverged;
    result.ttftCycles = result.prefillCycles + result.decode.front().cycles;
    double cycles = 0.0;
    for (const TokenOnFabric& token : result.decode)
        cycles += double(token.cycles);
    result.cyclesPerToken = cycles / double(result.decode.size());
    result.tokensPerS = result.cyclesPerToken > 0.0 ? result.clockHz / result.cyclesPerToken : 0.0;
    result.regions = result.decode.back().regions;

    notePrefill(decoder, options, result);
    if (diverged && result.gapAtDifference >= 2.0 * result.maxAbsLogitError)
        result.notes.push_back("a generated token differs from the reference's although its top two logits are "
                               "further apart than twice the logit error: a defect");
    else if (diverged)
        result.notes.push_back("a generated token differs where the reference's top two logits are within twice the "
                               "logit error (the sums run in another order on the fabric)");
    return result;
}

std::string cycleRunToJson(const CycleRunResult& result)
{
    nlohmann::ordered_json json;
    json["level"] = "cycle";
    json["model"] = result.model;
    json["system"] = result.system;
    json["prompt_tokens"] = result.prompt.size();
    json["tokens"] = result.decode.size();
    json["cycles_per_token"] = result.cyclesPerToken;
    json["tokens_per_s"] = result.tokensPerS;
    json["clock_hz"] = result.clockHz;
    json["prefill_cycles"] = result.prefillCycles;
    json["ttft_cycles"] = result.ttftCycles;
    json["prefill_model_cycles"] = result.prefillModelCycles > 0.0 ? nlohmann::ordered_json(result.prefillModelCycles)
                                                                   : nlohmann::ordered_json();
    json["prefill_block"] = result.prefillBlock;
    json["max_abs_logit_error"] = result.maxAbsLogitError;
    json["tokens_match_reference"] = result.tokensMatchReference;
    json["gap_at_difference"]
        = result.gapAtDifference < 0.0 ? nlohmann::ordered_json() : nlohmann::ordered_json(result.gapAtDifference);
    json["prompt"] = result.prompt;
    json["generated"] = result.tokens;
    json["reference_generated"] = result.referenceTokens;
    nlohmann::ordered_json regions = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < result.regions.size(); ++i) {
        const RegionCycles& region = result.regions[i];
        regions.push_back(
            { { "op", region.op }, { "kernel", toString(region.kernel) }, { "measured_cycles", region.measuredCycles },
                { "model_cycles", i < result.modelCycles.size() ? result.modelCycles[i] : 0.0 },
                { "link_wavelets", region.linkWavelets }, { "busy_fraction", region.busyFraction },
                { "pes", region.pes } });
        if (!region.expertsChosen.empty())
            regions.back()["experts_chosen"] = region.expertsChosen;
    }
    json["regions"] = regions;
    json["fabric"] = { { "colors_at_busiest_router", result.colorsAtBusiestRouter },
        { "peak_sram_bytes_per_pe", result.peakSramBytesPerPe }, { "host_bytes", result.hostBytes } };
    json["wall_s"] = { { "build", result.buildS }, { "reference", result.referenceS }, { "prefill", result.prefillS },
        { "decode_token", result.decodeS } };
    json["notes"] = result.notes;
    return json.dump(2);
}

} // namespace waferscope::core::cyclelevel
