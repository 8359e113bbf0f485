#pragma once

#include "core/compiler/plan.h"
#include "core/engine/engine.h"

#include <functional>
#include <string>
#include <string_view>

namespace waferscope::core::report {

// A run's timeline in the Chrome trace-event format (opens in Perfetto and chrome://tracing):
// one complete event ("ph": "X") per timeline event, with `name` (the layer, or the phase for
// work outside the layers), `cat` (the phase), `ts` and `dur` in microseconds, `pid` per
// resource (MemoryX, SwarmX, each CS-X or wafer, the inter-wafer links), `tid` per lane, and
// `args` with bytes, FLOPs, iteration and micro-batch; metadata events name every pid and tid.
// `plan` places inference regions on their wafers (without it they go to wafer 0). `indent` >= 0
// puts each event on its own line.
std::string chromeTrace(const engine::RunResult& run, const ExecutionPlan* plan = nullptr, int indent = -1);

// The same, handed to `sink` in pieces of about a megabyte: a run of many steps has millions
// of events, whose trace is written to a file without being held in memory.
void writeChromeTrace(const engine::RunResult& run, const ExecutionPlan* plan,
    const std::function<void(std::string_view)>& sink, int indent = -1);

} // namespace waferscope::core::report
