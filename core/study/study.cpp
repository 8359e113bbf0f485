// The study's chain: load, compile, run, the optional stages, the report and its directory.
#include "core/study/study.h"

#include "core/hardware/builtinpresets.h"
#include "core/report/cyclelevelreport.h"
#include "core/report/rundirectory.h"
#include "core/study/studyprogress.h"

#include <iterator>
#include <utility>

namespace waferscope::core::study {

namespace {

// StudyStage's names, in declaration order (progress lines and logs print them).
constexpr const char* kStageNames[]
    = { "loading", "compiling", "running", "scaling", "cycle_level", "sensitivity", "writing", "done" };
static_assert(std::size(kStageNames) == std::size_t(StudyStage::Done) + 1, "a name for every StudyStage");

} // namespace

const char* toString(StudyStage stage)
{
    return kStageNames[std::size_t(stage)];
}

Diagnostic cancellation()
{
    return Diagnostic { "<study>", 0, 0, "cancelled", Diagnostic::Kind::Internal };
}

bool isCancellation(const Diagnostic& diagnostic)
{
    return diagnostic.kind == Diagnostic::Kind::Internal && diagnostic.message == "cancelled";
}

namespace {

// What the chain carries from stage to stage.
struct Chain {
    const StudySpec& spec;
    const StudyControl& control;
    ProgressReporter& progress;
    StudyOutcome outcome;

    bool wantsReport() const { return spec.report || spec.writer; }
    // Asked for, or at model level implied by a writer (`run --model_dir` reports what its figure depends on).
    bool wantsSensitivity() const
    {
        return spec.sensitivity || spec.sensitivityResult || (spec.level == StudyLevel::Model && spec.writer);
    }
    bool ran() const { return outcome.ran != nullptr; }
    // A stage's error, or the cancellation it came from.
    Diagnostic failed(Diagnostic diagnostic) const { return control.stopped() ? cancellation() : diagnostic; }
    std::function<bool()> stopper() const
    {
        return [control = &control] { return control->stopped(); };
    }
};

using Step = std::optional<Diagnostic>;

// The preset first, then the model: a bad --system is reported before a long load.
Step load(Chain& chain)
{
    const StudySpec& spec = chain.spec;
    chain.progress.enter(StudyStage::Loading);
    if (spec.system) {
        chain.outcome.system = *spec.system;
    } else {
        Expected<SystemSpec> system = loadBuiltinPreset(spec.systemName);
        if (!system)
            return system.error();
        chain.outcome.system = std::move(system).value();
    }
    if (spec.model) {
        chain.outcome.model = spec.model;
        return std::nullopt;
    }
    Expected<LoadedModelFile> model = loadModelFile(spec.paramsPath);
    if (!model)
        return model.error();
    chain.outcome.model = std::make_shared<const LoadedModelFile>(std::move(model).value());
    return std::nullopt;
}

// Options that the loaded hardware rules out, checked before the run so that it is not lost to them.
Step checkOptions(Chain& chain)
{
    const StudySpec& spec = chain.spec;
    const SystemSpec& system = chain.outcome.system;
    const SwarmXSpec& swarmx = system.swarmx;
    const int mostSystems = swarmx.supported ? swarmx.maxSystems : 1;
    for (const int count : spec.scalingCounts)
        if (count > mostSystems)
            return Diagnostic { "--sweep", 0, 0,
                "system count " + std::to_string(count) + " is more than " + system.displayName
                    + (swarmx.supported ? "'s SwarmX joins (" + std::to_string(mostSystems) + ")"
                                        : " runs: it has no SwarmX, so it trains on one system only") };
    if (!spec.plan && spec.compile.mode == RunMode::Inference
        && spec.compile.numSystems > 0) // the compiler would ignore it
        return Diagnostic { "--num_csx", 0, 0,
            "--num_csx is for training and eval: inference places the model on as many " + system.displayName
                + " wafers as it needs (the plan says how many)" };
    return std::nullopt;
}

Step compilePlan(Chain& chain)
{
    chain.progress.enter(StudyStage::Compiling);
    if (chain.spec.plan) {
        chain.outcome.plan = chain.spec.plan;
        return std::nullopt;
    }
    engine::RunOptions run = chain.spec.run;
    run.cancelled = chain.stopper();
    Expected<ExecutionPlan> plan = compileStudyPlan(chain.outcome.model->graph, chain.outcome.model->path,
        chain.outcome.system, chain.spec.compile, chain.spec.calibration, run, "run");
    if (!plan)
        return plan.error();
    chain.outcome.plan = std::make_shared<const ExecutionPlan>(std::move(plan).value());
    return std::nullopt;
}

// The model-level run with `options` under `calibration` (a cycle-level study's report leaves a
// draft model out: the fabric executes the target one token a pass).
Step runModel(Chain& chain, const engine::RunOptions& options, const engine::Calibration& calibration)
{
    chain.progress.enter(StudyStage::Running);
    StudyOutcome& out = chain.outcome;
    // A held run was made with the spec's own options (study.h): they are the ones it stands with.
    out.run = chain.spec.ran ? chain.spec.run : options;
    out.run.cancelled = nullptr;
    if (chain.spec.ran) {
        out.ran = chain.spec.ran;
    } else {
        engine::RunOptions cancellable = options;
        cancellable.cancelled = chain.stopper();
        Expected<engine::RunResult> ran
            = engine::run(*out.plan, out.model->graph, out.system, cancellable, calibration);
        if (!ran)
            return ran.error();
        out.ran = std::make_shared<const engine::RunResult>(std::move(ran).value());
    }
    if (chain.spec.frames)
        out.frames = std::make_shared<const engine::FrameSource>(
            *out.plan, out.model->graph, out.system, *out.ran, calibration);
    return std::nullopt;
}

Step scaleSystems(Chain& chain)
{
    const StudySpec& spec = chain.spec;
    if (spec.scalingCounts.empty() && !spec.scaling)
        return std::nullopt;
    chain.progress.enter(StudyStage::Scaling);
    if (spec.scaling) {
        chain.outcome.scaling = spec.scaling;
        return std::nullopt;
    }
    sweeps::ScalingOptions options;
    options.numCsx = spec.scalingCounts;
    options.mode = spec.run.mode;
    options.execution = spec.compile.execution;
    options.globalBatch = spec.run.globalBatch;
    options.progress = [&chain](int done, int total) { chain.progress.report(StudyStage::Scaling, done, total); };
    options.cancelled = chain.stopper();
    Expected<sweeps::ScalingSweep> sweep
        = sweeps::scale(chain.outcome.model->graph, chain.outcome.system, options, spec.calibration);
    if (!sweep)
        return sweep.error();
    chain.outcome.scaling = std::make_shared<const sweeps::ScalingSweep>(std::move(sweep).value());
    return std::nullopt;
}

Step sweepSensitivity(Chain& chain)
{
    const StudySpec& spec = chain.spec;
    if (!chain.wantsSensitivity())
        return std::nullopt;
    chain.progress.enter(StudyStage::Sensitivity);
    if (spec.sensitivityResult) {
        chain.outcome.sensitivity = spec.sensitivityResult;
        return std::nullopt;
    }
    sweeps::SweepOptions options;
    options.cancelled = chain.stopper();
    options.progress = [&chain](int done, int total) { chain.progress.report(StudyStage::Sensitivity, done, total); };
    engine::RunOptions run = chain.outcome.run;
    run.cancelled = options.cancelled; // each run of the sweep hears the cancel too
    Expected<sweeps::Sensitivity> sensitivity = sweeps::runSensitivity(
        chain.outcome.model->graph, chain.outcome.system, spec.compile, run, spec.calibration, options);
    if (!sensitivity)
        return sensitivity.error();
    chain.outcome.sensitivity = std::make_shared<const sweeps::Sensitivity>(std::move(sensitivity).value());
    return std::nullopt;
}

// The fabric run's progress calls: reported as the stage's (out of `positions`, or the run's own
// count when 0) and handed to the control's observer; false once the study is stopped or the
// observer says stop (`observerStopped`: the observer did).
cyclelevel::CycleProgress relayProgress(Chain& chain, std::int64_t positions, bool& observerStopped)
{
    return [&chain, positions, &observerStopped](
               const std::string& phase, std::int64_t position, std::int64_t all, const fabric::Fabric* fabric) {
        chain.progress.report(StudyStage::CycleLevel, position, positions > 0 ? positions : all, phase);
        if (chain.control.stopped())
            return false;
        observerStopped = chain.control.cycleProgress && !chain.control.cycleProgress(phase, position, all, fabric);
        return !observerStopped;
    };
}

// `run --level cycle`: the plan on the fabric, its regions' measured cycles beside the model's.
Step runOnFabric(Chain& chain)
{
    const StudySpec& spec = chain.spec;
    chain.progress.enter(StudyStage::CycleLevel);
    if (spec.cycleLevel) {
        chain.outcome.cycleLevel = spec.cycleLevel;
        return std::nullopt;
    }
    cyclelevel::CycleRunOptions options;
    options.tokens = spec.cycle.tokens;
    options.promptTokens = spec.cycle.promptTokens;
    options.seed = spec.cycle.seed;
    options.threads = spec.cycle.threads;
    options.observeEveryCycles = spec.cycle.observeEveryCycles;
    const std::int64_t positions = options.promptTokens + options.tokens - 1;
    bool observerStopped = false; // the control's cycleProgress said stop
    options.progress = relayProgress(chain, positions, observerStopped);
    const StudyOutcome& out = chain.outcome;
    Expected<cyclelevel::CycleRunResult> ran
        = cyclelevel::runCycleLevel(out.model->graph, *out.plan, out.system, options);
    if (!ran)
        return observerStopped ? cancellation() : ran.error();
    cyclelevel::CycleRunResult measured = std::move(ran).value();
    measured.modelCycles = report::modelCyclesOfRegions(measured, out.model->graph, *out.plan, out.system);
    chain.outcome.cycleLevel = std::make_shared<const cyclelevel::CycleRunResult>(std::move(measured));
    return std::nullopt;
}

Step modelLevel(Chain& chain)
{
    if (Step failed = runModel(chain, chain.spec.run, chain.spec.calibration))
        return failed;
    if (Step failed = scaleSystems(chain))
        return failed;
    return sweepSensitivity(chain);
}

// `run --mode train --level cycle`: training steps with weight streaming on the fabric.
Step trainOnFabric(Chain& chain)
{
    const StudySpec& spec = chain.spec;
    const StudyOutcome& out = chain.outcome;
    chain.progress.enter(StudyStage::CycleLevel);
    if (out.plan->mode != ExecutionMode::WeightStreaming)
        return Diagnostic { "--level", 0, 0,
            "the compiler chose " + std::string(nameOf(out.plan->mode)) + " execution for "
                + out.model->graph.config.name
                + "; training at cycle level runs weight streaming only so far "
                  "(--execution weight_streaming)",
            Diagnostic::Kind::CannotMap };
    if (chain.wantsReport())
        return Diagnostic { "--model_dir", 0, 0,
            "the report of a training step at cycle level is not built yet; --json prints its figures",
            Diagnostic::Kind::CannotMap };
    cyclelevel::TrainRunOptions options;
    options.microBatch = spec.cycle.microBatch;
    options.sequence = spec.cycle.sequence;
    options.steps = spec.cycle.steps;
    options.layers = spec.cycle.layers;
    options.learningRate = spec.cycle.learningRate;
    options.seed = spec.cycle.seed;
    options.threads = spec.cycle.threads;
    bool observerStopped = false;
    options.progress = relayProgress(chain, 0, observerStopped);
    Expected<cyclelevel::TrainRunResult> ran = cyclelevel::runTrainCycleLevel(out.model->graph, out.system, options);
    if (!ran)
        return observerStopped || chain.control.stopped() ? cancellation() : ran.error();
    chain.outcome.trainCycleLevel = std::make_shared<const cyclelevel::TrainRunResult>(std::move(ran).value());
    return std::nullopt;
}

Step cycleLevel(Chain& chain)
{
    const StudyOutcome& out = chain.outcome;
    if (chain.spec.run.mode == RunMode::Train)
        return trainOnFabric(chain);
    if (chain.spec.run.mode != RunMode::Inference)
        return Diagnostic { "--level", 0, 0,
            "--level cycle runs inference and training (--mode inference or train), not eval" };
    if (out.plan->numSystems > 1)
        return Diagnostic { "--level", 0, 0,
            "--level cycle executes single-wafer plans; " + out.model->graph.config.name + " needs "
                + std::to_string(out.plan->numSystems) + " " + out.system.displayName + " wafers for inference" };
    // The report's model-level run comes first: it takes a moment, the fabric minutes.
    if (chain.wantsReport()) {
        engine::RunOptions options = chain.spec.run;
        options.promptTokens = chain.spec.cycle.promptTokens; // the figures the region table compares with
        engine::Calibration target = chain.spec.calibration;
        target.mechanisms.speculativeDecoding = engine::SpeculativeDecoding::Off;
        if (Step failed = runModel(chain, options, target))
            return failed;
    }
    if (Step failed = runOnFabric(chain))
        return failed;
    return chain.ran() ? sweepSensitivity(chain) : std::nullopt; // of the report's model-level run
}

Step reportAndWrite(Chain& chain)
{
    if (!chain.wantsReport())
        return std::nullopt;
    const StudySpec& spec = chain.spec;
    StudyOutcome& out = chain.outcome;
    const report::ReportInputs inputs { out.model->path, out.model->bytes, out.model->graph, out.system, *out.plan,
        *out.ran, spec.compile, out.run, spec.calibration, out.scaling.get(), out.sensitivity.get(),
        out.cycleLevel.get(), out.cycleLevel ? spec.cycle.seed : 0 };
    out.report = report::buildReport(inputs);
    if (!spec.writer)
        return std::nullopt;
    chain.progress.enter(StudyStage::Writing);
    std::vector<report::ReportFile> extra;
    if (spec.extraFiles) {
        Expected<std::vector<report::ReportFile>> made = spec.extraFiles(*out.report);
        if (!made)
            return made.error();
        extra = std::move(made).value();
    }
    if (chain.control.stopped())
        return cancellation();
    return report::writeRunReport(
        *spec.writer, *out.report, *out.ran, *out.plan, std::move(extra), chain.control.cancelFlag);
}

// Loading, the options' check and compiling: what every study does.
Step prepare(Chain& chain)
{
    for (Step (*stage)(Chain&) : { &load, &checkOptions, &compilePlan }) {
        if (chain.control.stopped())
            return cancellation();
        if (Step failed = stage(chain))
            return failed;
    }
    return std::nullopt;
}

} // namespace

Expected<StudyOutcome> runStudy(const StudySpec& spec, const StudyControl& control)
{
    ProgressReporter progress(stagesOf(spec), control.progress);
    Chain chain { spec, control, progress, {} };
    if (Step failed = prepare(chain))
        return chain.failed(std::move(*failed));
    if (Step failed = spec.level == StudyLevel::Cycle ? cycleLevel(chain) : modelLevel(chain))
        return chain.failed(std::move(*failed));
    if (control.stopped())
        return cancellation();
    if (Step failed = reportAndWrite(chain))
        return chain.failed(std::move(*failed));
    progress.finish();
    return std::move(chain.outcome);
}

Expected<ExecutionPlan> compileStudyPlan(const ModelGraph& graph, const std::string& modelPath,
    const SystemSpec& system, const CompileOptions& compile, const engine::Calibration& calibration,
    const engine::RunOptions& run, std::string_view label)
{
    Expected<ExecutionPlan> plan = engine::compileFor(graph, system, compile, calibration, run);
    if (!plan) {
        Diagnostic reason = plan.error();
        if (reason.kind == Diagnostic::Kind::CannotMap) // a bad option is not the model's failing
            reason.message = "cannot map " + modelPath + " onto " + system.displayName + ": " + reason.message;
        return reason;
    }
    const std::vector<std::string> problems = checkPlan(*plan, graph, system);
    if (!problems.empty())
        return Diagnostic { "<" + std::string(label) + " plan>", 0, 0, "invalid plan: " + problems.front(),
            Diagnostic::Kind::Internal };
    return plan;
}

} // namespace waferscope::core::study
