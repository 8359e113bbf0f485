#include "core/model/namepattern.h"

#include <re2/re2.h>

namespace waferscope::core {

NamePattern::NamePattern(std::string text, std::shared_ptr<const re2::RE2> compiled)
    : m_text(std::move(text))
    , m_compiled(std::move(compiled))
{
}

std::optional<NamePattern> NamePattern::compile(const std::string& pattern, std::string& error)
{
    RE2::Options options;
    options.set_log_errors(false);
    options.set_max_mem(std::int64_t(8) << 20); // a compiled program is bounded, however the pattern is written
    auto compiled = std::make_shared<const re2::RE2>(pattern, options);
    if (!compiled->ok()) {
        error = compiled->error();
        return std::nullopt;
    }
    return NamePattern(pattern, std::move(compiled));
}

bool NamePattern::search(std::string_view name) const
{
    return RE2::PartialMatch(re2::StringPiece(name.data(), name.size()), *m_compiled);
}

std::optional<std::vector<std::string>> NamePattern::searchGroups(std::string_view text) const
{
    const int groups = m_compiled->NumberOfCapturingGroups();
    std::vector<re2::StringPiece> pieces(std::size_t(groups) + 1);
    if (!m_compiled->Match(
            re2::StringPiece(text.data(), text.size()), 0, text.size(), RE2::UNANCHORED, pieces.data(), groups + 1))
        return std::nullopt;
    std::vector<std::string> captured;
    for (int group = 1; group <= groups; ++group)
        captured.emplace_back(pieces[std::size_t(group)].data(), pieces[std::size_t(group)].size());
    return captured;
}

} // namespace waferscope::core
