#pragma once

#include "core/common/expected.h"
#include "core/compiler/plan.h"
#include "core/cyclelevel/cyclerun.h"
#include "core/fabric/framerecorder.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"
#include "core/model/modelloader.h"
#include "core/study/study.h"

#include <QString>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

namespace waferscope::ui {

// Run token on fabric: the loaded decoder's single-wafer inference plan executed on the
// cycle-level fabric, one prompt position at a time and then one decode step, while frames of its
// counters stream to the wafer view. It is a cycle-level study (core/study/study.h) from the model
// and plan held, so it measures what `run --level cycle` does.
struct TokenRunRequest {
    std::shared_ptr<const core::LoadedModelFile> model; // the plan's
    std::shared_ptr<const core::ExecutionPlan> plan;
    core::SystemSpec system;
    core::study::CycleSpec cycle; // observeEveryCycles is set by runTokenOnFabric
};

// A frame is a window of this many cycles of a token: 23 frames per token of the tiny test Llama
// (5,696 cycles per token on a CS-2), 180 for GPT-2 small (46k cycles per token). The frames
// kept are capped at 256 MiB (RecordedFrames::kDefaultBudgetBytes, 5 bytes per PE): 72 frames
// of a whole WSE-2 program rectangle (750 x 994 PEs), 4,096 of a small one; beyond that
// neighbouring frames merge in pairs and windows double, so the whole run stays, coarser.
constexpr std::uint64_t kTokenFrameCycles = 256;

// Empty when the plan can run on the fabric; else why not, for the action's tooltip.
QString tokenUnavailableReason(const core::ExecutionPlan* plan, const core::ModelGraph* graph);

// Frames for a run of `plan` on `system`: the plan's usable rectangle of the wafer, as many
// frames as RecordedFrames::kDefaultBudgetBytes holds (coarser windows beyond that).
std::shared_ptr<core::fabric::RecordedFrames> makeTokenFrames(
    const core::ExecutionPlan& plan, const core::SystemSpec& system);

// Runs the request's study on the calling (worker) thread, recording a frame every
// kTokenFrameCycles into `frames` and finishing them when it ends. `cancelled` is polled between
// windows (a cancelled run returns the study's cancellation); `progress` gets the fraction done at
// most 20 times a second. The result has its regions' model-level cycles (modelCycles).
core::Expected<std::shared_ptr<const core::cyclelevel::CycleRunResult>> runTokenOnFabric(const TokenRunRequest& request,
    const std::shared_ptr<core::fabric::RecordedFrames>& frames, const std::function<bool()>& cancelled,
    const std::function<void(double)>& progress);

} // namespace waferscope::ui
