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
//
// The tree is a JsonTree, built by a SAX handler into that object from the start, so that its
// parts are taken apart without allocating whether the parse ends, fails or is unwound by a
// std::bad_alloc.
class JsonTree;
Expected<JsonTree> parseJsonDocument(std::string_view text, const std::string& fileName, int maxDepth,
    const std::string& invalid, const std::string& nesting);

// A JSON tree read from a user's file, whose destructor cannot throw. nlohmann's own destructor
// first copies the children of the tree's widest container into a new vector (16 bytes each);
// when that allocation fails, inside a destructor, the process aborts, and memory is short
// exactly while a failed allocation unwinds. This one first takes the tree apart from the leaves
// up, which frees and never allocates; the recursion is as deep as the document, which
// parseJsonDocument holds to its `maxDepth` before it builds anything.
class JsonTree : public nlohmann::json {
public:
    JsonTree() = default;
    explicit JsonTree(nlohmann::json&& json) noexcept
        : nlohmann::json(std::move(json))
    {
    }
    JsonTree(JsonTree&&) noexcept = default;
    JsonTree& operator=(JsonTree&& other) noexcept;
    JsonTree(const JsonTree&) = delete;
    JsonTree& operator=(const JsonTree&) = delete;
    ~JsonTree();
};

// Empties `json` from the leaves up without allocating (see JsonTree); recursion is as deep as
// the tree.
void dismantleJson(nlohmann::json& json) noexcept;

} // namespace waferscope::core
