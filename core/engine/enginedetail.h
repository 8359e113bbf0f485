#pragma once

// Private to core/engine: what the three execution models share.
#include "core/engine/costmodel.h"
#include "core/engine/engine.h"

#include <optional>
#include <string>

namespace waferscope::core::engine::detail {

// The path weights take from MemoryX through SwarmX into a CS-X (and gradients back): its
// narrowest bandwidth, which part that is, and the tree's latency for this many systems.
// Weights MemoryX holds in its DRAM tier take the path at bytesPerS, those in its flash tier
// at flashBytesPerS (the same unless the flash tier reads slower than the rest of the path).
struct StreamPath {
    double bytesPerS = 0.0;
    Bound bound = Bound::Io; // io, swarmx or memoryx
    double flashBytesPerS = 0.0;
    Bound flashBound = Bound::Io;
    int levels = 1; // SwarmX tree levels between MemoryX and a system: ceil(log_fanout(systems))
    double latencyS = 0.0; // levels x per-level latency
};
StreamPath streamPath(const SystemSpec& system, int numSystems);

struct Context {
    const ExecutionPlan& plan;
    const ModelGraph& graph;
    const SystemSpec& system;
    const RunOptions& options;
    const Calibration& calibration;
    double clockHz = 1.0;
    int simd = 1;
    int hop = 1;
};

bool isStreamedMatrix(Op::Kind kind); // ops the streamed GEMM executes

// The global batch of a training run (the option, else the config's batch_size, else
// `fallback` with a note) split evenly over the plan's systems. Errors when a system would get
// no sample.
struct BatchSplit {
    std::int64_t global = 0;
    std::int64_t perSystem = 0;
};
Expected<BatchSplit> splitBatch(const Context& context, std::int64_t fallback, Metrics& metrics);

// Fills metrics.layers[...].bound shares into the run's bottleneck (the bound holding the most
// layer time) and the fields every mode reports.
void finishMetrics(Metrics& metrics, const Context& context);

// Reserves the timeline of `steps` steps of at most `eventsPerStep` events each, or says why it
// cannot: the events, with what the frame stepper keeps per event, would not fit the memory
// budget. Called before any step is simulated.
std::optional<Diagnostic> reserveTimeline(Timeline& timeline, std::size_t eventsPerStep, int steps);

// Speculative decoding (Calibration::speculation, engine.h SpeculativeDecode).
// Tokens a pass yields when k are drafted, each accepted with probability `acceptance`.
double tokensPerPass(double acceptance, int draftTokens);
struct DraftChoice {
    int draftTokens = 0; // 0: drafting does not pay; the target decodes alone
    double tokensPerPass = 1.0;
    double passS = 0.0;
    double busyS = 0.0; // the busiest band's share of a pass (the pace of many users)
};
// The k from 0 to `most` that gives `users` the most tokens per second in all.
DraftChoice chooseDraftTokens(double acceptance, int most, int users, double targetLatencyS, double targetIntervalS,
    double draftLatencyS, double draftIntervalS, bool draftShares);
// The profile's draft model (context.options.draft, or placed now: placeDraft) timed for one
// token at the prompt's length.
struct DraftTiming {
    double latencyS = 0.0; // one token, its argmax fed back to its first region
    double intervalS = 0.0; // its busiest region's (or band's) time per token
    int wafers = 1;
    bool sharesWafer = false;
    int wafer = 0; // the target's wafer it shares, or the first of its own
};
Expected<DraftTiming> timeDraft(const Context& context, std::int64_t prompt);
// Why `draft` cannot draft for `target`: it is no decoder-only language model, or its vocabulary
// is not the target's. Located where the profile names the draft (Speculation::draftFile).
std::optional<Diagnostic> draftMismatch(
    const ModelGraph& target, const ModelGraph& draft, const Calibration& calibration);

Expected<RunResult> runWeightStreaming(const Context& context);
Expected<RunResult> runPipelined(const Context& context);
Expected<RunResult> runInference(const Context& context);

} // namespace waferscope::core::engine::detail
