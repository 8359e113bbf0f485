#pragma once

// Private to core/engine: the event simulation of a weight-streaming run (wsengine.cpp) and the
// costs it runs on.
#include "core/engine/enginedetail.h"

#include <cstdint>
#include <map>
#include <vector>

namespace waferscope::core::engine::detail {

// What a streamed layer costs the wafer for one micro-batch.
struct OpCost {
    double forwardS = 0.0; // one micro-batch
    double backwardS = 0.0;
    double forwardFabricS = 0.0; // the on-wafer link part of the above
    double backwardFabricS = 0.0;
    double forwardFlops = 0.0; // model FLOPs of one micro-batch, non-zero weights only
    double backwardFlops = 0.0; // delta and weight-gradient GEMMs (train)
    double recomputeFlops = 0.0; // the forward again, from the block's checkpoint (train)
    bool fabricBound = false;
};

// How each system's share of the global batch is cut into micro-batches.
struct MicroBatches {
    std::int64_t globalBatch = 0;
    std::int64_t perSystem = 0;
    std::int64_t size = 0; // samples of every micro-batch but the last
    std::int64_t count = 0;
    std::int64_t lastSize = 0; // the last one's, possibly fewer
};

// Each streamed layer's cost for a full and for the last micro-batch, and MemoryX's time to
// update its weights.
struct LayerCosts {
    std::vector<OpCost> full;
    std::vector<OpCost> last;
    std::vector<double> optimizerS;
};

// One layer of one micro-batch, forward or backward: the unit the wafer runs.
struct StreamItem {
    int layer = 0;
    bool backward = false;
    int micro = 0;
    std::int64_t samples = 0;
};

// What the steady (last simulated) step adds up, for one system.
struct SteadyTotals {
    std::vector<double> layerTime; // wall time each layer holds the wafer
    std::vector<std::map<Bound, double>> layerBoundTime; // ... split by what bound it
    std::vector<double> layerFlops; // hardware FLOPs (recomputation included)
    std::vector<double> layerModelFlops;
    double bytesIn = 0.0; // weights streamed in
    double flashBytesIn = 0.0; // ... of which read from MemoryX's flash tier
    double bytesOut = 0.0; // gradients streamed out
    double optimizerBusy = 0.0; // MemoryX updating weights
    double fabricBusy = 0.0; // the wafer's busiest links
    double checkpointBytes = 0.0; // block outputs to MemoryX and back
};

// The event simulation of a weight-streaming run, item by item over the steps: when each
// resource (the stream path in and out, the wafer, MemoryX's optimizer) is next free, the
// timeline of the steps shown, and the steady step's totals.
class StreamingSimulation {
public:
    StreamingSimulation(
        const Context& context, const MicroBatches& batches, const LayerCosts& costs, int systems, RunResult& result);

    // Runs the items of step `step` from where the previous step left the resources; records its
    // events when it is one of the steps shown, and its totals when it is the steady one.
    // Returns the step's time: until the wafer is done and, for training, the last update is in.
    double runStep(int step, bool steady, const std::vector<StreamItem>& items);

    bool cancelled() const { return m_cancelled; } // RunOptions::cancelled said so during a step
    const SteadyTotals& totals() const { return m_totals; }
    const StreamPath& path() const { return m_path; }

private:
    // When an item's weights (and, before a backward, its checkpoint) arrive.
    struct StreamWindow {
        double bytes = 0.0; // weights streamed in
        double flashBytes = 0.0; // ... of which from MemoryX's flash tier
        double start = 0.0;
        double end = 0.0; // checkpoint read back included
        double optimizerWait = 0.0; // of the start, waiting for the layer's own update
        Bound bound = Bound::Io; // the part of the path that holds the longer part of the stream
    };

    // Adds an event to the timeline when `step` is one of the steps shown and the event lasts.
    void emit(int step, LaneKind lane, Phase phase, const StreamItem& item, double start, double end, double bytes,
        double flops);

    // The item's cost: the last micro-batch's may be smaller.
    const OpCost& costOf(const StreamItem& item) const;

    // Prefetch depth one: the stream starts once the item before has started computing, and not
    // before this layer's weights were updated (first forward of a step). MemoryX reads the part
    // of the weights it holds in DRAM, then the part in flash, each at its tier's rate. Before
    // its backward, a stage reads its input back from MemoryX (memoryx checkpoints) once the
    // forward's writes are out.
    StreamWindow streamWeightsIn(int step, const StreamItem& item, bool steady);

    // The wafer runs the item once it is free and the first weights are in, and takes the longer
    // of its compute and its stream. Returns when it is done.
    double computeItem(int step, const StreamItem& item, const StreamWindow& stream, double stepStart, bool steady);

    // Holding the wafer longer than its compute (beyond a tenth, for the crossing latencies): the
    // stream path bound it (or MemoryX's optimizer, when most of the wait was for the layer's
    // update); otherwise the wafer (its FMACs, or its links when the partial-sum chains are the
    // longer part).
    void attributeHeldTime(
        const StreamItem& item, const OpCost& cost, double held, double computeS, const StreamWindow& stream);

    // memoryx checkpoints: a stage's output leaves for MemoryX when the stage is done.
    void writeCheckpointOut(int step, const StreamItem& item, double computeEnd, bool steady);

    // Gradients out through the SwarmX reduction tree to MemoryX; after the last micro-batch,
    // MemoryX updates the layer's weights.
    void returnGradients(int step, const StreamItem& item, double computeEnd, bool steady);

    const Context& m_context;
    const MicroBatches& m_batches;
    const LayerCosts& m_costs;
    const int m_systems; // data-parallel systems; the simulation is of system 0
    const bool m_train; // backward items and optimizer updates; eval runs forward only
    const StreamPath m_path; // MemoryX -> SwarmX -> CS-X and back
    const double m_checkpointBytesPerS; // one system's own share of the path to MemoryX
    RunResult& m_result; // timeline events and metrics.boundTimeS are added here
    std::vector<double> m_optimizerDone; // per layer: when its last update finished
    bool m_cancelled = false;
    double m_linkInFree = 0.0; // the stream path in is free from
    double m_linkOutFree = 0.0; // ... and out
    double m_computeFree = 0.0; // the wafer is free from
    double m_optimizerFree = 0.0; // MemoryX's optimizer is free from
    double m_previousComputeStart = 0.0; // the item before started computing at
    double m_checkpointWritesDone = 0.0; // the last checkpoint written reached MemoryX at
    double m_stepEnd = 0.0; // the previous step ended at
    SteadyTotals m_totals;
};

} // namespace waferscope::core::engine::detail
