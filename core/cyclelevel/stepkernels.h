#pragma once

#include "core/cyclelevel/cyclerun.h"
#include "core/cyclelevel/kernels/bandedlosskernel.h"
#include "core/cyclelevel/kernels/localstepkernel.h"
#include "core/cyclelevel/kernels/rowattentionkernel.h"
#include "core/cyclelevel/streamfabric.h"
#include "core/cyclelevel/trainreference.h"
#include "core/cyclelevel/trainrun.h"
#include "core/fabric/staticcolorfabric.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace waferscope::core::cyclelevel {

// The layout and the edge of a training run: what every kernel of a step shares
// (trainrun.h): R x C PEs, column c holding tokens [c T, (c + 1) T).
struct StepLayout {
    Frame frame;
    int tokensPerPe = 1;
    std::int64_t tokens = 0; // real ones
    std::int64_t padded = 0; // C T
    KernelContext context;
    int threads = 1;
    std::uint64_t maxCycles = 0;
    double ioWaveletsPerCycle = 0.0;
    std::uint64_t edgeStart = 0;
};

// The pace of each of `rows` streams sharing the I/O: at most w every c cycles, w / c within
// 1/4096 of the share.
fabric::StaticColorFabric::EdgeRate paceOf(const StepLayout& layout, std::size_t rows);

// A run's layout on `frame` with T tokens a PE, and its edge: the system's I/O in 4-byte
// wavelets a cycle, MemoryX's rate if lower, after SwarmX's latency.
StepLayout stepLayout(
    const SystemSpec& system, const TrainRunOptions& options, Storage storage, Frame frame, int T, std::int64_t tokens);

// tokens x (n + 1): each token's n values of `x` (tokens x n) and a 1 after them, the input a
// bias's weight multiplies.
std::vector<float> withOnes(std::int64_t tokens, const std::vector<float>& x, std::int64_t n);

// BadInput for options out of range.
std::optional<Diagnostic> checkTrainOptions(const TrainRunOptions& options);

// The first step's check: the loss to the bit, every gradient within its bound.
void compareWithReference(
    TrainRunResult& result, float loss, const std::vector<std::vector<float>>& gradients, const ReferenceStep& check);

// The weight gradient's chunk (StreamGradientSpec::chunk): a PE holds at most this many shares.
constexpr std::uint32_t kGradientChunk = 1024;

// Thrown between kernels when the progress callback cancels.
struct TrainCancelled { };

// One step on the fabric, as a run's steps loop calls it: its loss, its gradients (per tensor,
// loss-scaled), its kernels and its SRAM peak.
struct FabricStepOutcome {
    float loss = 0.0f;
    std::vector<std::vector<float>> gradients;
    std::vector<TrainKernelRecord> records;
    std::size_t peakSram = 0;
};
// The step's weights as streamed and the masks, per tensor.
using TrainWeights = std::vector<std::vector<float>>;
using FabricStepFn = std::function<FabricStepOutcome(
    int step, const TrainWeights& weights, const TrainWeights& masks, double lossScale)>;
using ReferenceStepFn = std::function<ReferenceStep(
    int step, const TrainWeights& weights, const TrainWeights& masks, double lossScale, bool withBounds)>;

// The steps of a run: each step's fabric step and reference step (the reference on its own copy
// of the weights), the first step's comparison, both updates; then the last step's cycles and
// samples a second. A diagnostic for a cancel or a failed kernel.
std::optional<Diagnostic> runTrainSteps(TrainRunResult& result, TrainState& state, Storage storage, int steps,
    const FabricStepFn& onFabric, const ReferenceStepFn& onReference);

// Runs a step's kernels one after another, each on a fabric of the frame's size loaded with the
// values the kernel before left on the same PEs, and records each (TrainKernelRecord).
class StepKernels {
public:
    StepKernels(const StepLayout& layout, Storage storage, const CycleProgress& progress, std::int64_t kernelsBefore,
        std::int64_t kernelsInAll);

    std::vector<TrainKernelRecord> records;
    std::size_t peakSram = 0;
    std::int64_t kernelsRun() const { return m_index; }

    // Forward: Y = W X over W's `width` columns (X tokens x width, its last column 1 for a bias);
    // delta: dX = W^T dY over W's first `inputs` columns. `weights` outputs x width, row-major.
    // Returns tokens x outputs (forward) or tokens x inputs (delta), on the bands.
    // `keep`: the mask of the weights that stream (laid out as `weights`); nullptr: all of them.
    std::vector<float> streamGemm(const std::string& op, Pass pass, std::int64_t outputs, std::int64_t inputs,
        std::int64_t width, const std::vector<float>& weights, const std::vector<float>& resident,
        const std::vector<float>* keep = nullptr);

    // A local step (its frame, tokens and storage set here): its outputs, and its side tiles'
    // values (`sideDims` a token; none when 0).
    std::pair<std::vector<float>, std::vector<float>> local(
        LocalStepSpec spec, const std::string& op, const char* kind, std::int64_t sideDims);

    // Every PE of a column gets all `dims` values of its tokens (bands: the even split, or these
    // bounds); each copy is checked against what the bands held.
    std::vector<float> gather(const std::string& op, Pass pass, const std::vector<float>& bands, std::int64_t dims,
        std::vector<std::uint32_t> bounds = {});

    // dG = dY X^T for the weights `mask` keeps (outputs x width), as they leave the wafer through
    // each row's west edge at the I/O's pace. `delta` tokens x outputs, `input` tokens x width.
    std::vector<float> gradient(const std::string& op, std::int64_t outputs, std::int64_t width,
        const std::vector<float>& mask, const std::vector<float>& input, const std::vector<float>& delta);

    // The delta dX = W^T dY with the rows splitting W's outputs (M, dY's width): each row's partial
    // sums over its band (StreamGemmSpec::splitInner), tokens x inputs a row.
    std::vector<std::vector<float>> streamGemmPartials(const std::string& op, std::int64_t outputs, std::int64_t inputs,
        std::int64_t width, const std::vector<float>& weights, const std::vector<float>& resident,
        const std::vector<float>* keep = nullptr);
    // The rows' partials added down each column and rounded (ColumnReduceKernel): tokens x dims.
    std::vector<float> columnReduce(
        const std::string& op, Pass pass, std::vector<std::vector<float>> partials, std::int64_t dims);
    // The loss on the logits' bands (BandedLossKernel, its frame and tokens set here): dz (tokens x
    // V) and each token's loss.
    std::pair<std::vector<float>, std::vector<float>> bandedLoss(BandedLossSpec spec);

    // One pass of the row attention (its frame, tokens and storage set here): its outputs
    // (tokens x `dims`) and, for the forward, the log-sum-exp (tokens x heads).
    std::pair<std::vector<float>, std::vector<float>> attention(RowAttentionSpec spec, std::int64_t dims);

private:
    std::unique_ptr<StreamKernelRun> fabricFor(); // and starts the kernel's clock
    void finish(const StreamKernelRun& run, const PrefillKernel& kernel, const std::string& op, const char* kind,
        const StreamRunMeasure& measure, const KernelCost& model, std::int64_t bytesOut);

    const StepLayout& m_layout;
    Storage m_storage;
    const CycleProgress& m_progress;
    std::int64_t m_index = 0;
    std::int64_t m_kernels = 0;
    std::chrono::steady_clock::time_point m_started;
};

} // namespace waferscope::core::cyclelevel
