#pragma once

#include "core/common/expected.h"
#include "core/compiler/plan.h"
#include "core/fabric/kernels.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"

#include <string>
#include <vector>

namespace waferscope::core {

struct CompileOptions {
    RunMode mode = RunMode::Train;
    ExecutionChoice execution = ExecutionChoice::Auto;
    int numSystems = 0; // training: CS-X systems (0: the config's num_csx); inference: ignored
    // Inference: stack the blocks of a wafer in SRAM tiers, each block spread over the whole
    // usable rectangle (every PE holds a slice of each), so that every op of a token runs on many
    // more PEs; else a strip per block (each PE holds one op). Set from the software profile's
    // region_sizing mechanism ("stacked" or "by_weights", core/engine/calibration.h).
    bool stackLayers = false;
    // Stacked: the bands of equal height the usable rows are cut into, consecutive tiers sharing a
    // band (1: every tier over the whole wafer). Tall bands give each op more PEs; short ones
    // shorter paths across them: the engine picks the count whose token is fastest.
    int stackBands = 1;
    // Inference: tree-reduced GEMVs (ExecutionPlan::treeReducedGemv).
    bool treeReducedGemv = false;
    // SRAM per PE kept back for the program: code, task and route tables, I/O buffers. Not
    // published; an assumption of 4 KiB of the 48 KiB (the SDK examples' code is a few KiB).
    std::int64_t sramReservePerPe = 4096;
};

// Chooses the execution mode and places every op. A model that cannot be mapped (does not fit,
// a forced mode that is infeasible, a system without MemoryX) gives a Diagnostic whose message
// is the reason; its `file` is the option or input that decided it.
Expected<ExecutionPlan> compile(const ModelGraph& graph, const SystemSpec& system, const CompileOptions& options);

// The plan's invariants: regions disjoint (per wafer, for spatial modes) and inside the usable
// rectangle, SRAM per PE within capacity, every op placed exactly once, at most 24 colors per
// router. Returns one message per violation; empty when the plan is sound.
std::vector<std::string> checkPlan(const ExecutionPlan& plan, const ModelGraph& graph, const SystemSpec& system);

// The SRAM of each wafer's fullest PE, in bytes: the sum over the regions that cover it (stacked
// tiers share PEs). Indexed by wafer; a wafer without regions has 0.
std::vector<std::int64_t> fullestPeBytes(const ExecutionPlan& plan);

// The fabric kernel that executes a region's plan at cycle level (fabric::runKernel), for one
// token: GEMV regions of pipelined and inference plans. Other kinds give the reason they cannot.
Expected<fabric::KernelConfig> fabricKernelFor(const Region& region, const ModelGraph& graph, const SystemSpec& system);
// The plan's FMAC bound for one token of a GEMV kernel, in cycles: each PE's multiply-adds over
// its tile, `simdWidth` at a time (a lower bound on what the fabric run takes).
double fmacBoundCycles(const KernelPlan& kernel, int simdWidth);

// What MemoryX stores for a trained model: each op's weights and optimizer state, or the preset's
// bytes per parameter when that is more (frozen ops: their own). A weight-streaming plan's
// memoryxStoredBytes.
double memoryxStateBytes(const ModelGraph& graph, const MemoryXSpec& memoryx);

// The plan as the JSON object `waferscope-cli compile --json` prints.
std::string planToJson(const ExecutionPlan& plan, const ModelGraph& graph, int indent = -1);

} // namespace waferscope::core
