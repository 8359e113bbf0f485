#pragma once

// Internal to core/model (includes yaml-cpp).

#include "core/common/diagnostic.h"
#include "core/model/modelconfig.h"

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::core {

// A mapping of the params file and where it is, so that errors about keys it lacks point at it.
struct YamlSection {
    YAML::Node node; // a mapping, or an undefined node when the section is absent
    YAML::Mark keyMark; // the key that introduced the section (the document start for the root)
    std::string path; // dotted path for messages: "trainer.init.model"

    bool present() const { return node.IsDefined() && node.IsMap(); }
};

// Typed access to a params file with located errors (thrown as InputError). A key whose value
// is null counts as absent, as in the Model Zoo's Python loaders.
class YamlFields {
public:
    explicit YamlFields(std::string fileName);

    [[noreturn]] void fail(const YAML::Mark& mark, const std::string& message) const;
    // Throws `diagnostic` (its message and kind) located at `mark` in this file.
    [[noreturn]] void failAt(const YAML::Mark& mark, Diagnostic diagnostic) const;

    YamlSection root(const YAML::Node& document) const;
    // The sub-mapping `key`; absent sections are returned not present unless `required`.
    YamlSection section(const YamlSection& parent, const std::string& key, bool required = false) const;

    std::optional<YAML::Node> value(const YamlSection& section, const std::string& key) const;
    YAML::Mark valueMark(const YamlSection& section, const std::string& key) const;

    std::optional<std::int64_t> integer(
        const YamlSection& section, const std::string& key, std::int64_t min, std::int64_t max) const;
    std::int64_t requiredInteger(
        const YamlSection& section, const std::string& key, std::int64_t min, std::int64_t max) const;
    std::optional<double> number(const YamlSection& section, const std::string& key, double min, double max) const;
    std::optional<bool> boolean(const YamlSection& section, const std::string& key) const;
    std::optional<std::string> text(const YamlSection& section, const std::string& key) const;
    // A string from a fixed vocabulary; the error lists the accepted values.
    std::optional<std::string> choice(
        const YamlSection& section, const std::string& key, std::initializer_list<const char*> accepted) const;
    // A string or a list of strings.
    std::vector<std::string> textList(const YamlSection& section, const std::string& key) const;
    std::vector<std::int64_t> integerList(
        const YamlSection& section, const std::string& key, std::int64_t min, std::int64_t max) const;

    // Adds a warning for each key of `section` not in `known` (kept, never an error).
    void warnUnknownKeys(const YamlSection& section, std::initializer_list<const char*> known,
        std::vector<ModelConfig::Warning>& warnings) const;

private:
    std::int64_t toInteger(const YAML::Node& node, const std::string& name, std::int64_t min, std::int64_t max) const;

    std::string m_fileName;
};

} // namespace waferscope::core
