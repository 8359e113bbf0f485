#pragma once

#include "core/compiler/plan.h"

#include <QString>
#include <QStringList>

#include <optional>

namespace waferscope::ui {

// What the wafer view colours the PEs by: the compiler's regions, or a heat overlay from the
// run (each PE's compute activity, its SRAM occupancy, or the load of its links).
// Difference: this run's PE activity minus the baseline's at the matching step, stored as
// (difference + 1) / 2 so that 0.5 is "the same".
enum class MeshOverlay { Placement, Activity, Sram, Traffic, Difference };

// The names the command line and the saved session use for the window's choices (the same as
// the CLI's: "train", "weight_streaming", ...). Unknown names give nothing.
// How the window writes an execution mode for people: "weight streaming".
QString executionModeLabel(core::ExecutionMode mode);

QStringList runModeNames(); // train, inference
QString runModeName(core::RunMode mode);
std::optional<core::RunMode> runModeFromName(const QString& name);

QStringList executionNames(); // auto, pipelined, weight_streaming
QString executionName(core::ExecutionChoice execution);
std::optional<core::ExecutionChoice> executionFromName(const QString& name);

QStringList overlayNames(); // placement, activity, sram, traffic
QString overlayName(MeshOverlay overlay);
std::optional<MeshOverlay> overlayFromName(const QString& name);

} // namespace waferscope::ui
