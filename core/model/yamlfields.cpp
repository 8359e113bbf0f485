#include "core/model/yamlfields.h"

#include "core/common/diagnostic.h"
#include "core/common/text.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace waferscope::core {

namespace {

std::string dotted(const YamlSection& section, const std::string& key)
{
    return section.path.empty() ? key : section.path + "." + key;
}

bool isQuoted(const YAML::Node& node)
{
    return node.Tag() == "!";
}

std::string describe(const YAML::Node& node)
{
    if (node.IsSequence())
        return "a list";
    if (node.IsMap())
        return "a mapping";
    if (isQuoted(node))
        return "the string \"" + node.Scalar() + "\"";
    return node.Scalar();
}

std::optional<double> parseDouble(const std::string& text)
{
    if (text.empty())
        return std::nullopt;
    const char* begin = text.c_str();
    char* end = nullptr;
    errno = 0;
    const double value = std::strtod(begin, &end);
    if (end != begin + text.size())
        return std::nullopt;
    if (errno == ERANGE && std::isinf(value))
        return value; // "1e999": still a number, rejected by the range check
    return value;
}

std::string formatNumber(double value)
{
    std::ostringstream out;
    out << value;
    return out.str();
}

} // namespace

YamlFields::YamlFields(std::string fileName)
    : m_fileName(std::move(fileName))
{
}

void YamlFields::fail(const YAML::Mark& mark, const std::string& message) const
{
    const int line = mark.is_null() ? 1 : mark.line + 1;
    const int column = mark.is_null() ? 1 : mark.column + 1;
    throw InputError { Diagnostic { m_fileName, line, column, message } };
}

void YamlFields::failAt(const YAML::Mark& mark, Diagnostic diagnostic) const
{
    diagnostic.file = m_fileName;
    diagnostic.line = mark.is_null() ? 1 : mark.line + 1;
    diagnostic.column = mark.is_null() ? 1 : mark.column + 1;
    throw InputError { std::move(diagnostic) };
}

YamlSection YamlFields::root(const YAML::Node& document) const
{
    YAML::Mark start;
    start.line = 0;
    start.column = 0;
    return YamlSection { document, start, "" };
}

YamlSection YamlFields::section(const YamlSection& parent, const std::string& key, bool required) const
{
    YamlSection result { YAML::Node(YAML::NodeType::Undefined), parent.keyMark, dotted(parent, key) };
    if (parent.present()) {
        for (auto it = parent.node.begin(); it != parent.node.end(); ++it) {
            if (!it->first.IsScalar() || it->first.Scalar() != key)
                continue;
            result.keyMark = it->first.Mark();
            if (it->second.IsNull())
                break;
            if (!it->second.IsMap())
                fail(it->second.Mark(), "'" + result.path + "' must be a mapping of keys, got " + describe(it->second));
            result.node = it->second;
            return result;
        }
    }
    if (required)
        fail(parent.keyMark, "missing section '" + result.path + "'");
    return result;
}

std::optional<YAML::Node> YamlFields::value(const YamlSection& section, const std::string& key) const
{
    if (!section.present())
        return std::nullopt;
    const YAML::Node node = section.node[key];
    if (!node.IsDefined() || node.IsNull())
        return std::nullopt;
    return node;
}

YAML::Mark YamlFields::valueMark(const YamlSection& section, const std::string& key) const
{
    if (std::optional<YAML::Node> node = value(section, key))
        return node->Mark();
    return section.keyMark;
}

std::int64_t YamlFields::toInteger(
    const YAML::Node& node, const std::string& name, std::int64_t min, std::int64_t max) const
{
    if (!node.IsScalar() || isQuoted(node))
        fail(node.Mark(), "'" + name + "' must be an integer, got " + describe(node));
    const std::optional<double> parsed = parseDouble(node.Scalar());
    if (!parsed)
        fail(node.Mark(), "'" + name + "' must be an integer, got " + describe(node));
    const double value = *parsed;
    if (std::isfinite(value) && value != std::floor(value))
        fail(node.Mark(), "'" + name + "' must be an integer, got " + node.Scalar());
    if (!std::isfinite(value) || value < double(min) || value > double(max))
        fail(node.Mark(),
            "'" + name + "' is " + formatNumber(value) + ", expected an integer in [" + std::to_string(min) + ", "
                + std::to_string(max) + "]");
    return static_cast<std::int64_t>(value);
}

std::optional<std::int64_t> YamlFields::integer(
    const YamlSection& section, const std::string& key, std::int64_t min, std::int64_t max) const
{
    const std::optional<YAML::Node> node = value(section, key);
    if (!node)
        return std::nullopt;
    return toInteger(*node, dotted(section, key), min, max);
}

std::int64_t YamlFields::requiredInteger(
    const YamlSection& section, const std::string& key, std::int64_t min, std::int64_t max) const
{
    if (std::optional<std::int64_t> result = integer(section, key, min, max))
        return *result;
    fail(section.keyMark,
        "missing key '" + dotted(section, key) + "' (an integer in [" + std::to_string(min) + ", " + std::to_string(max)
            + "])");
}

std::optional<double> YamlFields::number(
    const YamlSection& section, const std::string& key, double min, double max) const
{
    const std::optional<YAML::Node> node = value(section, key);
    if (!node)
        return std::nullopt;
    const std::string name = dotted(section, key);
    std::optional<double> parsed;
    if (node->IsScalar() && !isQuoted(*node))
        parsed = parseDouble(node->Scalar());
    if (!parsed)
        fail(node->Mark(), "'" + name + "' must be a number, got " + describe(*node));
    if (!std::isfinite(*parsed) || *parsed < min || *parsed > max)
        fail(node->Mark(),
            "'" + name + "' is " + node->Scalar() + ", expected a number in [" + formatNumber(min) + ", "
                + formatNumber(max) + (max == 1.0 && min == 0.0 ? ")" : "]"));
    return parsed;
}

std::optional<bool> YamlFields::boolean(const YamlSection& section, const std::string& key) const
{
    const std::optional<YAML::Node> node = value(section, key);
    if (!node)
        return std::nullopt;
    bool result = false;
    if (!node->IsScalar() || isQuoted(*node) || !YAML::convert<bool>::decode(*node, result))
        fail(node->Mark(), "'" + dotted(section, key) + "' must be true or false, got " + describe(*node));
    return result;
}

std::optional<std::string> YamlFields::text(const YamlSection& section, const std::string& key) const
{
    const std::optional<YAML::Node> node = value(section, key);
    if (!node)
        return std::nullopt;
    if (!node->IsScalar())
        fail(node->Mark(), "'" + dotted(section, key) + "' must be a string, got " + describe(*node));
    return node->Scalar();
}

std::optional<std::string> YamlFields::choice(
    const YamlSection& section, const std::string& key, std::initializer_list<const char*> accepted) const
{
    std::optional<std::string> result = text(section, key);
    if (!result)
        return std::nullopt;
    const std::string lowered = toLowerAscii(*result);
    std::string list;
    for (const char* option : accepted) {
        if (lowered == option)
            return lowered;
        list += (list.empty() ? "" : ", ") + std::string(option);
    }
    fail(valueMark(section, key),
        "'" + dotted(section, key) + "' is '" + *result
            + "', which WaferScope does not support (expected one of: " + list + ")");
}

std::vector<std::string> YamlFields::textList(const YamlSection& section, const std::string& key) const
{
    const std::optional<YAML::Node> node = value(section, key);
    if (!node)
        return {};
    if (node->IsScalar())
        return { node->Scalar() };
    if (!node->IsSequence())
        fail(node->Mark(), "'" + dotted(section, key) + "' must be a string or a list of strings");
    std::vector<std::string> result;
    for (const YAML::Node& item : *node) {
        if (!item.IsScalar())
            fail(item.Mark(), "'" + dotted(section, key) + "' must list strings, got " + describe(item));
        result.push_back(item.Scalar());
    }
    return result;
}

std::vector<std::int64_t> YamlFields::integerList(
    const YamlSection& section, const std::string& key, std::int64_t min, std::int64_t max) const
{
    const std::optional<YAML::Node> node = value(section, key);
    if (!node)
        return {};
    if (!node->IsSequence())
        fail(node->Mark(), "'" + dotted(section, key) + "' must be a list of integers, got " + describe(*node));
    std::vector<std::int64_t> result;
    for (const YAML::Node& item : *node)
        result.push_back(toInteger(item, dotted(section, key), min, max));
    return result;
}

void YamlFields::warnUnknownKeys(const YamlSection& section, std::initializer_list<const char*> known,
    std::vector<ModelConfig::Warning>& warnings) const
{
    if (!section.present())
        return;
    for (auto it = section.node.begin(); it != section.node.end(); ++it) {
        const std::string key = it->first.Scalar();
        bool isKnown = false;
        for (const char* name : known)
            isKnown = isKnown || key == name;
        if (!isKnown)
            warnings.push_back({ it->first.Mark().line + 1, it->first.Mark().column + 1,
                "unknown key '" + dotted(section, key) + "' kept but not used" });
    }
}

} // namespace waferscope::core
