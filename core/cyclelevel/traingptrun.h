#pragma once

#include "core/common/expected.h"
#include "core/cyclelevel/trainrun.h"

namespace waferscope::core::cyclelevel {

// runTrainCycleLevel() for a GPT-2-style decoder (traingpt.h); `options.layers` keeps that many
// blocks, `options.microBatch` counts sequences (0: 1), `options.sequence` their tokens (0: the
// config's).
Expected<TrainRunResult> runDecoderTrainCycleLevel(
    const ModelGraph& graph, const SystemSpec& system, const TrainRunOptions& options);

} // namespace waferscope::core::cyclelevel
