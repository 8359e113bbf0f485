#include "ui/models/tokenrun.h"

#include "core/cyclelevel/decoder.h"

#include <QCoreApplication>

#include <algorithm>
#include <chrono>

namespace waferscope::ui {

QString tokenUnavailableReason(const core::ExecutionPlan* plan, const core::ModelGraph* graph)
{
    if (!plan || !graph)
        return QCoreApplication::translate("TokenRun", "Open a decoder model compiled for inference first.");
    if (plan->mode != core::ExecutionMode::Inference || plan->numSystems != 1)
        return QCoreApplication::translate("TokenRun",
            "Runs a single-wafer inference plan: choose Inference mode and one system (this plan is %1 on %2 "
            "system(s)).")
            .arg(QString::fromLatin1(core::toString(plan->mode)))
            .arg(plan->numSystems);
    const core::Expected<core::cyclelevel::DecoderShape> shape = core::cyclelevel::decoderShape(*graph);
    if (!shape)
        return QCoreApplication::translate("TokenRun", "The cycle level cannot run this model: %1")
            .arg(QString::fromStdString(shape.error().message));
    return {};
}

std::shared_ptr<core::fabric::RecordedFrames> makeTokenFrames(
    const core::ExecutionPlan& plan, const core::SystemSpec& system)
{
    const std::size_t capacity = core::fabric::RecordedFrames::capacityFor(
        std::int64_t(plan.usable.w) * plan.usable.h, core::fabric::RecordedFrames::kDefaultBudgetBytes);
    return std::make_shared<core::fabric::RecordedFrames>(plan.usable.w, plan.usable.h, plan.usable.x, plan.usable.y,
        plan.fabricWidth, plan.fabricHeight, capacity, system.wafer.clockHz);
}

core::Expected<std::shared_ptr<const core::cyclelevel::CycleRunResult>> runTokenOnFabric(const TokenRunRequest& request,
    const std::shared_ptr<core::fabric::RecordedFrames>& frames, const std::function<bool()>& cancelled,
    const std::function<void(double)>& progress)
{
    core::study::StudySpec spec;
    spec.model = request.model;
    spec.system = request.system;
    spec.plan = request.plan;
    spec.compile.mode = core::RunMode::Inference;
    spec.run.mode = core::RunMode::Inference;
    spec.level = core::study::StudyLevel::Cycle;
    spec.cycle = request.cycle;
    spec.cycle.observeEveryCycles = kTokenFrameCycles;

    core::fabric::FrameRecorder recorder(frames);
    std::int64_t tokenPosition = -1;
    std::string tokenPhase;
    std::uint64_t tokenStart = 0; // fabric cycle at which the current position's token began
    std::uint64_t lastTokenCycles = 0; // of the previous position, to estimate progress within one
    auto lastReport = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    core::study::StudyControl control;
    control.cancelled = cancelled;
    control.cycleProgress = [&](const std::string& phase, std::int64_t position, std::int64_t positions,
                                const core::fabric::Fabric* fabric) {
        if (!fabric)
            return true;
        // The window that ends at a token's start closes the previous token: it is labelled so.
        std::string label = phase;
        std::int64_t labelPosition = position;
        if (position != tokenPosition) {
            if (tokenPosition >= 0) {
                lastTokenCycles = fabric->cycle() - tokenStart;
                label = tokenPhase;
                labelPosition = tokenPosition;
            }
            tokenPosition = position;
            tokenPhase = phase;
            tokenStart = fabric->cycle();
        }
        const std::uint64_t tokenCycle = fabric->cycle() - tokenStart;
        recorder.record(*fabric, label, labelPosition, labelPosition == position ? tokenCycle : lastTokenCycles);
        const auto now = std::chrono::steady_clock::now();
        if (now - lastReport > std::chrono::milliseconds(50)) {
            lastReport = now;
            const double within
                = lastTokenCycles > 0 ? std::min(0.95, double(tokenCycle) / double(lastTokenCycles)) : 0.0;
            progress(std::clamp((double(position) + within) / double(std::max<std::int64_t>(1, positions)), 0.0, 1.0));
        }
        return true;
    };
    core::Expected<core::study::StudyOutcome> outcome = core::study::runStudy(spec, control);
    frames->finish();
    if (!outcome)
        return outcome.error();
    return outcome->cycleLevel;
}

} // namespace waferscope::ui
