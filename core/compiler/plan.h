#pragma once

#include "core/common/names.h"
#include "core/fabric/wavelet.h"
#include "core/model/modelgraph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core {

// What the compiler decided for one model on one cluster: the execution mode, where every op
// runs on the wafer(s), and the kernel each region executes. The engine runs this plan; the GUI
// draws it; `waferscope-cli compile --json` prints it.

// RunMode, ExecutionChoice and ExecutionMode, and their names: core/common/names.h.

// A rectangle of PEs in fabric coordinates (x columns, y rows).
struct Rect {
    int x = 0;
    int y = 0;
    int w = 0;
    int h = 0;
    std::int64_t area() const { return std::int64_t(w) * h; }
    bool operator==(const Rect&) const = default;
    bool intersects(const Rect& other) const
    {
        return x < other.x + other.w && other.x < x + w && y < other.y + other.h && other.y < y + h;
    }
    bool inside(const Rect& outer) const
    {
        return x >= outer.x && y >= outer.y && x + w <= outer.x + outer.w && y + h <= outer.y + outer.h;
    }
};

// How a region computes its op, in the terms the fabric engine executes (core/fabric/kernels.h).
struct KernelPlan {
    enum class Kind {
        Gemv, // Linear on a pipelined/inference region: y = A x per token (fabric KernelKind::Gemv)
        StreamedGemm, // weight streaming: weights stream in along rows, activations resident
        Attention, // QK^T, softmax, AV over the region's heads (cost model only)
        Gather, // embedding lookup and its gradient scatter (cost model only)
    };
    Kind kind = Kind::Gemv;
    // The matrix the region holds or receives: rows x cols (Gemv: outputs x inputs).
    std::int64_t matrixRows = 0;
    std::int64_t matrixCols = 0;
    // Elements of that matrix per PE (rows x cols of the tile), or for StreamedGemm the resident
    // activation tile (input features x tokens).
    std::int64_t tileRows = 0;
    std::int64_t tileCols = 0;
    int broadcast = fabric::South; // direction operands are multicast in
    int reduce = fabric::East; // direction partial sums are reduced in
    std::vector<int> colors; // multicast color, the two alternating reduce colors, output color
    std::int64_t broadcastHops = 0; // longest multicast path in the region
    std::int64_t reduceHops = 0; // longest reduction chain
    // Inference: the region's GEMVs reduce their output rows along binary trees (MeshGEMV-style),
    // not chains (ExecutionPlan::treeReducedGemv).
    bool treeReduced = false;
};
const char* toString(KernelPlan::Kind kind); // "gemv", "gemm_stream", "attention", "gather"

// One op (plus the elementwise ops fused into it) on one rectangle of one wafer.
struct Region {
    int op = -1; // index into ModelGraph::ops
    std::vector<int> fused; // elementwise ops executed in place by the same PEs (norms, activations, ...)
    std::string opName;
    OpRole role = OpRole::Other; // its op's (Op::role)
    int layer = -1;
    int stage = 0; // pipeline stage (block) the region belongs to
    int system = 0; // wafer index (multi-wafer inference); 0 otherwise
    int replica = 0; // data-parallel copy of the pipeline on one wafer
    // Stacked inference: the SRAM tier of its wafer (one per block there); the tiers of a wafer
    // share their PEs, each holding a slice of every tier. 0 otherwise.
    int tier = 0;
    Rect rect;
    std::int64_t weightBytes = 0; // resident weights (pipelined, inference)
    std::int64_t stateBytes = 0; // gradients and optimizer state (pipelined training)
    std::int64_t activationBytes = 0; // activations held (in flight, or the resident micro-batch)
    std::int64_t kvCacheBytes = 0; // inference: keys and values for the configured sequence
    std::int64_t sramBytesPerPe = 0; // the largest per-PE share of all of the above
    double computeCycles = 0.0; // per sample (training) or per token (inference), all PEs in parallel
    bool sizedByMemory = false; // the region is larger than its compute share because of its bytes
    bool widenedForLanes = false; // inference: widened beyond its compute share for the decode kernels' lanes
    KernelPlan kernel;
};

// Weight streaming: what the backward pass starts from when a micro-batch's block outputs do
// not all fit in SRAM. `all_blocks` keeps every block output on the wafer; `every_k` keeps one
// every k blocks and runs the others' forward again in backward; `memoryx` writes every block
// output to MemoryX in forward and reads it back in backward.
enum class CheckpointStrategy { AllBlocks, EveryK, MemoryX };
const char* toString(CheckpointStrategy strategy); // "all_blocks", "every_k", "memoryx"

// The names of the two sets above (core/compiler/plannames.cpp), as plans and reports spell them.
template <>
std::span<const EnumName<KernelPlan::Kind>> nameTable<KernelPlan::Kind>();
template <>
std::span<const EnumName<CheckpointStrategy>> nameTable<CheckpointStrategy>();
// Spelled by name, never by number (core/common/names.h).
template <typename Json>
void to_json(Json&, KernelPlan::Kind) = delete;
template <typename Json>
void to_json(Json&, CheckpointStrategy) = delete;

// Weight streaming: one op at a time on the whole usable fabric.
struct StreamedLayer {
    int region = -1; // index into ExecutionPlan::regions
    std::int64_t bytesInForward = 0; // weights streamed in for the forward pass (non-zero only)
    std::int64_t bytesInBackward = 0; // the same weights again for the backward pass
    std::int64_t bytesOutGradients = 0; // weight gradients streamed out to MemoryX
    std::int64_t activationSramBytes = 0; // resident activations of the micro-batch while it runs
    std::int64_t maxMicroBatch = 0; // largest micro-batch whose activations fit with this op's working set
    bool recomputed = false; // every_k: runs forward again in backward (weights streamed a third time)
    std::int64_t checkpointOutBytesPerSample = 0; // memoryx: its output written to MemoryX in forward
    std::int64_t checkpointInBytesPerSample = 0; // memoryx: its stage's input read back before its backward
    double flashShare = 0.0; // of its weights, the share MemoryX holds in its flash tier (streamed from there)
};

// Multi-wafer inference: an activation crossing from one wafer to the next, per token.
struct WaferTransfer {
    int from = 0;
    int to = 0;
    std::int64_t bytesPerToken = 0;
};

// Inference: the decode kernels' layout, which the compiler decides from the regions it placed
// (core/compiler/decodelayout.h) and both the engine and the cycle-level run read.
struct DecodeLayout {
    std::vector<int> hiddenLanes; // by wafer: lanes of the hidden vector (0: no decode layout there)
    std::vector<int> ffnLanes; // by block: lanes of the feed-forward's inner values
    std::vector<int> rowsPerHead; // by block: rows a query head has, each a part of its dimensions (1 but stacked)
    int hiddenLanesOn(int wafer) const
    {
        return wafer >= 0 && wafer < int(hiddenLanes.size()) ? hiddenLanes[std::size_t(wafer)] : 0;
    }
    int ffnLanesOf(int block) const
    {
        return block >= 0 && block < int(ffnLanes.size()) ? ffnLanes[std::size_t(block)] : 0;
    }
    int rowsPerHeadOf(int block) const
    {
        return block >= 0 && block < int(rowsPerHead.size()) ? rowsPerHead[std::size_t(block)] : 1;
    }
};

struct ExecutionPlan {
    ExecutionMode mode = ExecutionMode::Pipelined;
    std::string system; // preset key
    int numSystems = 1; // CS-X systems used (data parallel in training, wafers in inference)
    int fabricWidth = 0;
    int fabricHeight = 0;
    Rect usable; // the program rectangle of one wafer
    std::int64_t sramPerPeBytes = 0; // capacity the plan may use per PE (reserve subtracted)
    int replicas = 1; // pipelined: data-parallel copies of the pipeline on each wafer
    int stages = 0; // pipelined: layer-pipeline depth
    // Inference: every block spread over its wafer's whole usable rectangle, the blocks of a wafer
    // stacked in SRAM tiers (Region::tier), instead of a strip each.
    bool stackedLayers = false;
    // Inference: the software has tree-reduced GEMVs, whose output rows reduce along binary trees
    // rooted at their last column (MeshGEMV-style), beside the chain-reduced ones; the engine
    // gives each region the faster (KernelPlan::treeReduced, engine::compileFor). Set from the
    // software profile's gemv mechanism ("tree_reduced" or "chain_reduced",
    // core/engine/calibration.h).
    bool treeReducedGemv = false;
    std::int64_t microBatch = 0; // weight streaming: the micro-batch the plan is built for
    std::int64_t maxMicroBatch = 0; // weight streaming: the largest that fits
    CheckpointStrategy checkpointStrategy = CheckpointStrategy::AllBlocks; // weight streaming (training)
    int checkpointEvery = 1; // every_k: k
    double recomputeFlopsPerSample = 0.0; // forward work run again in backward, beyond each block's own
    std::int64_t checkpointBytesPerSample = 0; // memoryx: block outputs written out (and read back) per sample
    double memoryxStoredBytes = 0.0; // weight streaming: weights and optimizer state MemoryX holds
    double memoryxFlashBytes = 0.0; // ... of which in its flash tier (beyond its DRAM tier)
    std::vector<Region> regions;
    std::vector<StreamedLayer> streamed; // weight streaming only
    std::vector<WaferTransfer> transfers; // inference only
    DecodeLayout decodeLayout; // inference only
    double peUtilization = 0.0; // PEs inside regions / usable PEs (over all wafers used)
    double sramUtilization = 0.0; // bytes held / usable SRAM (over all wafers used)
    double loadImbalance = 1.0; // largest / smallest compute cycles per PE among compute-sized regions
    double compileMs = 0.0;
    std::vector<std::string> notes; // the choices made and why, for people
};

} // namespace waferscope::core
