#include "core/common/jsondocument.h"

#include "core/common/jsonfootprint.h"
#include "core/common/jsonlocator.h"
#include "core/common/memorybudget.h"
#include "core/common/units.h"

#include <algorithm>
#include <new>
#include <vector>

namespace waferscope::core {

namespace {

using Json = nlohmann::json;

// Where and why a text is not JSON. nlohmann reports a number too large for a double ("1e999")
// as out_of_range, without the offset its parse_error carries; its SAX interface has both.
class SyntaxCheck : public nlohmann::json_sax<Json> {
public:
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return true; }
    bool key(string_t&) override { return true; }
    bool end_object() override { return true; }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool parse_error(std::size_t position, const std::string& lastToken, const Json::exception& error) override
    {
        // `position` counts the bytes read: a syntax error is at the last one, a number too large
        // for a double (out_of_range 406) starts where its token does.
        offset = error.id == 406 ? position - std::min(position, lastToken.size()) : position > 0 ? position - 1 : 0;
        // nlohmann's message starts with "[json.exception.parse_error.101] parse error at ...";
        // keep only the human part after "parse error".
        message = error.what();
        if (const std::size_t colon = message.find(": "); colon != std::string::npos)
            message.erase(0, colon + 2);
        else if (const std::size_t id = message.find("] "); id != std::string::npos)
            message.erase(0, id + 2);
        return false;
    }

    std::size_t offset = 0;
    std::string message;
};

// Builds the tree into `root` as nlohmann's own DOM parser does (a repeated key keeps its last
// value), so that whatever was built is in a JsonTree when an allocation fails, and stops at the
// first syntax error as SyntaxCheck does.
class TreeBuilder final : public SyntaxCheck {
public:
    explicit TreeBuilder(Json& root)
        : m_root(root)
    {
    }
    bool null() override { return put(Json(nullptr)) != nullptr; }
    bool boolean(bool value) override { return put(Json(value)) != nullptr; }
    bool number_integer(number_integer_t value) override { return put(Json(value)) != nullptr; }
    bool number_unsigned(number_unsigned_t value) override { return put(Json(value)) != nullptr; }
    bool number_float(number_float_t value, const string_t&) override { return put(Json(value)) != nullptr; }
    bool string(string_t& value) override { return put(Json(std::move(value))) != nullptr; }
    bool binary(binary_t& value) override { return put(Json(std::move(value))) != nullptr; }
    bool start_object(std::size_t) override { return open(Json::value_t::object); }
    bool key(string_t& key) override
    {
        m_member = &m_open.back()->get_ref<Json::object_t&>()[std::move(key)];
        return true;
    }
    bool end_object() override { return close(); }
    bool start_array(std::size_t) override { return open(Json::value_t::array); }
    bool end_array() override { return close(); }

private:
    Json* put(Json&& value)
    {
        if (m_open.empty()) {
            m_root = std::move(value);
            return &m_root;
        }
        Json& parent = *m_open.back();
        if (parent.is_array()) {
            Json::array_t& elements = parent.get_ref<Json::array_t&>();
            elements.push_back(std::move(value));
            return &elements.back();
        }
        *m_member = std::move(value);
        return m_member;
    }
    bool open(Json::value_t type)
    {
        Json* container = put(Json(type));
        m_open.push_back(container);
        return true;
    }
    bool close()
    {
        m_open.pop_back();
        return true;
    }

    Json& m_root;
    std::vector<Json*> m_open; // the containers open, outermost first
    Json* m_member = nullptr; // the value the last key names
};

// Offset of the first bracket nested deeper than `maxDepth` in JSON text, or npos.
std::size_t tooDeepAt(std::string_view text, int maxDepth)
{
    int depth = 0;
    bool inString = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            i += c == '\\' ? 1 : 0;
            inString = c != '"';
        } else if (c == '"') {
            inString = true;
        } else if ((c == '[' || c == '{') && ++depth > maxDepth) {
            return i;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return std::string_view::npos;
}

} // namespace

void dismantleJson(Json& json) noexcept
{
    if (json.is_array()) {
        Json::array_t& elements = json.get_ref<Json::array_t&>();
        for (Json& element : elements)
            dismantleJson(element);
        elements.clear();
    } else if (json.is_object()) {
        Json::object_t& members = json.get_ref<Json::object_t&>();
        for (auto& member : members)
            dismantleJson(member.second);
        members.clear();
    }
}

JsonTree& JsonTree::operator=(JsonTree&& other) noexcept
{
    dismantleJson(*this);
    Json::operator=(std::move(static_cast<Json&>(other)));
    return *this;
}

JsonTree::~JsonTree()
{
    dismantleJson(*this);
}

Expected<JsonTree> parseJsonDocument(std::string_view text, const std::string& fileName, int maxDepth,
    const std::string& invalid, const std::string& nesting)
{
    const auto locatedAt = [&](std::size_t offset, const std::string& message) {
        const JsonLocator::Position at = JsonLocator::positionOfOffset(text, offset);
        return Diagnostic { fileName, at.line, at.column, message };
    };
    if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos)
        return locatedAt(nul, invalid + "a NUL byte (is this a binary file?)");
    // No JSON tree is more than about 30 times its text (an array of empty objects), so only a text
    // that could pass the budget pays for the counting pass.
    const MemoryBudget budget = memoryBudget();
    if (double(text.size()) * 64.0 > double(budget.bytes)) {
        const JsonFootprint footprint = estimateJsonFootprint(text);
        if (std::optional<Diagnostic> refused
            = checkMemory("reading this JSON document (" + std::to_string(footprint.values) + " values)",
                footprint.bytes, "", Diagnostic { fileName, 1, 1, "", Diagnostic::Kind::CannotMap }, budget))
            return *refused;
    }
    // Depth first, so that no tree is ever deeper than `maxDepth` (JsonTree's destructor recurses);
    // a syntax error anywhere still comes first, as a parser would find it.
    if (const std::size_t deep = tooDeepAt(text, maxDepth); deep != std::string_view::npos) {
        SyntaxCheck check;
        if (!Json::sax_parse(text.begin(), text.end(), &check))
            return locatedAt(check.offset, invalid + check.message);
        return locatedAt(deep, "nested deeper than " + std::to_string(maxDepth) + " levels; " + nesting);
    }
    // The counting pass may have let the text through and memory still run short (other work
    // holds the rest, or the budget's half was not there): the partial tree is taken apart as the
    // exception leaves the block, and the answer is the refusal the budget would have given.
    try {
        JsonTree tree;
        TreeBuilder builder(tree);
        if (!Json::sax_parse(text.begin(), text.end(), &builder))
            return locatedAt(builder.offset, invalid + builder.message);
        return tree;
    } catch (const std::bad_alloc&) {
        return Diagnostic { fileName, 1, 1,
            "ran out of memory reading this JSON document (" + formatBytes(double(text.size())) + " of text; "
                + std::to_string(budget.bytes >> 20) + " MiB is the budget, " + budget.origin + ")",
            Diagnostic::Kind::CannotMap };
    }
}

} // namespace waferscope::core
