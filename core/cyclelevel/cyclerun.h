#pragma once

#include "core/common/expected.h"
#include "core/compiler/plan.h"
#include "core/cyclelevel/waferdecoder.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// Called between fabric stretches: phase ("building", "prefill", "decode"), the position, the
// positions in all and the fabric (null while building). False cancels.
using CycleProgress = std::function<bool(
    const std::string& phase, std::int64_t position, std::int64_t positions, const fabric::Fabric* fabric)>;

// `run --level cycle`: a decoder's single-wafer inference plan executed on the cycle-level
// fabric. The prompt (seeded ids) but its last token runs at once on the prefill kernels
// (prefilllayer.h) on a block of its own, which leave each block's keys and values in its
// attention region's cache (else it fills the cache one position at a time through the decode
// kernels, and the notes say why); then `tokens` decode steps each feed the previous token (the
// last prompt token, then the LM head's argmax, which travels back to the embedding over the
// fabric) and generate the next. A reference forward pass (reference.h) generates from the same
// weights, and the fabric's tokens and logits are checked against it.
struct CycleRunOptions {
    int tokens = 1; // decode steps, each generating one token
    int promptTokens = 16;
    std::uint64_t seed = 1; // weights and prompt
    int threads = 1;
    std::uint64_t maxCyclesPerToken = 50'000'000;
    std::uint64_t observeEveryCycles = 2048; // cycles of a token between calls of progress with the fabric
    // The prompt's positions before the last at once on the prefill kernels where they can run it
    // (else, or when false, one position at a time through the decode kernels).
    bool prefillKernels = true;
    CycleProgress progress;
};

struct CycleRunResult {
    std::string model;
    std::string system;
    std::vector<std::int32_t> prompt;
    std::vector<std::int32_t> tokens; // generated on the fabric
    std::vector<std::int32_t> referenceTokens;
    std::vector<TokenOnFabric> decode; // per decode step
    std::uint64_t prefillCycles = 0; // the prompt but its last token, filling the KV cache
    // Time to first token: the prefill, then the last prompt token's step, which generates it.
    std::uint64_t ttftCycles = 0;
    int prefillBlock = 0; // g of the g x g block the prefill kernels ran on; 0: one position at a time
    // The prefill kernels' closed forms for the same prompt, one after another (0: one position
    // at a time, which has none).
    double prefillModelCycles = 0.0;
    double cyclesPerToken = 0.0; // mean over the decode steps
    double tokensPerS = 0.0; // at the wafer's clock
    double clockHz = 0.0;
    double maxAbsLogitError = 0.0; // over the decode steps up to the first differing token
    bool tokensMatchReference = false;
    // The reference's top-two logit gap at the first differing token (a difference is allowed
    // only where it is below twice maxAbsLogitError); negative when all match.
    double gapAtDifference = -1.0;
    std::vector<RegionCycles> regions; // of the last decode step
    // The model-level engine's figure for each of those regions, filled by the caller that wants
    // them beside the measured ones (report::modelCyclesOfRegions); empty from runCycleLevel.
    std::vector<double> modelCycles;
    double buildS = 0.0;
    double prefillS = 0.0;
    double decodeS = 0.0; // wall time per decode step, mean
    double referenceS = 0.0;
    std::size_t hostBytes = 0;
    std::size_t peakSramBytesPerPe = 0;
    int colorsAtBusiestRouter = 0;
    std::vector<std::string> notes;
};

// BadInput for options out of range; CannotMap for a plan the kernels cannot run (multi-wafer,
// a model family without kernels) or a state larger than the memory budget (with the estimate).
Expected<CycleRunResult> runCycleLevel(
    const ModelGraph& graph, const ExecutionPlan& plan, const SystemSpec& system, const CycleRunOptions& options);

// The JSON of `run --level cycle --json`.
std::string cycleRunToJson(const CycleRunResult& result);

} // namespace waferscope::core::cyclelevel
