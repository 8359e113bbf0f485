#pragma once

#include "ui/wafer/meshrenderer.h"

#include "core/compiler/plan.h"
#include "core/model/modelgraph.h"

#include <QColor>
#include <QString>

#include <vector>

namespace waferscope::ui {

// Colour of a region: the hue follows the layer (neighbouring layers far apart on the colour
// wheel), ops within a layer alternate in lightness so neighbours in a strip stay distinct;
// ops outside the blocks (layer -1: embeddings, LM head) are neutral.
QColor layerColor(int layer, int opInLayer);

// Every region's colour, in plan order (the view and the region table agree).
std::vector<QColor> regionColors(const core::ExecutionPlan& plan);

// The regions the wafer view draws for a plan. Pipelined and inference plans show every region
// (on its wafer); a weight-streaming plan runs one op at a time on the whole fabric, so it
// shows the region of plan.regions[shown] only. A stacked inference plan's tiers share their
// PEs: each band of a wafer shows one tier, the one of plan.regions[shown] where it is that
// region's band, else the band's first.
std::vector<PlacedRegion> placedRegions(const core::ExecutionPlan& plan, int shown = 0);

// The SRAM overlay: each PE of a shown region holds that region's bytes per PE, as a share of
// what the plan may use per PE (plan.sramPerPeBytes); PEs outside the regions hold nothing. A
// stacked plan's PEs hold the sum over every tier, shown or not.
MeshField sramField(const core::ExecutionPlan& plan, const std::vector<PlacedRegion>& shown, int wafers);

// SRAM per PE in KiB with one decimal ("15.2 KiB"), the unit of the 48 KiB a PE has.
QString formatKib(std::int64_t bytes);

// One line about a region for the status bar and tooltips: op, layer, fused ops, rectangle,
// SRAM per PE against the capacity, compute cycles.
QString describeRegion(const core::ExecutionPlan& plan, const core::ModelGraph* graph, int planIndex);

} // namespace waferscope::ui
