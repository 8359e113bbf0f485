#pragma once

// Internal to core/model: the only headers that include yaml-cpp are this one and yamlfields.h.

#include "core/common/diagnostic.h"
#include "core/model/modelconfig.h"

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

namespace waferscope::core {

// Limits that keep hostile input from exhausting memory or time.
inline constexpr std::size_t kMaxParamsFileBytes = 16u << 20; // real params files are a few KB
inline constexpr std::size_t kMaxExpandedNodes = 1'000'000; // after alias expansion
inline constexpr int kMaxNestingDepth = 256; // mappings/sequences within each other; configs use < 10

// Parses params text into a YAML tree after the checks yaml-cpp does not make: text must be
// UTF-8 without control characters, indentation has no tabs, and alias expansion stays bounded
// (a "billion laughs" file is refused at the anchor that blows up). Throws InputError with a
// located diagnostic; an empty document is an error too. A repeated key keeps its last value,
// as the Model Zoo's own loader does, and adds a located warning.
using ParamsWarning = ModelConfig::Warning;
// A yaml-cpp exception a typed reader did not anticipate, located in `fileName`: still the
// user's input.
Diagnostic yamlDiagnostic(const YAML::Exception& error, const std::string& fileName);
YAML::Node parseParamsDocument(
    std::string_view text, const std::string& fileName, std::vector<ParamsWarning>& warnings);

} // namespace waferscope::core
