// No header of its own: defines checkPlan and the plan's JSON, declared in compiler.h.
// The plan's invariants and its JSON form.
#include "core/compiler/compiler.h"

#include <nlohmann/json.hpp>

#include <map>

namespace waferscope::core {

namespace {

// Stacked tiers share PEs: on every PE, the SRAM of the regions over it adds up to at most what
// the plan may use (a difference array per wafer over the usable rectangle).
void checkStackedSram(const ExecutionPlan& plan, std::vector<std::string>& problems)
{
    const std::vector<std::int64_t> fullest = fullestPeBytes(plan);
    for (std::size_t wafer = 0; wafer < fullest.size(); ++wafer)
        if (fullest[wafer] > plan.sramPerPeBytes)
            problems.push_back("the stacked tiers of wafer " + std::to_string(wafer) + " need "
                + std::to_string(fullest[wafer]) + " bytes on their fullest PE; " + std::to_string(plan.sramPerPeBytes)
                + " are available");
}

} // namespace

std::vector<std::int64_t> fullestPeBytes(const ExecutionPlan& plan)
{
    const Rect& usable = plan.usable;
    std::vector<std::int64_t> fullest(std::size_t(std::max(1, plan.numSystems)), 0);
    std::map<int, std::vector<const Region*>> byWafer;
    for (const Region& region : plan.regions)
        if (region.rect.inside(usable) && region.system >= 0 && region.system < int(fullest.size()))
            byWafer[region.system].push_back(&region);
    // Each region adds its bytes to a rectangle of a 2D difference array; the prefix sums give
    // every PE's total.
    const std::size_t stride = std::size_t(usable.w) + 1;
    std::vector<std::int64_t> bytes(stride * (std::size_t(usable.h) + 1));
    for (const auto& [wafer, regions] : byWafer) {
        std::fill(bytes.begin(), bytes.end(), 0);
        for (const Region* region : regions) {
            const auto x0 = std::size_t(region->rect.x - usable.x);
            const auto y0 = std::size_t(region->rect.y - usable.y);
            const std::size_t x1 = x0 + std::size_t(region->rect.w);
            const std::size_t y1 = y0 + std::size_t(region->rect.h);
            bytes[y0 * stride + x0] += region->sramBytesPerPe;
            bytes[y0 * stride + x1] -= region->sramBytesPerPe;
            bytes[y1 * stride + x0] -= region->sramBytesPerPe;
            bytes[y1 * stride + x1] += region->sramBytesPerPe;
        }
        std::int64_t most = 0;
        for (std::size_t y = 0; y < std::size_t(usable.h); ++y)
            for (std::size_t x = 0; x < std::size_t(usable.w); ++x) {
                std::int64_t& at = bytes[y * stride + x];
                if (x > 0)
                    at += bytes[y * stride + x - 1];
                if (y > 0)
                    at += bytes[(y - 1) * stride + x];
                if (x > 0 && y > 0)
                    at -= bytes[(y - 1) * stride + x - 1];
                most = std::max(most, at);
            }
        fullest[std::size_t(wafer)] = most;
    }
    return fullest;
}

std::vector<std::string> checkPlan(const ExecutionPlan& plan, const ModelGraph& graph, const SystemSpec& system)
{
    std::vector<std::string> problems;
    const int copies = std::max(1, plan.replicas);
    // Every op exactly once per pipeline copy (as a region's op or fused into one).
    std::vector<std::vector<int>> placed(std::size_t(copies), std::vector<int>(graph.ops.size(), 0));
    for (const Region& region : plan.regions) {
        if (region.replica < 0 || region.replica >= copies || region.op < 0 || region.op >= int(graph.ops.size())) {
            problems.push_back("region " + region.opName + " names an op or copy that does not exist");
            continue;
        }
        auto& counts = placed[std::size_t(region.replica)];
        ++counts[std::size_t(region.op)];
        for (int fused : region.fused)
            if (fused >= 0 && fused < int(graph.ops.size()))
                ++counts[std::size_t(fused)];
        if (!region.rect.inside(plan.usable) || region.rect.area() <= 0)
            problems.push_back("region " + region.opName + " is outside the usable rectangle");
        if (region.sramBytesPerPe > plan.sramPerPeBytes || plan.sramPerPeBytes > system.wafer.sramPerPeBytes)
            problems.push_back("region " + region.opName + " needs " + std::to_string(region.sramBytesPerPe)
                + " bytes per PE; " + std::to_string(plan.sramPerPeBytes) + " are available");
        // The region's own colors plus one that carries its output to the next region.
        if (int(region.kernel.colors.size()) + 1 > fabric::kMaxColors)
            problems.push_back("region " + region.opName + " uses more than 24 colors");
    }
    for (int copy = 0; copy < copies; ++copy)
        for (std::size_t op = 0; op < graph.ops.size(); ++op)
            if (placed[std::size_t(copy)][op] != 1)
                problems.push_back("op " + graph.ops[op].name + " is placed "
                    + std::to_string(placed[std::size_t(copy)][op]) + " times"
                    + (copies > 1 ? " in copy " + std::to_string(copy) : ""));
    // Spatial modes: regions of one wafer (and SRAM tier) do not overlap (weight streaming shares
    // the fabric in time).
    if (plan.mode != ExecutionMode::WeightStreaming) {
        std::map<std::pair<int, int>, std::vector<const Region*>> byWafer;
        for (const Region& region : plan.regions)
            byWafer[{ region.system, plan.stackedLayers ? region.tier : 0 }].push_back(&region);
        for (auto& [at, regions] : byWafer) {
            const int wafer = at.first;
            std::sort(
                regions.begin(), regions.end(), [](const Region* a, const Region* b) { return a->rect.x < b->rect.x; });
            for (std::size_t i = 0; i < regions.size(); ++i)
                for (std::size_t j = i + 1;
                     j < regions.size() && regions[j]->rect.x < regions[i]->rect.x + regions[i]->rect.w; ++j)
                    if (regions[i]->rect.intersects(regions[j]->rect))
                        problems.push_back("regions " + regions[i]->opName + " and " + regions[j]->opName
                            + " overlap on wafer " + std::to_string(wafer));
        }
    }
    if (plan.stackedLayers)
        checkStackedSram(plan, problems);
    return problems;
}

std::string planToJson(const ExecutionPlan& plan, const ModelGraph& graph, int indent)
{
    using nlohmann::json;
    json regions = json::array();
    for (const Region& region : plan.regions) {
        json fused = json::array();
        for (int op : region.fused)
            fused.push_back(graph.ops[std::size_t(op)].name);
        const KernelPlan& kernel = region.kernel;
        regions.push_back({
            { "op", region.opName },
            { "layer", region.layer },
            { "system", region.system },
            { "x", region.rect.x },
            { "y", region.rect.y },
            { "w", region.rect.w },
            { "h", region.rect.h },
            { "sram_bytes_per_pe", region.sramBytesPerPe },
            { "compute_cycles", region.computeCycles },
            { "kind", toString(graph.ops[std::size_t(region.op)].kind) },
            { "fused", fused },
            { "stage", region.stage },
            { "replica", region.replica },
            { "tier", region.tier },
            { "weight_bytes", region.weightBytes },
            { "state_bytes", region.stateBytes },
            { "activation_bytes", region.activationBytes },
            { "kv_cache_bytes", region.kvCacheBytes },
            { "sized_by_memory", region.sizedByMemory },
            { "widened_for_lanes", region.widenedForLanes },
            { "kernel",
                { { "kind", toString(kernel.kind) }, { "matrix_rows", kernel.matrixRows },
                    { "matrix_cols", kernel.matrixCols }, { "tile_rows", kernel.tileRows },
                    { "tile_cols", kernel.tileCols }, { "broadcast", fabric::directionName(kernel.broadcast) },
                    { "reduce", fabric::directionName(kernel.reduce) }, { "colors", kernel.colors },
                    { "broadcast_hops", kernel.broadcastHops }, { "reduce_hops", kernel.reduceHops },
                    { "reduction", kernel.treeReduced ? "tree" : "chain" } } },
        });
    }
    json out = {
        { "mode", toString(plan.mode) },
        { "system", plan.system },
        { "num_systems", plan.numSystems },
        { "fabric",
            { { "width", plan.fabricWidth }, { "height", plan.fabricHeight }, { "usable_width", plan.usable.w },
                { "usable_height", plan.usable.h }, { "usable_x", plan.usable.x }, { "usable_y", plan.usable.y },
                { "sram_bytes_per_pe_available", plan.sramPerPeBytes } } },
        { "regions", regions },
        { "pe_utilization", plan.peUtilization },
        { "sram_utilization", plan.sramUtilization },
        { "load_imbalance", plan.loadImbalance },
        { "compile_ms", plan.compileMs },
        { "notes", plan.notes },
    };
    // Training keeps what backward needs: per step at the config's batch_size, the forward work
    // run again (each block's from its checkpoint, plus every_k's segments) and the bytes
    // written to MemoryX and read back (memoryx).
    const bool training = plan.mode != ExecutionMode::Inference;
    const double batch = double(std::max<std::int64_t>(1, graph.config.batchSize));
    const bool streaming = plan.mode == ExecutionMode::WeightStreaming;
    out["checkpoint_strategy"] = training ? json(toString(plan.checkpointStrategy)) : json(nullptr);
    out["checkpoint_every"] = training ? json(plan.checkpointEvery) : json(nullptr);
    out["recompute_flops_per_step"]
        = streaming ? (graph.fwdFlopsPerSample + plan.recomputeFlopsPerSample) * batch : 0.0;
    out["checkpoint_bytes_per_step"] = 2.0 * double(plan.checkpointBytesPerSample) * batch;
    if (plan.mode == ExecutionMode::Pipelined) {
        out["replicas"] = plan.replicas;
        out["stages"] = plan.stages;
    }
    if (plan.mode == ExecutionMode::WeightStreaming) {
        json layers = json::array();
        for (const StreamedLayer& layer : plan.streamed)
            layers.push_back({ { "op", plan.regions[std::size_t(layer.region)].opName },
                { "layer", plan.regions[std::size_t(layer.region)].layer },
                { "bytes_in_forward", layer.bytesInForward }, { "bytes_in_backward", layer.bytesInBackward },
                { "bytes_out_gradients", layer.bytesOutGradients },
                { "activation_sram_bytes", layer.activationSramBytes }, { "max_micro_batch", layer.maxMicroBatch },
                { "recomputed", layer.recomputed },
                { "checkpoint_out_bytes_per_sample", layer.checkpointOutBytesPerSample },
                { "checkpoint_in_bytes_per_sample", layer.checkpointInBytesPerSample },
                { "flash_share", layer.flashShare } });
        out["micro_batch"] = plan.microBatch;
        out["max_micro_batch"] = plan.maxMicroBatch;
        out["memoryx_stored_bytes"] = plan.memoryxStoredBytes;
        out["memoryx_flash_bytes"] = plan.memoryxFlashBytes;
        out["weight_streaming"] = layers;
    }
    if (plan.mode == ExecutionMode::Inference) {
        json transfers = json::array();
        for (const WaferTransfer& transfer : plan.transfers)
            transfers.push_back(
                { { "from", transfer.from }, { "to", transfer.to }, { "bytes_per_token", transfer.bytesPerToken } });
        out["transfers"] = transfers;
        out["stacked_layers"] = plan.stackedLayers;
        out["gemv"] = plan.treeReducedGemv ? "tree_reduced" : "chain_reduced";
    }
    return out.dump(indent);
}

} // namespace waferscope::core
