#pragma once

#include "core/common/expected.h"
#include "core/model/modelconfig.h"
#include "core/model/modelgraph.h"

#include <string>
#include <string_view>

namespace waferscope::core {

// Reads a Model Zoo params YAML (either schema generation) into a validated ModelConfig.
// Every error is located (FILE:LINE:COL) and nothing is guessed: a missing required size, a
// wrong type, an absurd value or an inconsistent shape is an error.
Expected<ModelConfig> readParamsText(std::string_view text, const std::string& fileName);
Expected<ModelConfig> readParamsFile(const std::string& path);

// Builds the exact op graph of a config (every family supported by readParams).
ModelGraph buildModelGraph(const ModelConfig& config);

// readParamsFile + buildModelGraph.
Expected<ModelGraph> loadModel(const std::string& path);

} // namespace waferscope::core
