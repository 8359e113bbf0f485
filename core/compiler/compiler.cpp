// Execution-mode choice and the three placements: layer-pipelined training, weight streaming,
// and multi-wafer inference.
#include "core/compiler/compiler.h"

#include "core/common/units.h"
#include "core/compiler/decodelayout.h"
#include "core/compiler/units.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

namespace waferscope::core {

namespace compiler {
std::string planWeightStreaming(const std::vector<Unit>& units, const ModelGraph& graph, const SystemSpec& system,
    std::int64_t capacity, ExecutionPlan& plan); // weightstreaming.cpp
}

namespace {

using compiler::ceilDiv;
using compiler::Unit;

Diagnostic cannotMap(const std::string& what, const std::string& reason)
{
    return { what, 0, 0, reason, Diagnostic::Kind::CannotMap };
}

std::int64_t totalBytes(const std::vector<Unit>& units)
{
    std::int64_t total = 0;
    for (const Unit& unit : units)
        total += unit.bytes();
    return total;
}

// Layer pipelining on one wafer, replicated data-parallel when the model cannot use it all.
std::string planPipelined(std::vector<Unit> units, int stages, const ModelGraph& graph, const SystemSpec& system,
    std::int64_t capacity, int numSystems, ExecutionPlan& plan)
{
    compiler::costUnitsPipelined(units, graph, stages);
    const std::int64_t usablePes = plan.usable.area();
    const std::int64_t bytes = totalBytes(units);
    if (bytes > usablePes * capacity)
        return "weights, gradients, optimizer state and the activations of the samples in flight need "
            + formatBytes(double(bytes)) + "; one wafer holds " + formatBytes(double(usablePes * capacity))
            + " for programs";
    std::int64_t needPes = 0;
    std::int64_t usefulPes = 0;
    for (const Unit& unit : units) {
        needPes += compiler::memoryPes(unit, capacity);
        // Saturates: ops that any number of PEs would speed up count as "the whole wafer".
        const std::int64_t cap = std::numeric_limits<std::int64_t>::max() / 4;
        usefulPes = std::min(
            cap, usefulPes + std::min(cap, std::max(compiler::memoryPes(unit, capacity), unit.maxUsefulPes)));
    }
    // Copies of the pipeline running data-parallel on one wafer: a small model cannot use the
    // whole fabric (its ops reach the most PEs that make them faster), so smaller copies side by
    // side do more samples per cycle. Try each count the SRAM allows (up to the samples one
    // system gets per step) and keep the one with the most samples per cycle.
    const std::int64_t samplesPerSystem = std::max<std::int64_t>(1, graph.config.batchSize / numSystems);
    const std::int64_t maxCopies = std::max<std::int64_t>(
        1, std::min<std::int64_t>({ usablePes / needPes, samplesPerSystem, usefulPes >= usablePes ? 1 : 64 }));
    std::string failure;
    double bestRate = 0.0;
    std::int64_t copies = 0;
    Rect bestBand;
    std::vector<Region> best;
    for (std::int64_t count = 1; count <= maxCopies; ++count) {
        // Copies tile the usable rectangle as a grid of equal bands, as square as it allows.
        const int across = int(
            std::clamp<std::int64_t>(std::llround(std::sqrt(double(count) * plan.usable.w / plan.usable.h)), 1, count));
        const int down = int(ceilDiv(count, across));
        const Rect band { plan.usable.x, plan.usable.y, plan.usable.w / across, plan.usable.h / down };
        std::vector<Region> regions;
        const std::string why
            = compiler::layoutStrips(units, 0, units.size(), band, capacity, graph, system, true, 0, 0, regions);
        if (!why.empty()) {
            if (count == 1)
                failure = why;
            continue;
        }
        double slowest = 0.0;
        for (const Region& region : regions)
            slowest = std::max(slowest, region.computeCycles);
        const double rate = double(count) / std::max(slowest, 1e-9);
        if (rate > bestRate * 1.0001) {
            bestRate = rate;
            copies = count;
            bestBand = band;
            best = std::move(regions);
        }
    }
    if (copies == 0)
        return failure.empty() ? "the pipeline does not fit the wafer" : failure;
    {
        const Rect band = bestBand;
        const int across = plan.usable.w / band.w;
        plan.regions.clear();
        for (std::int64_t copy = 0; copy < copies; ++copy)
            for (Region region : best) {
                region.replica = int(copy);
                region.rect.x += int(copy % across) * band.w;
                region.rect.y += int(copy / across) * band.h;
                plan.regions.push_back(std::move(region));
            }
        plan.replicas = int(copies);
        plan.stages = stages;
        plan.notes.push_back("layer-pipelined: " + std::to_string(stages) + " stages (one per block), "
            + std::to_string(units.size()) + " regions per pipeline; weights, gradients and optimizer state ("
            + formatBytes(double(bytes)) + " with the activations of the samples in flight) stay in SRAM");
        if (copies > 1)
            plan.notes.push_back("one copy of the pipeline cannot use the whole wafer, so " + std::to_string(copies)
                + " copies run data-parallel, each on " + std::to_string(band.w) + " x " + std::to_string(band.h)
                + " PEs");
        plan.notes.push_back("regions are sized for a bottleneck 1% above the smallest feasible one; a region that "
                             "would finish early takes fewer rows than its strip (the rest of the strip stays idle)");
        return {};
    }
}

// Stacked inference: the stages [first, last) of one wafer as SRAM tiers. The usable rows are
// cut into `bands` bands of equal height, and consecutive tiers share a band (as few per band as
// the bands allow), each over the band's whole width and height. A tier gets each PE's SRAM in
// proportion to its bytes among the tiers of its band, so that every PE holds its slice of each;
// tiers alternate east to west, so that a block ends where the next begins.
std::string layoutTiers(const std::vector<Unit>& units, std::size_t first, std::size_t last, const ModelGraph& graph,
    const SystemSpec& system, std::int64_t capacity, const Rect& usable, int bands, int wafer,
    std::vector<Region>& regions)
{
    struct Tier {
        std::size_t begin = 0; // its units
        std::size_t end = 0;
        std::int64_t bytes = 0;
    };
    std::vector<Tier> tiers;
    for (std::size_t begin = first; begin < last;) {
        Tier tier { begin, begin, 0 };
        while (tier.end < last && units[tier.end].stage == units[begin].stage)
            tier.bytes += units[tier.end++].bytes();
        tiers.push_back(tier);
        begin = tier.end;
    }
    const int count = int(tiers.size());
    bands = std::clamp(bands, 1, std::min(count, usable.h));
    const int perBand = (count + bands - 1) / bands;
    bands = (count + perBand - 1) / perBand;
    for (int band = 0; band < bands; ++band) {
        const Rect rect { usable.x, usable.y + usable.h * band / bands, usable.w,
            usable.h * (band + 1) / bands - usable.h * band / bands };
        const int firstTier = band * perBand;
        const int lastTier = std::min(count, firstTier + perBand);
        std::int64_t total = 0;
        for (int tier = firstTier; tier < lastTier; ++tier)
            total += tiers[std::size_t(tier)].bytes;
        for (int tier = firstTier; tier < lastTier; ++tier) {
            const Tier& held = tiers[std::size_t(tier)];
            const std::int64_t share = std::max<std::int64_t>(
                1, std::int64_t(double(capacity) * double(held.bytes) / double(std::max<std::int64_t>(1, total))));
            std::vector<Region> placed;
            const std::string failure = compiler::layoutStrips(
                units, held.begin, held.end, rect, share, graph, system, false, wafer, 0, placed, true);
            if (!failure.empty())
                return "tier " + std::to_string(tier) + ": " + failure;
            for (Region& region : placed) {
                region.tier = tier;
                if (tier % 2 == 1)
                    region.rect.x = 2 * rect.x + rect.w - region.rect.x - region.rect.w;
                regions.push_back(std::move(region));
            }
        }
    }
    return {};
}

// Stacked inference: a block's key and value projections join its query projection's region (one
// GEMV of the three matrices on the same input, as inference engines fuse them). In a tier their
// bytes alone would give k and v a few columns each, and the columns of a region that takes the
// hidden vector bound the lanes it travels in (core/compiler/decoderegions.h).
void fuseProjections(std::vector<Unit>& units, const ModelGraph& graph)
{
    const auto roleOf = [&](const Unit& unit) { return graph.ops[std::size_t(unit.op)].role; };
    std::vector<Unit> fused;
    for (Unit& unit : units) {
        if ((roleOf(unit) == OpRole::Key || roleOf(unit) == OpRole::Value) && !fused.empty()
            && roleOf(fused.back()) == OpRole::Query && fused.back().stage == unit.stage) {
            Unit& q = fused.back();
            q.fused.push_back(unit.op);
            q.fused.insert(q.fused.end(), unit.fused.begin(), unit.fused.end());
            q.work += unit.work;
            q.weightBytes += unit.weightBytes;
            q.activationBytes += unit.activationBytes;
            q.kvCacheBytes += unit.kvCacheBytes;
            q.maxUsefulPes += unit.maxUsefulPes;
            continue;
        }
        fused.push_back(std::move(unit));
    }
    units = std::move(fused);
}

// Inference: blocks in order onto as few wafers as hold their weights and KV cache, each in a
// strip of its own, or (stacked) each over the whole wafer in a tier of its own.
std::string planInference(std::vector<Unit> units, const ModelGraph& graph, const SystemSpec& system,
    std::int64_t capacity, const CompileOptions& options, ExecutionPlan& plan)
{
    const bool stacked = options.stackLayers;
    compiler::costUnitsInference(units, graph);
    if (stacked)
        fuseProjections(units, graph);
    const std::int64_t waferBytes = plan.usable.area() * capacity;
    std::size_t first = 0;
    int wafer = 0;
    while (first < units.size()) {
        // The longest run of whole stages whose bytes fit this wafer and that lays out.
        std::size_t last = first;
        std::int64_t bytes = 0;
        while (last < units.size()) {
            std::size_t end = last;
            std::int64_t stageBytes = 0;
            while (end < units.size() && units[end].stage == units[last].stage)
                stageBytes += units[end++].bytes();
            if (bytes + stageBytes > waferBytes)
                break;
            bytes += stageBytes;
            last = end;
        }
        if (last == first)
            return "the stage of " + graph.ops[std::size_t(units[first].op)].name + " needs more than one wafer ("
                + formatBytes(double(waferBytes)) + " of SRAM for programs)";
        std::string failure;
        std::vector<Region> regions;
        while (last > first) {
            regions.clear();
            failure = stacked ? layoutTiers(
                          units, first, last, graph, system, capacity, plan.usable, options.stackBands, wafer, regions)
                              : compiler::layoutStrips(
                                  units, first, last, plan.usable, capacity, graph, system, false, wafer, 0, regions);
            if (failure.empty())
                break;
            const int stage = units[last - 1].stage; // drop the last stage and try again
            while (last > first && units[last - 1].stage == stage)
                --last;
        }
        if (last == first)
            return failure;
        for (Region& region : regions)
            plan.regions.push_back(std::move(region));
        if (last < units.size()) {
            const Op& boundary = graph.ops[std::size_t(units[last - 1].op)];
            plan.transfers.push_back({ wafer, wafer + 1, boundary.activationBytesPerToken });
        }
        first = last;
        ++wafer;
    }
    plan.numSystems = wafer;
    if (wafer > 1) // the sampled token goes back to the first wafer for the next step
        plan.transfers.push_back({ wafer - 1, 0, 4 });
    std::int64_t weights = 0;
    std::int64_t kv = 0;
    for (const Unit& unit : units) {
        weights += unit.weightBytes;
        kv += unit.kvCacheBytes;
    }
    plan.notes.push_back("inference: " + formatBytes(double(weights)) + " of weights and " + formatBytes(double(kv))
        + " of KV cache (one user, " + std::to_string(graph.config.sequenceLength) + " tokens) on "
        + std::to_string(wafer) + (wafer == 1 ? " wafer" : " wafers") + " of " + formatBytes(double(waferBytes))
        + "; only activations cross wafers");
    plan.stackedLayers = stacked;
    if (stacked)
        plan.notes.push_back("stacked layers: the usable rows of a wafer are cut into "
            + std::to_string(options.stackBands) + (options.stackBands == 1 ? " band" : " bands")
            + " (at most; fewer when a wafer has fewer blocks), and consecutive blocks share a band in SRAM tiers, "
              "each block spread over the whole band (every PE holds a slice of each), so that every op of a token "
              "runs on more PEs than a strip of its own would give it");
    return {};
}

// Data-parallel training spans systems through SwarmX, up to its largest cluster; a generation
// without it (CS-1) runs on one system. More is meaningless, whether --num_csx or the config asks.
std::optional<Diagnostic> systemCountProblem(bool fromOption, int numSystems, const SystemSpec& system)
{
    const int most = system.swarmx.supported ? system.swarmx.maxSystems : 1;
    if (numSystems <= most)
        return std::nullopt;
    const std::string why = system.swarmx.supported
        ? "SwarmX joins at most " + std::to_string(most) + " " + system.displayName + " systems"
        : system.displayName + " has no SwarmX, so it trains on one system only";
    if (fromOption)
        return Diagnostic { "--num_csx", 0, 0,
            "num_csx is " + std::to_string(numSystems) + ", expected "
                + (most == 1 ? std::string("1") : "1 to " + std::to_string(most)) + " for " + system.displayName + ": "
                + why };
    return Diagnostic { "--system", 0, 0,
        "the config's num_csx is " + std::to_string(numSystems) + ", but " + why
            + (most == 1 ? "; give --num_csx 1, or a system with SwarmX"
                         : "; give --num_csx 1 to " + std::to_string(most) + ", or a larger system"),
        Diagnostic::Kind::CannotMap };
}

void summarize(ExecutionPlan& plan, const SystemSpec& system)
{
    std::int64_t area = 0;
    double bytes = 0.0;
    double slowest = 0.0;
    double fastest = std::numeric_limits<double>::infinity();
    // Stacked tiers share their PEs: a band counts the PEs of its widest-spread tier once.
    std::map<std::tuple<int, int, int>, std::int64_t> tierArea; // (wafer, band's first row, tier) -> PEs
    for (const Region& region : plan.regions) {
        if (plan.stackedLayers)
            tierArea[{ region.system, region.rect.y, region.tier }] += region.rect.area();
        else if (plan.mode != ExecutionMode::WeightStreaming)
            area += region.rect.area();
        bytes += double(region.weightBytes + region.stateBytes + region.activationBytes + region.kvCacheBytes);
        // Weight streaming runs one op at a time on the whole fabric: no regions to balance.
        if (plan.mode != ExecutionMode::WeightStreaming && !region.sizedByMemory && !region.widenedForLanes
            && region.computeCycles > 0.0) {
            slowest = std::max(slowest, region.computeCycles);
            fastest = std::min(fastest, region.computeCycles);
        }
    }
    std::map<std::pair<int, int>, std::int64_t> bandArea;
    for (const auto& [at, pes] : tierArea) {
        std::int64_t& band = bandArea[{ std::get<0>(at), std::get<1>(at) }];
        band = std::max(band, pes);
    }
    for (const auto& [at, pes] : bandArea)
        area += pes;
    if (plan.mode == ExecutionMode::WeightStreaming) {
        area = plan.usable.area();
        bytes = 0.0;
        for (const StreamedLayer& layer : plan.streamed)
            bytes = std::max(bytes, double(layer.activationSramBytes));
    }
    const double wafers = plan.mode == ExecutionMode::Inference ? std::max(1, plan.numSystems) : 1.0;
    plan.peUtilization = double(area) / (double(plan.usable.area()) * wafers);
    plan.sramUtilization = bytes / (double(plan.usable.area()) * wafers * double(system.wafer.sramPerPeBytes));
    plan.loadImbalance = slowest > 0.0 ? slowest / fastest : 1.0;
}

} // namespace

Expected<ExecutionPlan> compile(const ModelGraph& graph, const SystemSpec& system, const CompileOptions& options)
{
    const auto start = std::chrono::steady_clock::now();
    ExecutionPlan plan;
    plan.system = system.name;
    plan.fabricWidth = system.wafer.fabricWidth;
    plan.fabricHeight = system.wafer.fabricHeight;
    plan.usable = { system.wafer.usableX, system.wafer.usableY, system.wafer.usableWidth, system.wafer.usableHeight };
    const std::int64_t capacity = system.wafer.sramPerPeBytes - options.sramReservePerPe;
    plan.sramPerPeBytes = capacity;
    if (graph.ops.empty())
        return cannotMap(graph.config.fileName, "the model has no ops to place");
    if (capacity <= 0 || plan.usable.area() <= 0)
        return cannotMap("--system", "the system has no usable PEs or SRAM");
    const int numSystems
        = options.numSystems > 0 ? options.numSystems : int(std::max<std::int64_t>(1, graph.config.numCsx));
    if (options.mode != RunMode::Inference)
        if (std::optional<Diagnostic> refused = systemCountProblem(options.numSystems > 0, numSystems, system))
            return *refused;
    int stages = 0;
    const std::vector<Unit> units = compiler::buildUnits(graph, system, stages);

    std::string failure;
    if (options.mode == RunMode::Inference) {
        plan.mode = ExecutionMode::Inference;
        failure = planInference(units, graph, system, capacity, options, plan);
        if (!failure.empty())
            return cannotMap("--mode", failure);
        plan.treeReducedGemv = options.treeReducedGemv;
        plan.decodeLayout = decodeLayoutOf(graph, plan);
    } else {
        plan.numSystems = numSystems;
        const ExecutionPlan base = plan;
        std::string pipelinedFailure;
        if (options.execution != ExecutionChoice::WeightStreaming) {
            plan.mode = ExecutionMode::Pipelined;
            pipelinedFailure = planPipelined(units, stages, graph, system, capacity, numSystems, plan);
            if (!pipelinedFailure.empty() && options.execution == ExecutionChoice::Pipelined)
                return cannotMap("--execution", "pipelined execution is infeasible: " + pipelinedFailure);
        }
        if (options.execution == ExecutionChoice::WeightStreaming || !pipelinedFailure.empty()) {
            plan = base;
            plan.mode = ExecutionMode::WeightStreaming;
            if (!system.memoryx.supported)
                return cannotMap(options.execution == ExecutionChoice::WeightStreaming ? "--execution" : "--system",
                    system.displayName + " has no MemoryX, so weight streaming is not available"
                        + (pipelinedFailure.empty() ? std::string()
                                                    : "; pipelined execution fails: " + pipelinedFailure));
            const double stored = double(graph.weightBytes + graph.optimizerStateBytes);
            if (stored > system.memoryx.capacityBytes)
                return cannotMap("--system",
                    "weights and optimizer state (" + formatBytes(stored) + ") exceed the largest MemoryX ("
                        + formatBytes(system.memoryx.capacityBytes) + ")");
            failure = compiler::planWeightStreaming(units, graph, system, capacity, plan);
            if (!failure.empty())
                return cannotMap("--execution", "weight streaming is infeasible: " + failure);
            if (!pipelinedFailure.empty())
                plan.notes.insert(plan.notes.begin(),
                    "weight streaming because pipelined execution does not fit: " + pipelinedFailure);
        }
    }
    if (capacity < system.wafer.sramPerPeBytes)
        plan.notes.push_back(formatBytes(double(options.sramReservePerPe))
            + " of each PE's SRAM is kept for code, task and route tables (an assumption)");
    summarize(plan, system);
    plan.compileMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return plan;
}

} // namespace waferscope::core
