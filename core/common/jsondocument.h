#pragma once

#include "core/common/diagnostic.h"
#include "core/common/expected.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace waferscope::core {

// Parses a JSON file a user gave (a hardware preset, a report) with every refusal located:
// - a raw NUL byte (JSON has none; nlohmann would stop there and JsonLocator read on);
// - a syntax error, or a number too large for a double ("1e999", which nlohmann reports without
//   a position), at the offending byte;
// - nesting deeper than `maxDepth`, at the bracket (JsonLocator's pointers grow with depth, so
//   this keeps locating errors linear in the text).
// - a tree that would need more memory than the budget (memorybudget.h), before it is built:
//   exit 3, located at 1:1 (a text's tree can take 30 times its size).
// `invalid` starts the message of the first two ("invalid JSON: "); `nesting` ends the third
// ("a hardware preset nests 3").
Expected<nlohmann::json> parseJsonDocument(std::string_view text, const std::string& fileName, int maxDepth,
    const std::string& invalid, const std::string& nesting);

} // namespace waferscope::core
