// Dispatch to the execution models, and what they share.
#include "core/engine/enginedetail.h"

#include "core/common/memorybudget.h"
#include "core/common/units.h"
#include "core/engine/framesource.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace waferscope::core::engine {

namespace detail {

StreamPath streamPath(const SystemSpec& system, int numSystems)
{
    StreamPath path;
    // Ties go to the CS-X port: it is the one a user can see on a spec sheet.
    path.bytesPerS = system.ioBytesPerS;
    path.bound = Bound::Io;
    if (system.swarmx.linkBytesPerS > 0.0 && system.swarmx.linkBytesPerS < path.bytesPerS) {
        path.bytesPerS = system.swarmx.linkBytesPerS;
        path.bound = Bound::SwarmX;
    }
    const double dram = system.memoryx.dramReadBytesPerS();
    if (dram > 0.0 && dram < path.bytesPerS) {
        path.bytesPerS = dram;
        path.bound = Bound::MemoryX;
    }
    // Weights read from MemoryX's flash tier leave it at the flash rate instead.
    path.flashBytesPerS = path.bytesPerS;
    path.flashBound = path.bound;
    const double flash = system.memoryx.flashReadBytesPerS();
    if (flash > 0.0 && flash < path.flashBytesPerS) {
        path.flashBytesPerS = flash;
        path.flashBound = Bound::MemoryX;
    }
    path.levels = system.swarmx.levels(numSystems);
    path.latencyS = path.levels * system.swarmx.levelLatencyS;
    return path;
}

bool isStreamedMatrix(Op::Kind kind)
{
    return kind == Op::Kind::Linear || kind == Op::Kind::LmHead || kind == Op::Kind::Pooler
        || kind == Op::Kind::PatchEmbedding || kind == Op::Kind::Convolution || kind == Op::Kind::Upsampling
        || kind == Op::Kind::MoeRouter;
}

Expected<BatchSplit> splitBatch(const Context& context, std::int64_t fallback, Metrics& metrics)
{
    const int systems = std::max(1, context.plan.numSystems);
    BatchSplit split;
    split.global = context.options.globalBatch > 0 ? context.options.globalBatch : context.graph.config.batchSize;
    if (split.global <= 0) {
        split.global = fallback;
        metrics.notes.push_back("the config sets no batch_size; " + std::to_string(fallback) + " samples are run");
    }
    if (split.global < systems)
        return Diagnostic { "--num_csx", 0, 0,
            "the global batch of " + std::to_string(split.global) + " samples cannot be split over "
                + std::to_string(systems) + " systems (each needs at least one sample)",
            Diagnostic::Kind::CannotMap };
    split.perSystem = (split.global + systems - 1) / systems;
    if (split.global % systems != 0)
        metrics.notes.push_back("batch_size " + std::to_string(split.global) + " is not a multiple of num_csx "
            + std::to_string(systems) + "; each system runs " + std::to_string(split.perSystem) + " samples");
    return split;
}

void finishMetrics(Metrics& metrics, const Context& context)
{
    metrics.system = context.plan.system;
    metrics.execution = context.plan.mode;
    metrics.mode = context.options.mode;
    std::map<Bound, double> timeByBound = metrics.boundTimeS;
    // Regions that wait for a slower one in a pipeline do not bind anything themselves.
    if (timeByBound.empty())
        for (const LayerMetrics& layer : metrics.layers)
            if (layer.bound != Bound::Pipeline)
                timeByBound[layer.bound] += layer.timeS;
    double most = -1.0;
    for (const auto& [bound, time] : timeByBound)
        if (time > most) {
            most = time;
            metrics.bottleneck = bound;
        }
    if (metrics.stepTimeS > 0.0 && metrics.peakFlopsPerS > 0.0)
        metrics.mfu = std::clamp(metrics.modelFlopsPerStep / (metrics.stepTimeS * metrics.peakFlopsPerS), 0.0, 1.0);
}

std::optional<Diagnostic> reserveTimeline(Timeline& timeline, std::size_t eventsPerStep, int steps)
{
    const double events = double(eventsPerStep) * double(steps);
    const MemoryBudget budget = memoryBudget();
    const double stepBytes = std::max(1.0, timelineBudgetBytes(eventsPerStep));
    const auto fitting = std::int64_t(double(budget.bytes) / stepBytes);
    if (std::optional<Diagnostic> refused = checkMemory(std::to_string(steps) + " steps of this run's timeline ("
                + formatThousands(std::int64_t(events)) + " events)",
            timelineBudgetBytes(std::size_t(events)),
            fitting > 0 ? "at most " + formatThousands(fitting) + " steps fit; lower --max_steps"
                        : "even one step does not fit",
            Diagnostic { "--max_steps", 0, 0, {}, Diagnostic::Kind::CannotMap }, budget))
        return refused;
    timeline.events.reserve(std::size_t(events));
    return std::nullopt;
}

} // namespace detail

double timelineBudgetBytes(std::size_t events)
{
    // The event, and what a FrameSource (the GUI's frame stepper, a report's step figures) keeps
    // of it: its own copy of the timeline, an index and a FrameStep.
    constexpr double kBytesPerEvent = 2.0 * sizeof(TimelineEvent) + sizeof(std::size_t) + sizeof(FrameStep);
    return double(events) * kBytesPerEvent;
}

Expected<RunResult> run(const ExecutionPlan& plan, const ModelGraph& graph, const SystemSpec& system,
    const RunOptions& options, const Calibration& calibration)
{
    if (options.maxSteps < 1)
        return Diagnostic { "--max_steps", 0, 0, "must be at least 1" };
    const bool inferencePlan = plan.mode == ExecutionMode::Inference;
    if ((options.mode == RunMode::Inference) != inferencePlan)
        return Diagnostic { "--mode", 0, 0,
            std::string("a ") + toString(options.mode) + " run needs a plan compiled for "
                + (options.mode == RunMode::Inference ? "inference" : "training") + ", not " + toString(plan.mode),
            Diagnostic::Kind::BadInput };
    if (system.wafer.clockHz <= 0.0 || system.wafer.fmacPerPePerCycle <= 0)
        return Diagnostic { "<preset " + system.name + ">", 0, 0, "the preset has no clock or FMAC width" };
    detail::Context context { plan, graph, system, options, calibration };
    context.clockHz = system.wafer.clockHz;
    context.simd = system.wafer.fmacPerPePerCycle;
    context.hop = std::max(1, system.wafer.hopLatencyCycles);
    Expected<RunResult> result = [&]() -> Expected<RunResult> {
        switch (plan.mode) {
        case ExecutionMode::WeightStreaming:
            return detail::runWeightStreaming(context);
        case ExecutionMode::Pipelined:
            return detail::runPipelined(context);
        case ExecutionMode::Inference:
            return detail::runInference(context);
        }
        return Diagnostic { "<plan>", 0, 0, "unknown execution mode", Diagnostic::Kind::Internal };
    }();
    if (!result)
        return result;
    RunResult ran = std::move(result).value();
    ran.metrics.calibrationProfile = calibration.profile;
    return ran;
}

} // namespace waferscope::core::engine
