#include "core/model/yamldocument.h"

#include <map>
#include <set>
#include <tuple>

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

void checkText(std::string_view text, const std::string& fileName)
{
    if (text.size() > kMaxParamsFileBytes)
        fail(fileName, 1, 1,
            "file is " + std::to_string(text.size() >> 20) + " MiB; a params YAML is expected to be under "
                + std::to_string(kMaxParamsFileBytes >> 20) + " MiB");
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
    explicit ExpansionGuard(const std::string& fileName)
        : m_fileName(fileName)
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
            if (size > kMaxExpandedNodes)
                failAt(m_fileName, node.Mark(),
                    "alias expansion of this node exceeds " + std::to_string(kMaxExpandedNodes)
                        + " nodes (nested anchors and aliases, a 'billion laughs' file?)");
        }
        m_sizes[key] = size;
        return size;
    }

private:
    static constexpr std::size_t kInProgress = ~std::size_t(0);
    const std::string& m_fileName;
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
// mappings of a merged list win over later ones), and the `<<` entry is dropped.
void applyMergeKeys(YAML::Node node, const std::string& fileName, std::set<MarkKey>& visited)
{
    if (!node.IsSequence() && !node.IsMap())
        return;
    if (!visited.insert(keyOf(node)).second)
        return;
    for (auto it = node.begin(); it != node.end(); ++it)
        applyMergeKeys(node.IsMap() ? it->second : *it, fileName, visited);
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
            failAt(fileName, source.Mark(), "a merge key '<<' takes a mapping or a list of mappings");
    node.remove("<<");
    for (const YAML::Node& source : sources)
        for (auto it = source.begin(); it != source.end(); ++it)
            if (it->first.IsScalar() && !lookup[it->first.Scalar()].IsDefined())
                node.force_insert(it->first, it->second);
}

// The Model Zoo's loader (PyYAML) keeps the last of repeated keys; yaml-cpp's lookup finds the
// first. Earlier occurrences are removed so that lookups see the last, as Cerebras's tools do,
// and each repeat is a located warning, since it is usually an editing slip.
void keepLastOfRepeatedKeys(
    YAML::Node node, const std::string& fileName, std::set<MarkKey>& visited, std::vector<ParamsWarning>& warnings)
{
    // Runs after ExpansionGuard, so the graph is acyclic and its depth bounded.
    if (!node.IsSequence() && !node.IsMap())
        return;
    if (!visited.insert(keyOf(node)).second)
        return;
    if (node.IsSequence()) {
        for (YAML::Node child : node)
            keepLastOfRepeatedKeys(child, fileName, visited, warnings);
        return;
    }
    std::map<std::string, std::vector<int>> lines; // key -> lines of its occurrences, in order
    for (auto it = node.begin(); it != node.end(); ++it) {
        if (it->first.IsScalar()) {
            std::vector<int>& seen = lines[it->first.Scalar()];
            if (!seen.empty())
                warnings.push_back({ it->first.Mark().line + 1, it->first.Mark().column + 1,
                    "duplicate key '" + it->first.Scalar() + "' (also on line " + std::to_string(seen.back())
                        + "); the last value is used, as the Model Zoo's loader does" });
            seen.push_back(it->first.Mark().line + 1);
        }
        keepLastOfRepeatedKeys(it->second, fileName, visited, warnings);
    }
    for (const auto& [key, occurrences] : lines)
        for (std::size_t repeat = 1; repeat < occurrences.size(); ++repeat)
            node.remove(key); // removes the first remaining occurrence
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

YAML::Node parseParamsDocument(std::string_view text, const std::string& fileName, std::vector<ParamsWarning>& warnings)
{
    if (onlyCommentsOrSpace(text))
        fail(fileName, 1, 1, "empty params file: no YAML content, expected a Model Zoo params mapping");
    checkText(text, fileName);
    checkNestingDepth(text, fileName);
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
    ExpansionGuard(fileName).expandedSize(root);
    std::set<MarkKey> merged, visited;
    applyMergeKeys(root, fileName, merged);
    keepLastOfRepeatedKeys(root, fileName, visited, warnings);
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
