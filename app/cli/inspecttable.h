#pragma once

#include "core/model/modelgraph.h"

#include <string>

namespace waferscope::cli {

// The human-readable `inspect` output: a summary, then the ops. Runs of transformer blocks
// whose ops are identical collapse into one row per op with the block range, unless `allOps`.
std::string formatInspectTable(const core::ModelGraph& graph, bool allOps);

} // namespace waferscope::cli
