#pragma once

#include "core/model/modelgraph.h"

#include <string>

namespace waferscope::core {

// The `waferscope-cli inspect --json` document. Key names are a contract (issue 3): add keys,
// never rename them.
std::string modelGraphToJson(const ModelGraph& graph);

// "FILE:LINE:COL: warning: MESSAGE" for each config warning.
std::vector<std::string> formatWarnings(const ModelConfig& config);

// The precision weights are held in: the fp16 type under mixed precision, else float32.
std::string precisionName(const ModelConfig& config);

} // namespace waferscope::core
