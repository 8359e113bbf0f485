#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace waferscope::cli {

// Thrown for a malformed command line; the CLI prints it and exits with kExitBadInput.
struct UsageError {
    std::string message;
};

// A small declarative parser for one subcommand: long options (`--name VALUE`, `--name=VALUE`
// or a flag `--name`), no positional arguments unless declared. Generates its own --help.
class ArgParser {
public:
    ArgParser(std::string command, std::string summary);

    void addFlag(const std::string& name, const std::string& help);
    void addOption(
        const std::string& name, const std::string& valueName, const std::string& help, bool repeatable = false);
    void addPositional(const std::string& name, const std::string& help);

    // Throws UsageError. Returns false when --help was given (help text is then in helpText()).
    bool parse(std::span<const std::string> args);

    bool has(const std::string& name) const;
    std::optional<std::string> value(const std::string& name) const;
    std::vector<std::string> values(const std::string& name) const;
    const std::vector<std::string>& positionals() const { return m_positionals; }

    std::string helpText() const;

private:
    struct Spec {
        std::string name;
        std::string valueName; // empty for flags
        std::string help;
        bool repeatable = false;
    };
    const Spec* find(const std::string& name) const;

    std::string m_command; // "waferscope-cli hardware"
    std::string m_summary;
    std::vector<Spec> m_specs;
    std::vector<std::pair<std::string, std::string>> m_positionalSpecs; // name, help
    std::map<std::string, std::vector<std::string>> m_values; // option -> values ("" for flags)
    std::vector<std::string> m_positionals;
};

} // namespace waferscope::cli
