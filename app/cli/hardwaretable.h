#pragma once

#include "core/hardware/systemspec.h"

#include <string>
#include <vector>

namespace waferscope::cli {

// The human-readable form of `waferscope-cli hardware`: one column per system, one row per
// fact; assumed values are marked with '*' and explained by a footnote.
std::string formatHardwareTable(const std::vector<core::SystemSpec>& systems);

} // namespace waferscope::cli
