#pragma once

#include "core/hardware/systemspec.h"

#include <string>
#include <vector>

namespace waferscope::core {

// The `waferscope-cli hardware --json` document: {"systems":[{...}, ...]}. Key names are a
// contract (issue 2); add keys, never rename them.
std::string hardwareToJson(const std::vector<SystemSpec>& systems);

} // namespace waferscope::core
