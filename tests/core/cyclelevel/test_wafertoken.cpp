// Whole tokens of small decoders on a small wafer at cycle level: every region's kernel on the
// fabric, the streams between them, the argmax fed back to the embedding; the tokens and
// logits against the reference forward pass.
#include "corefixtures.h"
#include "testing.h"

#include "core/compiler/decoderegions.h"
#include "core/cyclelevel/cyclerun.h"
#include "core/cyclelevel/reference.h"
#include "core/cyclelevel/referencemodel.h"
#include "core/cyclelevel/waferdecoder.h"
#include "core/kernels/experts.h"
#include "core/report/cyclelevelreport.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

using namespace waferscope::core;
using namespace waferscope::core::cyclelevel;

namespace {

std::string data(const std::string& name)
{
    return waferscope::test::dataDir() + "/cyclelevel/" + name;
}

CycleRunResult runSmall(
    const std::string& file, int tokens, int prompt, int threads = 1, bool tree = false, bool prefillKernels = true)
{
    const ModelGraph graph = waferscope::test::load(data(file));
    const SystemSpec system = waferscope::test::smallWafer(96, 96);
    ExecutionPlan plan = waferscope::test::plan(graph, system, RunMode::Inference);
    for (Region& region : plan.regions) // a kernel choice: the layout is the same
        region.kernel.treeReduced = tree;
    CycleRunOptions options;
    options.tokens = tokens;
    options.promptTokens = prompt;
    options.threads = threads;
    options.maxCyclesPerToken = 200'000; // a small token takes a few thousand
    options.prefillKernels = prefillKernels;
    Expected<CycleRunResult> result = runCycleLevel(graph, plan, system, options);
    if (!result)
        throw std::runtime_error(result.error().format());
    CycleRunResult run = std::move(result).value();
    run.modelCycles = report::modelCyclesOfRegions(run, graph, plan, system);
    return run;
}

// The largest |logit| of the reference's first token: the scale the logit error is read against.
double logitScale(const CycleRunResult& result)
{
    double largest = 0.0;
    for (const float logit : result.decode.front().logits)
        largest = std::max(largest, double(std::abs(logit)));
    return largest;
}

} // namespace

WS_TEST(aSmallLlamaGeneratesTheReferenceTokensOnTheFabric)
{
    // Rotary, RMSNorm, SwiGLU, grouped-query attention, a tied head, bfloat16. The fabric sums
    // each GEMV's partial products in its own order (per PE, then along the row), so a value
    // rounded to bfloat16 may land one unit away from the reference's; bound: the logits within
    // 1e-3 of their scale, far below the gaps that pick the tokens.
    const CycleRunResult result = runSmall("tiny_llama.yaml", 3, 4);
    WS_CHECK(result.tokensMatchReference);
    WS_CHECK_EQ(result.tokens.size(), std::size_t(3));
    WS_CHECK(result.tokens == result.referenceTokens);
    WS_CHECK(result.maxAbsLogitError <= 1e-3 * logitScale(result));
    WS_CHECK(result.cyclesPerToken > 0.0);
    // Every region of the plan is measured; the token passes through them in op order.
    WS_CHECK_EQ(result.regions.size(), std::size_t(1 + 2 * 8 + 1));
    std::uint64_t previous = 0;
    for (const RegionCycles& region : result.regions) {
        WS_CHECK(region.finishCycle >= previous || region.op.find(".k") != std::string::npos
            || region.op.find(".v") != std::string::npos || region.op.find(".gate") != std::string::npos);
        previous = std::max(previous, region.finishCycle);
        WS_CHECK(region.linkWavelets > 0);
    }
    WS_CHECK(previous <= result.decode.back().cycles);
}

WS_TEST(theFirstTokenComesAfterThePrefillAndTheLastPromptTokensStep)
{
    // A one-token prompt has nothing to prefill: its first token is its first step. A longer
    // prompt fills the cache first, then its last token's step generates the first token.
    const CycleRunResult single = runSmall("tiny_llama.yaml", 1, 1);
    WS_CHECK_EQ(single.prefillCycles, std::uint64_t(0));
    WS_CHECK_EQ(single.ttftCycles, single.decode.front().cycles);
    const CycleRunResult four = runSmall("tiny_llama.yaml", 1, 4);
    WS_CHECK_EQ(four.ttftCycles, four.prefillCycles + four.decode.front().cycles);
    WS_CHECK(four.prefillCycles > 0);
}

WS_TEST(thePromptRunsAtOnceOnThePrefillKernels)
{
    // The tiny Llama's 11 positions before the last run on a 4 x 4 block (a PE a head on a side),
    // and the keys and values they leave in the decode caches give the reference's tokens, as the
    // caches filled one position at a time through the decode kernels do. (Which is faster
    // depends on the wafer: 16 PEs against a pass of the whole strip layout a position; the run's
    // figures say, the test does not.)
    const CycleRunResult kernels = runSmall("tiny_llama.yaml", 3, 12);
    WS_CHECK_EQ(kernels.prefillBlock, 4);
    WS_CHECK(kernels.tokensMatchReference);
    WS_CHECK(kernels.maxAbsLogitError <= 1e-3 * logitScale(kernels));
    WS_CHECK(std::any_of(kernels.notes.begin(), kernels.notes.end(),
        [](const std::string& note) { return note.find("at once on the prefill kernels") != std::string::npos; }));
    const CycleRunResult positions = runSmall("tiny_llama.yaml", 3, 12, 1, false, false);
    WS_CHECK_EQ(positions.prefillBlock, 0);
    WS_CHECK(positions.tokensMatchReference);
    WS_CHECK(positions.tokens == kernels.tokens);
    std::printf("11 positions: %llu cycles on the prefill kernels, %llu one at a time; logit errors %g and %g of %g\n",
        static_cast<unsigned long long>(kernels.prefillCycles),
        static_cast<unsigned long long>(positions.prefillCycles), kernels.maxAbsLogitError, positions.maxAbsLogitError,
        logitScale(kernels));
    // The decode steps after the prefill are the same programs either way.
    WS_CHECK_EQ(kernels.cyclesPerToken, positions.cyclesPerToken);

    // The prefill's model: its kernels' closed forms (each exact on its own, test_prefilllayer)
    // one after another, with each block's cache move. On the fabric a PE goes on to the next
    // kernel as soon as its own part is done, so the run takes a little less, never more than the
    // move's estimate could hide (within 10% either way).
    std::printf("11 positions on the prefill kernels: %llu cycles, their closed forms %.0f\n",
        static_cast<unsigned long long>(kernels.prefillCycles), kernels.prefillModelCycles);
    WS_CHECK(kernels.prefillModelCycles >= 0.9 * double(kernels.prefillCycles));
    WS_CHECK(kernels.prefillModelCycles <= 1.1 * double(kernels.prefillCycles));
    WS_CHECK_EQ(positions.prefillModelCycles, 0.0);

    // A mixture of experts has no prefill kernels yet: its prompt goes one position at a time, and
    // the notes say why.
    const CycleRunResult experts = runSmall("tiny_moe.yaml", 1, 4);
    WS_CHECK_EQ(experts.prefillBlock, 0);
    WS_CHECK(std::any_of(experts.notes.begin(), experts.notes.end(),
        [](const std::string& note) { return note.find("a mixture of experts") != std::string::npos; }));
}

// The prefill leaves in every block's decode cache the keys and values the reference decoder
// caches for the same prompt, to the bit: in one round of a position a column of the attention
// region, and in several when the prompt is longer than the region is wide. 40 positions fit the
// block's SRAM only because every block's buffers share one arena (each block's after the first
// where the first's were), which the caches and the later blocks' outputs survive.
WS_TEST(thePrefillFillsTheDecodeCachesWithTheReferencesKeysAndValues)
{
    const ModelGraph graph = waferscope::test::load(data("tiny_llama.yaml"));
    const SystemSpec system = waferscope::test::smallWafer(96, 96);
    const ExecutionPlan plan = waferscope::test::plan(graph, system, RunMode::Inference);
    for (const int positions : { 4, 6, 11, 40 }) {
        FabricDecodeOptions options;
        options.capacity = positions + 1;
        options.prefillTokens = positions;
        options.maxCyclesPerToken = 400'000;
        Expected<std::unique_ptr<WaferDecoder>> built = WaferDecoder::build(graph, plan, system, options);
        WS_REQUIRE(built.hasValue());
        WaferDecoder& decoder = **built;
        WS_REQUIRE(decoder.hasPrefill());
        const std::vector<std::int32_t> prompt = promptTokens(decoder.shape(), 3, positions);
        WS_REQUIRE(decoder.prefill(prompt).hasValue());
        ReferenceModel reference(decoder.weights());
        reference.forward(prompt);
        const DecoderShape& shape = decoder.shape();
        const auto d = std::size_t(shape.headDim);
        const auto group = shape.heads / shape.kvHeads;
        int wrong = 0;
        for (int layer = 0; layer < int(shape.layers); ++layer)
            for (int head = 0; head < int(shape.heads); ++head)
                for (int j = 0; j < positions; ++j)
                    for (const bool value : { false, true }) {
                        const std::vector<float> got = decoder.cached(layer, head, j, value);
                        const std::vector<float>& cache = value ? reference.values(layer) : reference.keys(layer);
                        int bad = 0;
                        for (std::size_t i = 0; i < d; ++i)
                            bad += got[i]
                                != cache[std::size_t(j) * std::size_t(shape.kvWidth()) + std::size_t(head / group) * d
                                    + i];
                        wrong += bad;
                    }
        std::printf("%d positions: %d cached values differ from the reference's\n", positions, wrong);
        WS_CHECK_EQ(wrong, 0);
    }
}

WS_TEST(aSmallGpt2GeneratesTheReferenceTokensOnTheFabric)
{
    // Learned positions, LayerNorm with biases, GELU, biases everywhere, an untied head, FP16:
    // the other half of what the kernels support. FP16 carries three more bits than bfloat16.
    const CycleRunResult result = runSmall("tiny_gpt2.yaml", 3, 5);
    WS_CHECK(result.tokensMatchReference);
    WS_CHECK(result.tokens == result.referenceTokens);
    WS_CHECK(result.maxAbsLogitError <= 1e-3 * logitScale(result));
    WS_CHECK_EQ(result.prompt.size(), std::size_t(5));
}

WS_TEST(aSmallMixtureOfExpertsGeneratesTheReferenceTokensOnTheFabric)
{
    // Four SwiGLU experts, two chosen per token by the router on the fabric (softmax, top 2,
    // renormalised weights), ALiBi attention, LayerNorm. The experts not chosen drop their
    // input; the chosen ones' weighted outputs are summed along the experts' exits in expert
    // order, as the reference sums them.
    const CycleRunResult result = runSmall("tiny_moe.yaml", 3, 4);
    WS_CHECK(result.tokensMatchReference);
    WS_CHECK(result.tokens == result.referenceTokens);
    WS_CHECK(result.maxAbsLogitError <= 1e-3 * logitScale(result));
    const auto experts = std::find_if(result.regions.begin(), result.regions.end(),
        [](const RegionCycles& region) { return region.kernel == RegionKernelKind::Experts; });
    WS_REQUIRE(experts != result.regions.end());
    WS_CHECK(experts->measuredCycles > 0);
}

WS_TEST(theModelLevelEngineTimesTheTokenTheFabricRuns)
{
    // The engine's decode token (core/compiler/decoderegions.h: the kernels' closed forms, each fed
    // as in isolation, side-by-side ops overlapped) against the fabric's, where the hand-off
    // between regions is simulated: turns, relays, one region's exits feeding the next's taps
    // while they still compute. Without the launch-era software overhead, which the fabric does
    // not run, the two agree within 15%, with the GEMVs' rows reduced along chains or trees.
    struct Case {
        const char* file;
        bool tree;
    };
    for (const Case& run :
        { Case { "tiny_llama.yaml", false }, Case { "tiny_gpt2.yaml", false }, Case { "tiny_moe.yaml", false },
            Case { "tiny_moe_gelu.yaml", false }, Case { "tiny_llama.yaml", true }, Case { "tiny_moe.yaml", true } }) {
        const char* file = run.file;
        const CycleRunResult result = runSmall(file, 2, 3, 1, run.tree);
        WS_CHECK(result.tokensMatchReference);
        std::map<RegionKernelKind, std::pair<double, double>> byKernel;
        double model = 0.0;
        double measured = 0.0;
        for (std::size_t i = 0; i < result.regions.size(); ++i) {
            const RegionCycles& region = result.regions[i];
            byKernel[region.kernel].first += double(region.measuredCycles);
            byKernel[region.kernel].second += result.modelCycles[i];
            model += result.modelCycles[i];
            measured += double(region.measuredCycles);
        }
        const auto cycles = double(result.decode.back().cycles);
        std::printf("%-16s %-5s %8.0f cycles a token, engine %8.0f (%+5.1f%%)", file, run.tree ? "tree" : "chain",
            cycles, model, 100.0 * (model / cycles - 1.0));
        for (const auto& [kernel, share] : byKernel)
            std::printf("; %s %.0f/%.0f", toString(kernel), share.first, share.second);
        std::printf("\n");
        WS_CHECK(measured <= cycles); // the LM head's last step; the argmax's id still travels back
        WS_CHECK(std::fabs(model / cycles - 1.0) <= 0.15);
    }
}

WS_TEST(theExpertsClosedFormTimesTheExpertsTheTokenChose)
{
    // An MoE experts region on the fabric, from the router's last step: the routing weights cross
    // the region, the chosen experts multiply their buffered inputs, the weighted outputs are
    // summed from exit to exit. The closed form (core/kernels/experts.h), given the experts the
    // router chose for the token, against what the fabric measured: cycles and engine-busy cycles
    // within 15%; link wavelets as far as the region's own streams go. Two shapes: four SwiGLU
    // experts (up, gate, down) and six GELU ones.
    for (const char* file : { "tiny_moe.yaml", "tiny_moe_gelu.yaml" }) {
        const ModelGraph graph = waferscope::test::load(data(file));
        const SystemSpec system = waferscope::test::smallWafer(96, 96);
        const ExecutionPlan plan = waferscope::test::plan(graph, system, RunMode::Inference);
        const CycleRunResult result = runSmall(file, 2, 3);
        const DecodeRegions layout(graph, plan, system);
        const auto lanes = [](int count, std::int64_t total) {
            std::vector<DecodeLane> out;
            for (int i = 0; i < count; ++i)
                out.push_back({ i, total * (i + 1) / count - total * i / count });
            return out;
        };
        int checked = 0;
        for (const RegionCycles& measured : result.regions) {
            if (measured.kernel != RegionKernelKind::Experts)
                continue;
            const auto region = std::find_if(plan.regions.begin(), plan.regions.end(),
                [&](const Region& r) { return r.opName == measured.op && r.replica == 0; });
            WS_REQUIRE(region != plan.regions.end());
            WS_REQUIRE(std::ssize(measured.expertsChosen) == graph.config.topK);
            DecodeExpertsShape shape;
            shape.width = region->rect.w;
            shape.height = region->rect.h;
            shape.experts = int(graph.config.numExperts);
            shape.topK = int(graph.config.topK);
            shape.gatedFfn = graph.config.activation == ModelConfig::Activation::SwiGlu;
            shape.hidden = lanes(layout.hiddenLanes(0), graph.config.hiddenSize);
            shape.ffn = lanes(layout.ffnLanes(graph.ops[std::size_t(region->op)].layer), graph.config.filterSize);
            shape.simdWidth = system.wafer.fmacPerPePerCycle;
            shape.chosen = measured.expertsChosen;
            const KernelCost model = costDecodeExperts(shape);
            const double busy = measured.busyFraction * double(measured.measuredCycles);
            const double modelBusy = model.peBusyFraction * model.cycles;
            std::printf("%-20s %-22s experts %d,%d: cycles %llu/%.0f, busy PE-cycles %.0f/%.0f, links %llu/%.0f\n",
                file, measured.op.c_str(), measured.expertsChosen[0], measured.expertsChosen[1],
                static_cast<unsigned long long>(measured.measuredCycles), model.cycles, busy * double(measured.pes),
                modelBusy * double(measured.pes), static_cast<unsigned long long>(measured.linkWavelets),
                model.linkWavelets);
            WS_CHECK(std::fabs(model.cycles / double(measured.measuredCycles) - 1.0) <= 0.15);
            WS_CHECK(std::fabs(modelBusy / busy - 1.0) <= 0.15);
            // The region's links also carry the hand-off into the next strip when its lanes turn
            // down over the region's columns: at most the hidden vector across its height and width.
            const double handOff = double(graph.config.hiddenSize) * double(region->rect.h + region->rect.w);
            WS_CHECK(model.linkWavelets <= double(measured.linkWavelets));
            WS_CHECK(double(measured.linkWavelets) - model.linkWavelets <= handOff);
            ++checked;
        }
        WS_CHECK_EQ(checked, int(graph.config.numLayers));
    }
}

WS_TEST(threadsChangeNothingButTheWallTime)
{
    // Rows of a cycle step in parallel and read only the previous cycle's state: any thread
    // count gives the serial run's cycles and values bit for bit.
    const CycleRunResult serial = runSmall("tiny_llama.yaml", 2, 3, 1);
    const CycleRunResult parallel = runSmall("tiny_llama.yaml", 2, 3, 2);
    WS_CHECK_EQ(parallel.prefillCycles, serial.prefillCycles);
    WS_REQUIRE(parallel.decode.size() == serial.decode.size());
    for (std::size_t i = 0; i < serial.decode.size(); ++i) {
        WS_CHECK_EQ(parallel.decode[i].cycles, serial.decode[i].cycles);
        WS_CHECK(std::memcmp(parallel.decode[i].logits.data(), serial.decode[i].logits.data(),
                     serial.decode[i].logits.size() * sizeof(float))
            == 0);
    }
}

WS_TEST(whatTheKernelsCannotRunIsRefusedWithTheReason)
{
    const SystemSpec system = waferscope::test::smallWafer(96, 96);
    CycleRunOptions options;
    {
        // A training plan.
        const ModelGraph graph = waferscope::test::load(data("tiny_llama.yaml"));
        const ExecutionPlan plan = waferscope::test::plan(graph, system, RunMode::Train);
        const Expected<CycleRunResult> result = runCycleLevel(graph, plan, system, options);
        WS_REQUIRE(!result);
        WS_CHECK(result.error().kind == Diagnostic::Kind::CannotMap);
        WS_CHECK_CONTAINS(result.error().message, "inference");
    }
    {
        // More positions than the model has.
        const ModelGraph graph = waferscope::test::load(data("tiny_llama.yaml"));
        const ExecutionPlan plan = waferscope::test::plan(graph, system, RunMode::Inference);
        options.promptTokens = 60;
        options.tokens = 10;
        const Expected<CycleRunResult> result = runCycleLevel(graph, plan, system, options);
        WS_REQUIRE(!result);
        WS_CHECK_CONTAINS(result.error().message, "positions");
    }
    {
        // Not a decoder language model.
        const ModelGraph graph = waferscope::test::load(waferscope::test::sample("fc_mnist.yaml"));
        const ExecutionPlan plan = waferscope::test::plan(graph, waferscope::test::preset("cs2"), RunMode::Inference);
        const Expected<CycleRunResult> result
            = runCycleLevel(graph, plan, waferscope::test::preset("cs2"), CycleRunOptions {});
        WS_REQUIRE(!result);
        WS_CHECK(result.error().kind == Diagnostic::Kind::CannotMap);
    }
}

// A plan whose blocks share PEs in SRAM tiers (a stacked software profile) is refused, with the
// reason and the profile that runs: the fabric run places each region on PEs of its own.
WS_TEST(theCycleLevelRefusesAStackedPlanAndSaysWhichProfileRuns)
{
    const ModelGraph graph = waferscope::test::load(data("tiny_llama.yaml"));
    const SystemSpec system = waferscope::test::smallWafer(96, 96);
    CompileOptions options;
    options.mode = RunMode::Inference;
    options.stackLayers = true;
    const Expected<ExecutionPlan> stacked = compile(graph, system, options);
    WS_REQUIRE(stacked.hasValue());
    WS_CHECK(stacked->stackedLayers);
    const Expected<CycleRunResult> refused = runCycleLevel(graph, *stacked, system, CycleRunOptions {});
    WS_REQUIRE(!refused);
    WS_CHECK(refused.error().kind == Diagnostic::Kind::CannotMap);
    WS_CHECK(refused.error().message.find("stacks blocks in SRAM tiers") != std::string::npos);
    WS_CHECK(refused.error().message.find("--calibration 2024-08-launch") != std::string::npos);
}
