#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace re2 {
class RE2;
}

namespace waferscope::core {

// A regular expression over weight names (a config's `freeze` patterns), matched as Python's
// re.search does: anywhere in the name. It runs on RE2, whose matching time is linear in the
// name whatever the pattern, so no config can make WaferScope backtrack for minutes; RE2 has
// no backreferences or lookaround, which weight-name patterns do not use. Immutable once made,
// so it may be shared between threads.
class NamePattern {
public:
    // The pattern, or nullopt with `error` set to why it is not a valid expression.
    static std::optional<NamePattern> compile(const std::string& pattern, std::string& error);

    bool search(std::string_view name) const;
    // The text of each capturing group of the first match, or nullopt when nothing matches.
    std::optional<std::vector<std::string>> searchGroups(std::string_view text) const;
    const std::string& text() const { return m_text; }

private:
    NamePattern(std::string text, std::shared_ptr<const re2::RE2> compiled);
    std::string m_text;
    std::shared_ptr<const re2::RE2> m_compiled;
};

} // namespace waferscope::core
