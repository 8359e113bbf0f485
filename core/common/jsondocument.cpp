#include "core/common/jsondocument.h"

#include "core/common/jsonfootprint.h"
#include "core/common/jsonlocator.h"
#include "core/common/memorybudget.h"

#include <algorithm>

namespace waferscope::core {

namespace {

using Json = nlohmann::json;

// Where and why a text is not JSON. nlohmann reports a number too large for a double ("1e999")
// as out_of_range, without the offset its parse_error carries; its SAX interface has both.
class SyntaxCheck final : public nlohmann::json_sax<Json> {
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

Expected<nlohmann::json> parseJsonDocument(std::string_view text, const std::string& fileName, int maxDepth,
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
    Json json;
    try {
        json = Json::parse(text.begin(), text.end());
    } catch (const Json::exception&) {
        SyntaxCheck check;
        Json::sax_parse(text.begin(), text.end(), &check);
        return locatedAt(check.offset, invalid + check.message);
    }
    if (const std::size_t deep = tooDeepAt(text, maxDepth); deep != std::string_view::npos)
        return locatedAt(deep, "nested deeper than " + std::to_string(maxDepth) + " levels; " + nesting);
    return json;
}

} // namespace waferscope::core
