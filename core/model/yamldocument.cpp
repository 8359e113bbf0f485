#include "core/model/yamldocument.h"

#include "core/model/yamlfootprint.h"

#include "core/common/memorybudget.h"
#include "core/common/units.h"

#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace waferscope::core {

namespace {

[[noreturn]] void fail(const std::string& fileName, int line, int column, const std::string& message)
{
    throw InputError { Diagnostic { fileName, line, column, message } };
}

[[noreturn]] void failAt(const std::string& fileName, const YAML::Mark& mark, const std::string& message)
{
    fail(fileName, mark.line + 1, mark.column + 1, message);
}

// Length of the UTF-8 sequence starting at `text[i]`, or 0 when it is malformed.
std::size_t utf8SequenceLength(std::string_view text, std::size_t i)
{
    const auto byte = static_cast<unsigned char>(text[i]);
    std::size_t length = byte < 0x80 ? 1
        : (byte >> 5) == 0x6         ? 2
        : (byte >> 4) == 0xE         ? 3
        : (byte >> 3) == 0x1E        ? 4
                                     : 0;
    if (length == 0 || i + length > text.size())
        return 0;
    for (std::size_t k = 1; k < length; ++k)
        if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2)
            return 0;
    return length;
}

void checkText(std::string_view text, const std::string& fileName, const YamlLimits& limits)
{
    if (text.size() > limits.maxBytes)
        fail(fileName, 1, 1,
            "file is " + std::to_string(text.size()) + " bytes; a " + limits.kind + " is at most "
                + std::to_string(limits.maxBytes) + " bytes");
    int line = 1, column = 1;
    bool inIndentation = true;
    for (std::size_t i = 0; i < text.size();) {
        const auto byte = static_cast<unsigned char>(text[i]);
        const std::size_t length = utf8SequenceLength(text, i);
        if (length == 0) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02X", byte);
            fail(fileName, line, column,
                std::string("not UTF-8 text (byte ") + hex + "); a params file is YAML text, is this a binary file?");
        }
        if (byte < 0x20 && byte != '\n' && byte != '\t' && byte != '\r')
            fail(fileName, line, column, "control character in the text (not UTF-8 YAML text; is this a binary file?)");
        if (byte == '\t' && inIndentation)
            fail(fileName, line, column, "syntax error: tab character in indentation (YAML indents with spaces only)");
        if (byte == '\n') {
            ++line;
            column = 1;
            inIndentation = true;
        } else {
            ++column;
            if (byte != ' ' && byte != '\t')
                inIndentation = false;
        }
        i += length;
    }
}

using MarkKey = std::tuple<int, int, int>; // pos, line, column: identifies a node, aliases included

MarkKey keyOf(const YAML::Node& node)
{
    const YAML::Mark mark = node.Mark();
    return { mark.pos, mark.line, mark.column };
}

// Counts the nodes of the tree with aliases expanded, memoised per node so that shared
// subtrees are visited once; refuses the first node whose expansion passes the limit, an alias
// that refers to an ancestor of itself (a cycle), and nesting deeper than kMaxNestingDepth.
class ExpansionGuard {
public:
    ExpansionGuard(const std::string& fileName, std::size_t maxNodes)
        : m_fileName(fileName)
        , m_maxNodes(maxNodes)
    {
    }

    std::size_t expandedSize(const YAML::Node& node, int depth = 0)
    {
        if (!node.IsSequence() && !node.IsMap())
            return 1;
        if (depth > kMaxNestingDepth)
            failAt(m_fileName, node.Mark(),
                "nesting deeper than " + std::to_string(kMaxNestingDepth) + " levels (through aliases)");
        const MarkKey key = keyOf(node);
        if (auto it = m_sizes.find(key); it != m_sizes.end()) {
            if (it->second == kInProgress)
                failAt(m_fileName, node.Mark(), "alias refers to a node that contains it (recursive alias)");
            return it->second;
        }
        m_sizes.emplace(key, kInProgress);
        std::size_t size = 1;
        for (auto it = node.begin(); it != node.end(); ++it) {
            if (node.IsMap())
                size += expandedSize(it->first, depth + 1) + expandedSize(it->second, depth + 1);
            else
                size += expandedSize(*it, depth + 1);
            if (size > m_maxNodes)
                failAt(m_fileName, node.Mark(),
                    "alias expansion of this node exceeds " + formatThousands(std::int64_t(m_maxNodes))
                        + " nodes (nested anchors and aliases, a 'billion laughs' file?)");
        }
        m_sizes[key] = size;
        return size;
    }

private:
    static constexpr std::size_t kInProgress = ~std::size_t(0);
    const std::string& m_fileName;
    std::size_t m_maxNodes;
    std::map<MarkKey, std::size_t> m_sizes; // expanded size per distinct node; kInProgress while visiting
};

// yaml-cpp's parser recurses once per nesting level; refuse deep nesting before it runs.
// Block nesting shows as the column where a line's content starts (after indentation and
// compact "- " / "? " indicators), flow nesting as open brackets.
void checkNestingDepth(std::string_view text, const std::string& fileName)
{
    int line = 1;
    std::size_t lineStart = 0;
    int flowDepth = 0;
    bool inSingle = false, inDouble = false, inComment = false, atLineStart = true;
    for (std::size_t i = 0; i <= text.size(); ++i) {
        const char c = i < text.size() ? text[i] : '\n';
        if (c == '\n') {
            ++line;
            lineStart = i + 1;
            inComment = false;
            atLineStart = true;
            continue;
        }
        if (atLineStart) {
            if (c == ' ' || ((c == '-' || c == '?') && i + 1 < text.size() && text[i + 1] == ' '))
                continue;
            atLineStart = false;
            if (i - lineStart > std::size_t(kMaxNestingDepth))
                fail(fileName, line, int(i - lineStart) + 1,
                    "nesting deeper than " + std::to_string(kMaxNestingDepth) + " levels");
        }
        if (inComment)
            continue;
        if (inDouble) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                inDouble = false;
            continue;
        }
        if (inSingle) {
            inSingle = c != '\'';
            continue;
        }
        if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t'))
            inComment = true;
        else if (c == '"')
            inDouble = true;
        else if (c == '\'' && (i == 0 || std::string_view(" [{,:").find(text[i - 1]) != std::string_view::npos))
            inSingle = true;
        else if ((c == '[' || c == '{') && ++flowDepth > kMaxNestingDepth)
            fail(fileName, line, int(i - lineStart) + 1,
                "nesting deeper than " + std::to_string(kMaxNestingDepth) + " levels");
        else if ((c == ']' || c == '}') && flowDepth > 0)
            --flowDepth;
    }
}

// YAML 1.1 merge keys (`<<: *defaults`), which PyYAML honours and yaml-cpp 0.7 reads as a plain
// key: the merged mappings' keys are added where the mapping does not set them itself (earlier
// mappings of a merged list win over later ones), and the `<<` entry is dropped. Work is linear
// in the entries merged (a hash set of each mapping's keys), and the entries all merges add
// together stay within the node limit.
class MergeKeys {
public:
    MergeKeys(const std::string& fileName, std::size_t maxEntries)
        : m_fileName(fileName)
        , m_maxEntries(maxEntries)
    {
    }

    void apply(YAML::Node node)
    {
        if (!node.IsSequence() && !node.IsMap())
            return;
        if (!m_visited.insert(keyOf(node)).second)
            return;
        for (auto it = node.begin(); it != node.end(); ++it)
            apply(node.IsMap() ? it->second : *it);
        const YAML::Node lookup = node; // const lookups leave the mapping as it is (no empty entries)
        if (!node.IsMap() || !lookup["<<"].IsDefined())
            return;
        const YAML::Node merged = lookup["<<"];
        std::vector<YAML::Node> sources;
        if (merged.IsMap())
            sources.push_back(merged);
        else if (merged.IsSequence())
            for (const YAML::Node& item : merged)
                sources.push_back(item);
        for (const YAML::Node& source : sources)
            if (!source.IsMap())
                failAt(m_fileName, source.Mark(), "a merge key '<<' takes a mapping or a list of mappings");
        node.remove("<<");
        std::unordered_set<std::string> present;
        for (auto it = node.begin(); it != node.end(); ++it)
            if (it->first.IsScalar())
                present.insert(it->first.Scalar());
        for (const YAML::Node& source : sources)
            for (auto it = source.begin(); it != source.end(); ++it) {
                if (!it->first.IsScalar() || !present.insert(it->first.Scalar()).second)
                    continue;
                if (++m_added > m_maxEntries)
                    failAt(m_fileName, merged.Mark(),
                        "merge keys ('<<') would add more than " + formatThousands(std::int64_t(m_maxEntries))
                            + " entries in all (each merge copies the merged mapping's keys)");
                node.force_insert(it->first, it->second);
            }
    }

private:
    const std::string& m_fileName;
    std::size_t m_maxEntries;
    std::size_t m_added = 0; // entries added by every merge so far
    std::set<MarkKey> m_visited;
};

// The Model Zoo's loader (PyYAML) keeps the last of repeated keys; yaml-cpp's lookup finds the
// first. A mapping with repeats is rebuilt with the last occurrence of each key, so that lookups
// see what Cerebras's tools see, in time linear in its entries. The first repeat in the file is a
// located warning (it is usually an editing slip), and it counts the others.
class RepeatedKeys {
public:
    explicit RepeatedKeys(std::vector<ParamsWarning>& warnings)
        : m_warnings(warnings)
    {
    }

    // Runs after ExpansionGuard, so the graph is acyclic and its depth bounded.
    void keepLast(YAML::Node node)
    {
        if (!node.IsSequence() && !node.IsMap())
            return;
        if (!m_visited.insert(keyOf(node)).second)
            return;
        if (node.IsSequence()) {
            for (YAML::Node child : node)
                keepLast(child);
            return;
        }
        std::vector<std::pair<YAML::Node, YAML::Node>> entries;
        std::unordered_map<std::string, std::size_t> last; // key -> index of its last entry
        bool repeated = false;
        for (auto it = node.begin(); it != node.end(); ++it) {
            if (it->first.IsScalar()) {
                const auto [at, inserted] = last.try_emplace(it->first.Scalar(), entries.size());
                if (!inserted) {
                    warnAbout(it->first, entries[at->second].first);
                    at->second = entries.size();
                    repeated = true;
                }
            }
            entries.emplace_back(it->first, it->second);
            keepLast(it->second);
        }
        if (!repeated)
            return;
        YAML::Node rebuilt(YAML::NodeType::Map);
        for (std::size_t i = 0; i < entries.size(); ++i)
            if (!entries[i].first.IsScalar() || last.at(entries[i].first.Scalar()) == i)
                rebuilt.force_insert(entries[i].first, entries[i].second);
        node = rebuilt; // every alias of this mapping sees the rebuilt one
    }

    // Adds the count of the repeats not named to the first one's warning.
    void finish()
    {
        if (m_repeats > 1)
            m_warnings[m_firstWarning].message += "; " + formatThousands(std::int64_t(m_repeats - 1))
                + " more repeated keys in this file are read the same way";
    }

private:
    void warnAbout(const YAML::Node& repeat, const YAML::Node& previous)
    {
        if (m_repeats++ > 0)
            return;
        m_firstWarning = m_warnings.size();
        m_warnings.push_back({ repeat.Mark().line + 1, repeat.Mark().column + 1,
            "duplicate key '" + repeat.Scalar() + "' (also on line " + std::to_string(previous.Mark().line + 1)
                + "); the last value is used, as the Model Zoo's loader does" });
    }

    std::vector<ParamsWarning>& m_warnings;
    std::set<MarkKey> m_visited;
    std::size_t m_repeats = 0; // repeated keys seen in the file
    std::size_t m_firstWarning = 0; // index of the first one's warning
};

// Refuses a text whose tree would pass the node limit or the memory budget, before the tree is
// built. A node takes at least one byte of text ("{a,b}" holds four), so a text shorter than
// both bounds in nodes needs no count, which spares real configs (a few KB) the second parse.
void checkTreeSize(std::string_view text, const std::string& fileName, const YamlLimits& limits)
{
    const MemoryBudget budget = memoryBudget();
    const double textBytes = 2.0 * double(text.size()); // the copies the parse makes
    const auto budgetNodes = std::size_t(std::max(0.0, double(budget.bytes) - textBytes) / kYamlBytesPerNode);
    const std::size_t limit = std::min(limits.maxNodes, budgetNodes);
    if (text.size() <= limit)
        return;
    const YamlFootprint census = estimateYamlFootprint(text, limit);
    if (!census.pastLimit)
        return;
    if (limit == limits.maxNodes)
        fail(fileName, census.line, census.column,
            "the file holds more than " + formatThousands(std::int64_t(limits.maxNodes)) + " YAML nodes, the most a "
                + limits.kind + " may hold");
    Diagnostic refused = *checkMemory(
        "reading this YAML file (more than " + formatThousands(std::int64_t(census.nodes - 1)) + " nodes)",
        census.bytes, "", Diagnostic { fileName, census.line, census.column, "" }, budget);
    throw InputError { refused };
}

// The line where a second YAML document starts, or 0. A line that begins with the marker "---"
// (or follows the end marker "...") starts a new document wherever it is: YAML forbids the
// markers at the start of a line inside any content. One "---" before the content is allowed.
int secondDocumentLine(std::string_view text)
{
    bool content = false, marker = false, ended = false;
    int line = 1;
    for (std::size_t start = 0; start < text.size(); ++line) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos)
            end = text.size();
        const std::string_view row = text.substr(start, end - start);
        start = end + 1;
        const auto isMarker = [&](std::string_view mark) {
            return row.substr(0, 3) == mark && (row.size() == 3 || row[3] == ' ' || row[3] == '\t');
        };
        const std::size_t first = row.find_first_not_of(" \t");
        const bool blank = first == std::string_view::npos || row[first] == '#';
        if (isMarker("---")) {
            if (content || marker || ended)
                return line;
            marker = true;
            content = row.find_first_not_of(" \t", 3) != std::string_view::npos
                && row[row.find_first_not_of(" \t", 3)] != '#';
        } else if (isMarker("...")) {
            ended = true;
        } else if (!blank && !(row[0] == '%' && !content && !marker)) {
            if (ended)
                return line;
            content = true;
        }
    }
    return 0;
}

// Line breaks as YAML reads them: yaml-cpp knows LF and CRLF, and YAML also allows a lone CR
// (classic Mac OS files), which would otherwise leave the whole file on one line.
std::string withLineFeeds(std::string_view text)
{
    std::string normalized;
    normalized.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\r')
            normalized += text[i];
        else if (i + 1 >= text.size() || text[i + 1] != '\n')
            normalized += '\n';
    }
    return normalized;
}

bool onlyCommentsOrSpace(std::string_view text)
{
    bool inComment = false;
    for (char c : text) {
        if (c == '\n')
            inComment = false;
        else if (c == '#')
            inComment = true;
        else if (!inComment && c != ' ' && c != '\t' && c != '\r')
            return false;
    }
    return true;
}

} // namespace

YAML::Node parseParamsDocument(
    std::string_view text, const std::string& fileName, std::vector<ParamsWarning>& warnings, const YamlLimits& limits)
{
    std::string normalized;
    if (text.find('\r') != std::string_view::npos) {
        normalized = withLineFeeds(text);
        text = normalized;
    }
    if (onlyCommentsOrSpace(text))
        fail(fileName, 1, 1, "empty params file: no YAML content, expected a Model Zoo params mapping");
    checkText(text, fileName, limits);
    checkNestingDepth(text, fileName);
    if (const int second = secondDocumentLine(text))
        fail(fileName, second, 1,
            std::string("a second YAML document starts here; a ") + limits.kind
                + " is one document (split the documents into files of their own)");
    checkTreeSize(text, fileName, limits);
    YAML::Node root;
    try {
        root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& error) {
        const int line = error.mark.is_null() ? 1 : error.mark.line + 1;
        const int column = error.mark.is_null() ? 1 : error.mark.column + 1;
        std::string message = "syntax error: " + error.msg;
        // yaml-cpp does not name the missing anchor; the alias token sits at the mark.
        if (!error.mark.is_null() && error.msg.find("anchor") != std::string::npos
            && std::size_t(error.mark.pos) < text.size() && text[std::size_t(error.mark.pos)] == '*') {
            const std::size_t end = text.find_first_of(" \t\r\n,]}", std::size_t(error.mark.pos));
            message += " (alias '"
                + std::string(text.substr(std::size_t(error.mark.pos), end - std::size_t(error.mark.pos))) + "')";
        }
        fail(fileName, line, column, message);
    }
    if (root.IsNull())
        fail(fileName, 1, 1, "empty params file: no YAML content, expected a Model Zoo params mapping");
    ExpansionGuard(fileName, limits.maxNodes).expandedSize(root);
    MergeKeys(fileName, limits.maxNodes).apply(root);
    RepeatedKeys repeated(warnings);
    repeated.keepLast(root);
    repeated.finish();
    if (!root.IsMap())
        fail(fileName, root.Mark().line + 1, root.Mark().column + 1,
            std::string(
                "expected a mapping at the top level (train_input/model/optimizer/runconfig or trainer:), got a ")
                + (root.IsSequence() ? "sequence" : "scalar"));
    return root;
}

Diagnostic yamlDiagnostic(const YAML::Exception& error, const std::string& fileName)
{
    const int line = error.mark.is_null() ? 1 : error.mark.line + 1;
    const int column = error.mark.is_null() ? 1 : error.mark.column + 1;
    return Diagnostic { fileName, line, column, error.msg };
}

} // namespace waferscope::core
