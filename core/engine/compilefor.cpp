// No header of its own: defines compileFor and compileRun, declared in engine.h.
// The plan a software profile builds: the compiler's, with the layout its mechanisms choose.
#include "core/engine/engine.h"

#include "core/compiler/decoderegions.h"
#include "core/engine/enginedetail.h"

#include <algorithm>

namespace waferscope::core::engine {

namespace {

// With tree-reduced GEMVs in the software, each region takes the tree where its decode kernel is
// faster in closed form (ties keep the chain): the tree pays on wide regions with few outputs a
// row, the chain on narrow ones or many outputs a row. The choice is by a token's latency; the
// tree's root adds a vector a level, so its PEs are busier, which a band's shared PEs pay when a
// prompt's positions (or a drafted pass) follow one another at its busiest PE's pace.
Expected<ExecutionPlan> compileWithReductions(
    const ModelGraph& graph, const SystemSpec& system, const CompileOptions& options)
{
    Expected<ExecutionPlan> compiled = compile(graph, system, options);
    if (!compiled || !compiled->treeReducedGemv)
        return compiled;
    ExecutionPlan plan = std::move(compiled).value();
    ExecutionPlan trees = plan;
    for (Region& region : trees.regions)
        region.kernel.treeReduced = true;
    for (Region& region : plan.regions)
        region.kernel.treeReduced = false;
    const DecodeRegions chained(graph, plan, system);
    const DecodeRegions treed(graph, trees, system);
    int chosen = 0;
    int gemvs = 0;
    for (std::size_t i = 0; i < plan.regions.size(); ++i) {
        const std::optional<DecodeRegionCost> chain = chained.cost(plan.regions[i], 0);
        const std::optional<DecodeRegionCost> tree = treed.cost(trees.regions[i], 0);
        if (!chain || !tree || chain->cost.cycles == tree->cost.cycles)
            continue;
        ++gemvs;
        if (tree->cost.cycles < chain->cost.cycles) {
            plan.regions[i].kernel.treeReduced = true;
            ++chosen;
        }
    }
    plan.notes.push_back("tree-reduced GEMVs (MeshGEMV-style: each output row summed along a binary tree into its "
                         "last column, a color a level) where faster than the chain: "
        + std::to_string(chosen) + " of " + std::to_string(gemvs) + " regions whose GEMVs can take either");
    return plan;
}

} // namespace

Expected<ExecutionPlan> compileFor(const ModelGraph& graph, const SystemSpec& system, const CompileOptions& options,
    const Calibration& calibration, const RunOptions& inference)
{
    CompileOptions profiled = options;
    profiled.treeReducedGemv = calibration.mechanisms.gemv == GemvReduction::Tree;
    CompileOptions strips = profiled;
    strips.stackLayers = false;
    Expected<ExecutionPlan> best = compileWithReductions(graph, system, strips);
    if (!best || options.mode != RunMode::Inference || calibration.mechanisms.regionSizing != RegionSizing::Stacked)
        return best;
    RunOptions token = inference;
    token.mode = RunMode::Inference;
    token.maxSteps = 1;
    token.users = 1;
    // The layout is chosen on the target's own token; a draft model (speculative decoding) is
    // placed beside whichever layout wins.
    Calibration plain = calibration;
    plain.mechanisms.speculativeDecoding = SpeculativeDecoding::Off;
    const auto rate = [&](const ExecutionPlan& plan) {
        const Expected<RunResult> result = run(plan, graph, system, token, plain);
        return result ? result->metrics.tokensPerS : 0.0;
    };
    double fastest = rate(*best);
    int tiers = 1; // the most blocks a wafer stacks: more bands than that give the same plan
    for (int bands = 1; bands <= std::min(kMaxStackBands, tiers); ++bands) {
        if (inference.cancelled && inference.cancelled())
            return Diagnostic { "<compile>", 0, 0, "cancelled", Diagnostic::Kind::Internal };
        CompileOptions stacked = profiled;
        stacked.stackLayers = true;
        stacked.stackBands = bands;
        Expected<ExecutionPlan> plan = compileWithReductions(graph, system, stacked);
        if (!plan)
            continue;
        if (bands == 1)
            for (const Region& region : plan->regions)
                tiers = std::max(tiers, region.tier + 1);
        if (plan->numSystems != best->numSystems)
            continue;
        if (const double tokensPerS = rate(*plan); tokensPerS > fastest) {
            fastest = tokensPerS;
            best = std::move(plan);
        }
    }
    ExecutionPlan chosen = std::move(best).value();
    chosen.notes.push_back("software profile " + calibration.profile + " lays blocks out in strips or stacks them "
        + "in SRAM tiers: of the strips and stacked tiers in 1 to " + std::to_string(kMaxStackBands) + " bands on "
        + std::to_string(chosen.numSystems) + (chosen.numSystems == 1 ? " wafer" : " wafers")
        + ", this layout's decode token is the fastest (" + (chosen.stackedLayers ? "stacked" : "strips") + ")");
    return chosen;
}

Expected<CompiledRun> compileRun(const ModelGraph& graph, const SystemSpec& system, const CompileOptions& compile,
    const RunOptions& options, const Calibration& calibration)
{
    Expected<ExecutionPlan> plan = compileFor(graph, system, compile, calibration, options);
    if (!plan)
        return plan.error();
    CompiledRun compiled { std::move(plan).value(), options };
    if (options.mode == RunMode::Inference
        && calibration.mechanisms.speculativeDecoding == SpeculativeDecoding::DraftModel
        && calibration.speculation.acceptanceRate > 0.0 && !options.draft) {
        Expected<std::shared_ptr<const DraftPlacement>> draft = placeDraft(compiled.plan, system, calibration, options);
        if (!draft)
            return draft.error();
        if (std::optional<Diagnostic> mismatch = detail::draftMismatch(graph, (*draft)->graph, calibration))
            return *mismatch;
        compiled.options.draft = *draft;
    }
    return compiled;
}

} // namespace waferscope::core::engine
