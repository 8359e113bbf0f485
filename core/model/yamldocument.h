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
// Real params files are a few KB (the largest Model Zoo config is 25 KB). yaml-cpp reads about
// 1 MB a second here, so the cap keeps a params file's read (with its node count) under 10 s.
inline constexpr std::size_t kMaxParamsFileBytes = 4u << 20;
inline constexpr std::size_t kMaxExpandedNodes = 1'000'000; // after alias expansion
inline constexpr int kMaxNestingDepth = 256; // mappings/sequences within each other; configs use < 10

// What one kind of YAML file may hold. A params file has a few hundred nodes; a jobs file of
// 100,000 jobs about 1.5 million. A file's tree is also held to the memory budget.
struct YamlLimits {
    std::size_t maxBytes = kMaxParamsFileBytes; // of the text
    std::size_t maxNodes = kMaxExpandedNodes; // in the tree, aliases expanded, merge keys applied
    const char* kind = "params file"; // "a params file holds ..."
};

// Parses params text into a YAML tree after the checks yaml-cpp does not make: text must be
// UTF-8 without control characters, indentation has no tabs, line breaks may be LF, CRLF or a
// lone CR (as YAML allows), the file holds one document, its tree fits the memory budget (exit
// 3, checked by a pass that builds nothing), and its nodes, alias expansion (a "billion laughs"
// file is refused at the anchor that blows up) and merge keys stay within `limits`. Throws
// InputError with a located diagnostic; an empty document is an error too. A repeated key keeps
// its last value, as the Model Zoo's own loader does, and adds a located warning: the first
// repeat is named, and the others are counted in it.
using ParamsWarning = ModelConfig::Warning;
// A yaml-cpp exception a typed reader did not anticipate, located in `fileName`: still the
// user's input.
Diagnostic yamlDiagnostic(const YAML::Exception& error, const std::string& fileName);
YAML::Node parseParamsDocument(std::string_view text, const std::string& fileName, std::vector<ParamsWarning>& warnings,
    const YamlLimits& limits = YamlLimits {});

} // namespace waferscope::core
