#pragma once

#include "core/common/expected.h"
#include "core/common/names.h"
#include "core/compiler/compiler.h"
#include "core/compiler/plan.h"
#include "core/engine/calibration.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::core::engine {

// Model-level execution of a compiled plan on a simulated cluster (docs/CLI.md, "run and scale"): an
// event simulation over the resources that can bind (MemoryX, SwarmX, each CS-X's I/O and
// wafer, inter-wafer links), with per-op costs from the kernel cost model.

// RunMode and Bound, and their names: core/common/names.h.
using core::Bound;
using core::RunMode;

struct DraftPlacement;

struct RunOptions {
    RunMode mode = RunMode::Train;
    int maxSteps = 1; // iterations (training) or decode steps (inference) on the timeline
    std::int64_t globalBatch = 0; // training: samples per step over all systems; 0 = the config's batch_size
    int users = 1; // inference: concurrent users sharing the pipeline
    std::int64_t promptTokens = 0; // inference: prompt length for time to first token; 0 = min(1024, context)
    // Inference under a speculative profile: the draft placed beside the plan (placeDraft); empty,
    // the run places it.
    std::shared_ptr<const DraftPlacement> draft = nullptr;
    // Asked now and then (between the steps and every thousand or so streamed layers of weight
    // streaming, between the layouts compileFor tries); true ends the run with the error
    // "cancelled". Null: the run goes to its end.
    std::function<bool()> cancelled = nullptr;
};

// Where an event ran. All CS-X systems of a data-parallel job run the same schedule, so one
// representative system (index 0) carries the compute and I/O lanes.
enum class LaneKind { MemoryX, SwarmX, CsxIo, CsxCompute, Region, WaferLink };
const char* toString(LaneKind kind); // "memoryx", "swarmx", "csx_io", "csx", "region", "wafer_link"

enum class Phase {
    StreamIn,
    Forward,
    BackwardDelta,
    BackwardGradient,
    GradientOut,
    Reduce,
    OptimizerUpdate,
    Prefill,
    Decode,
    CheckpointOut, // weight streaming: a block output written to MemoryX
    CheckpointIn, // ... and read back for backward
    FlashStreamIn, // weight streaming: the part of a stream-in MemoryX reads from its flash tier
};
const char* toString(Phase phase); // "stream_in", "forward", ... (snake case)

struct TimelineEvent {
    LaneKind lane = LaneKind::CsxCompute;
    int laneIndex = 0; // system, region or link index
    Phase phase = Phase::Forward;
    int layer = -1; // index into Metrics::layers
    int iteration = 0;
    int microBatch = 0;
    double start = 0.0; // seconds from the start of the run
    double end = 0.0;
    double bytes = 0.0; // moved by this event
    double flops = 0.0; // computed by this event
};

struct Timeline {
    std::vector<TimelineEvent> events; // in start order per lane
    double span = 0.0; // end of the last event
};

// The memory a run budgets for a timeline of `events` (reserved before the run records it): the
// events, and the copy, index and FrameStep a FrameSource keeps of each.
double timelineBudgetBytes(std::size_t events);

// What a layer of Metrics::layers is: an op of the graph, as its Op::Kind (the same value and the
// same name), or a transfer the engine times as a layer of its own.
enum class LayerKind {
    // Op::Kind's values, in its order
    Embedding,
    PositionEmbedding,
    Norm,
    Linear,
    AttentionCore,
    Activation,
    MoeRouter,
    Experts,
    LmHead,
    Pooler,
    Loss,
    PatchEmbedding,
    Convolution,
    Pooling,
    Upsampling,
    WaferLink, // "wafer_link": multi-wafer inference, a token's activations crossing to the next wafer
    GradientReduction, // "gradient_reduction": data-parallel pipelined training, gradients reduced across systems
};
constexpr LayerKind layerKindOf(Op::Kind kind)
{
    return LayerKind(int(kind));
}
const char* toString(LayerKind kind); // toString(Op::Kind) for an op's, "wafer_link", "gradient_reduction"

struct LayerMetrics {
    std::string name; // op name ("layers.3.ffn.up")
    LayerKind kind = LayerKind::Linear;
    int region = -1; // index into ExecutionPlan::regions
    std::int64_t params = 0;
    double flops = 0.0; // model FLOPs of this layer per step
    double timeS = 0.0; // wall time the layer holds the wafer per step (stalls for its weights included)
    double utilization = 0.0; // FMAC (or SIMD) cycles used / available while it holds the wafer
    Bound bound = Bound::None;
};

struct Utilization {
    double compute = 0.0; // wafer FLOPs / peak over the step
    double fabric = 0.0; // busiest on-wafer links, time-weighted
    double io = 0.0; // CS-X external I/O busy share
    double memoryx = 0.0; // MemoryX stream and optimizer busy share
    double swarmx = 0.0; // SwarmX tree busy share
};

// Speculative decoding as an inference run used it (Calibration::speculation).
struct SpeculativeDecode {
    std::string draft; // the draft model's params file
    int draftWafers = 0; // wafers it runs on (0: drafting does not pay, no draft is placed)
    bool sharesWafer = false; // in the SRAM the target leaves free on one of its wafers (else wafers of its own)
    int wafer = 0; // the first wafer it runs on (the target's are 0 to its num_systems - 1)
    int draftTokens = 0; // k, chosen for the most tokens/s (0: drafting does not pay)
    double acceptanceRate = 0.0;
    double tokensPerPass = 1.0; // (1 - a^(k+1)) / (1 - a)
    double draftTokenS = 0.0; // one draft token
    double draftIntervalS = 0.0; // the draft's busiest region's (or band's) time per token
    double passS = 0.0; // k draft tokens, then the target's k + 1 positions back to back
    double targetTokensPerS = 0.0; // the target alone, one token a pass
};

struct Metrics {
    RunMode mode = RunMode::Train;
    ExecutionMode execution = ExecutionMode::Pipelined;
    std::string system; // preset key
    int numCsx = 1; // systems asked for (data parallel) or wafers of the inference plan
    int numSystems = 1; // systems the plan uses
    double stepTimeS = 0.0; // training: one optimizer step; inference: one decode step (a token for each user)
    double samplesPerS = 0.0; // training: samples/s; inference: sequences completed per second at the prompt length
    double tokensPerStep = 0.0;
    double tokensPerS = 0.0; // training throughput, or per-user decode rate in inference
    double timeToFirstTokenS = 0.0; // inference only
    double aggregateTokensPerS = 0.0; // inference: all users together
    double tokenIntervalS = 0.0; // inference: the busiest region's (stacked: band's) time per token, a prompt's pace
    std::optional<SpeculativeDecode> speculative; // inference under a profile that drafts tokens
    double mfu = 0.0; // model FLOPs / (peak of the systems used x step time)
    double modelFlopsPerStep = 0.0;
    double hardwareFlopsPerStep = 0.0; // model FLOPs plus recomputation
    double streamedBytesPerStep = 0.0; // weights in plus gradients out per system (weight streaming)
    double flashStreamedBytesPerStep = 0.0; // of the weights in, those read from MemoryX's flash tier
    std::optional<CheckpointStrategy> checkpointStrategy; // training; none for inference
    int checkpointEvery = 0; // every_k: k; 1 for all_blocks and memoryx
    double recomputeFlopsPerStep = 0.0; // forward work run again in backward, all systems
    double checkpointBytesPerStep = 0.0; // block outputs to MemoryX and back, all systems
    double peakFlopsPerS = 0.0; // all systems used
    double linkBytesPerS = 0.0; // the narrowest of MemoryX, SwarmX and CS-X I/O
    Bound linkBound = Bound::Io; // which of them it is: io, swarmx or memoryx
    double flashLinkBytesPerS = 0.0; // the same path for weights read from MemoryX's flash tier
    std::int64_t microBatch = 0;
    std::int64_t microBatchesPerStep = 0;
    std::int64_t batchPerSystem = 0;
    std::int64_t promptTokens = 0;
    int users = 1;
    Utilization utilization;
    Bound bottleneck = Bound::None; // the bound that holds the most layer time
    std::map<Bound, double> boundTimeS; // step time per bound, where a mode splits layers finer
    std::vector<LayerMetrics> layers;
    std::vector<double> stepTimesS; // each simulated step
    std::vector<std::string> notes;
    std::string calibrationProfile; // the software profile the engine ran with ("2024-08-launch")
};

struct RunResult {
    Metrics metrics;
    Timeline timeline;
};

// Runs `plan` (compiled for `graph` on `system`). Train and eval need a training plan
// (pipelined or weight streaming), inference an inference plan. Errors are Diagnostics whose
// `file` names the option at fault.
Expected<RunResult> run(const ExecutionPlan& plan, const ModelGraph& graph, const SystemSpec& system,
    const RunOptions& options, const Calibration& calibration = builtinCalibration());

// The plan the profile's software builds (core::compile with what its mechanisms decide). Under
// region_sizing "stacked", an inference plan is the one whose decode token runs fastest here (at
// `inference`'s prompt length) among the strip layout and stacked tiers in 1 to kMaxStackBands
// bands, on as many wafers as the strips take. Other plans are core::compile's.
constexpr int kMaxStackBands = 8;
Expected<ExecutionPlan> compileFor(const ModelGraph& graph, const SystemSpec& system, const CompileOptions& options,
    const Calibration& calibration, const RunOptions& inference = { .mode = RunMode::Inference });

// A speculative profile's draft model compiled beside a target plan: in the SRAM per PE the
// target leaves free on its freest wafer, else on wafers of its own (the profile's own compile,
// at `options`' prompt length). Sweeps place it once and hand it to every run (RunOptions::draft).
struct DraftPlacement {
    ModelGraph graph;
    ExecutionPlan plan;
    bool sharesWafer = false;
    int wafer = 0; // the target's wafer it shares, or the first of its own
};
Expected<std::shared_ptr<const DraftPlacement>> placeDraft(
    const ExecutionPlan& target, const SystemSpec& system, const Calibration& calibration, const RunOptions& options);

// What a profile compiles for a run: the plan (compileFor) and, for inference under speculative
// decoding, the draft placed beside it, held in `options`. A sensitivity sweep compiles once and
// varies the facts of the run on it.
struct CompiledRun {
    ExecutionPlan plan;
    RunOptions options;
};
Expected<CompiledRun> compileRun(const ModelGraph& graph, const SystemSpec& system, const CompileOptions& compile,
    const RunOptions& options, const Calibration& calibration);

// The run as the JSON object `waferscope-cli run --json` prints.
std::string metricsToJson(const Metrics& metrics, int indent = -1);

// Spelled by name, never by number (core/common/names.h).
template <typename Json>
void to_json(Json&, LaneKind) = delete;
template <typename Json>
void to_json(Json&, Phase) = delete;
template <typename Json>
void to_json(Json&, LayerKind) = delete;

} // namespace waferscope::core::engine

namespace waferscope::core {

// The names of the engine's sets (core/engine/enginenames.cpp). LayerKind's are Op::Kind's, then
// its own two.
template <>
std::span<const EnumName<engine::LaneKind>> nameTable<engine::LaneKind>();
template <>
std::span<const EnumName<engine::Phase>> nameTable<engine::Phase>();
template <>
std::span<const EnumName<engine::LayerKind>> nameTable<engine::LayerKind>();

} // namespace waferscope::core
