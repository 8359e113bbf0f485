#pragma once

#include "core/compiler/plan.h"
#include "core/cyclelevel/cyclerun.h"
#include "core/fabric/framerecorder.h"
#include "core/fabric/kernels.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelloader.h"

#include <QObject>
#include <QString>

#include <cstdint>
#include <memory>

namespace waferscope::ui {

class JobRunner;

// Runs on the cycle-level fabric of the plan on screen: one region's kernel (a GEMV for one
// token, checked against a reference) and a whole token of a decoder (ui/tokenrun.h). Each has a
// JobRunner lane of its own. The Document hands it every new plan (setPlan), which drops the runs
// of the old one. Lives on the GUI thread; every signal is emitted there.
class FabricRuns : public QObject {
    Q_OBJECT
public:
    explicit FabricRuns(QObject* parent = nullptr);
    ~FabricRuns() override;

    // The plan the runs are of, with its model and system (null plan: none). Cancels the runs
    // of the one before, without a signal, and drops its token run.
    void setPlan(std::shared_ptr<const core::ExecutionPlan> plan, std::shared_ptr<const core::LoadedModelFile> model,
        const core::SystemSpec& system);

    // The cycle-level kernel of a region (fabricKernelFor): empty when it has one, else why not.
    QString kernelUnavailableReason(int planIndex) const;
    void runKernel(int planIndex);
    // Run token on fabric: empty when the plan can, else why not.
    QString tokenUnavailableReason() const;
    // Runs the prompt and one decode step of the plan on the cycle-level fabric; frames stream
    // out through tokenStarted's RecordedFrames, the result arrives as tokenFinished.
    void runToken(int promptTokens = 2);
    bool isTokenRunning() const;
    // Stops a token run (its frames so far stay); tokenFinished follows when one was running.
    void cancelToken();
    // The last finished token run of the plan (null: none).
    std::shared_ptr<const core::cyclelevel::CycleRunResult> tokenRun() const { return m_tokenRun; }
    std::uint64_t tokenSeed() const { return m_tokenSeed; } // of tokenRun()'s weights and prompt

Q_SIGNALS:
    void kernelStarted(const QString& text);
    void kernelFinished(const core::fabric::KernelResult& result, const QString& text);
    void kernelFailed(const QString& message);
    // A token run started: its frames fill while it runs (from the worker thread) and are
    // finished when it ends, however it ends.
    void tokenStarted(std::shared_ptr<const waferscope::core::fabric::RecordedFrames> frames);
    // The token run ended: tokenRun() holds the result (null when it failed or was cancelled).
    void tokenFinished();
    // A token run ended by itself, and what the window's title says of it.
    void tokenSettled(const QString& state);
    void tokenBusyChanged(bool busy); // the token lane's
    void progress(double fraction); // of the token run
    // Lines for the Messages dock.
    void info(const QString& text);
    void error(const QString& text);

private:
    std::shared_ptr<const core::ExecutionPlan> m_plan;
    std::shared_ptr<const core::LoadedModelFile> m_model; // m_plan's: the token run's study starts from it
    core::SystemSpec m_system; // of m_plan
    std::shared_ptr<const core::cyclelevel::CycleRunResult> m_tokenRun; // of m_plan
    std::uint64_t m_tokenSeed = core::cyclelevel::CycleRunOptions {}.seed; // of m_tokenRun
    JobRunner* m_kernelRunner;
    JobRunner* m_tokenRunner;
};

} // namespace waferscope::ui
