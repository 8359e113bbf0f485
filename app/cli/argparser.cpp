#include "app/cli/argparser.h"

#include <algorithm>

namespace waferscope::cli {

ArgParser::ArgParser(std::string command, std::string summary)
    : m_command(std::move(command))
    , m_summary(std::move(summary))
{
}

void ArgParser::addFlag(const std::string& name, const std::string& help)
{
    m_specs.push_back(Spec { name, "", help, false });
}

void ArgParser::addOption(
    const std::string& name, const std::string& valueName, const std::string& help, bool repeatable)
{
    m_specs.push_back(Spec { name, valueName, help, repeatable });
}

void ArgParser::addPositional(const std::string& name, const std::string& help)
{
    m_positionalSpecs.emplace_back(name, help);
}

const ArgParser::Spec* ArgParser::find(const std::string& name) const
{
    auto it = std::find_if(m_specs.begin(), m_specs.end(), [&](const Spec& spec) { return spec.name == name; });
    return it == m_specs.end() ? nullptr : &*it;
}

bool ArgParser::parse(std::span<const std::string> args)
{
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--help" || arg == "-h")
            return false;
        if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
            if (m_positionals.size() >= m_positionalSpecs.size())
                throw UsageError { "unexpected argument '" + arg + "' (see " + m_command + " --help)" };
            m_positionals.push_back(arg);
            continue;
        }
        std::string name = arg.substr(2);
        std::optional<std::string> inlineValue;
        if (auto equals = name.find('='); equals != std::string::npos) {
            inlineValue = name.substr(equals + 1);
            name.erase(equals);
        }
        const Spec* spec = find(name);
        if (!spec)
            throw UsageError { "unknown option '--" + name + "' (see " + m_command + " --help)" };
        if (m_values.count(name) && !spec->repeatable)
            throw UsageError { "option '--" + name + "' given more than once" };
        if (spec->valueName.empty()) {
            if (inlineValue)
                throw UsageError { "option '--" + name + "' takes no value" };
            m_values[name].push_back("");
            continue;
        }
        if (!inlineValue) {
            if (i + 1 >= args.size())
                throw UsageError { "option '--" + name + "' needs a value " + spec->valueName };
            inlineValue = args[++i];
        }
        m_values[name].push_back(*inlineValue);
    }
    return true;
}

bool ArgParser::has(const std::string& name) const
{
    return m_values.count(name) > 0;
}

std::optional<std::string> ArgParser::value(const std::string& name) const
{
    auto it = m_values.find(name);
    if (it == m_values.end())
        return std::nullopt;
    return it->second.back();
}

std::vector<std::string> ArgParser::values(const std::string& name) const
{
    auto it = m_values.find(name);
    return it == m_values.end() ? std::vector<std::string> {} : it->second;
}

std::string ArgParser::helpText() const
{
    std::string text = "Usage: " + m_command;
    for (const auto& [name, help] : m_positionalSpecs)
        text += " [" + name + "]";
    if (!m_specs.empty())
        text += " [options]";
    text += "\n\n" + m_summary + "\n";
    if (!m_positionalSpecs.empty()) {
        text += "\nArguments:\n";
        for (const auto& [name, help] : m_positionalSpecs)
            text += "  " + name + std::string(name.size() < 24 ? 24 - name.size() : 1, ' ') + help + "\n";
    }
    text += "\nOptions:\n";
    std::vector<Spec> all = m_specs;
    all.push_back(Spec { "help", "", "show this help and exit", false });
    for (const Spec& spec : all) {
        std::string left = "--" + spec.name + (spec.valueName.empty() ? "" : " " + spec.valueName);
        // A help of several lines continues under its first.
        std::string help = spec.help;
        for (std::size_t at = help.find('\n'); at != std::string::npos; at = help.find('\n', at + 1))
            help.insert(at + 1, std::string(26, ' '));
        text += "  " + left + std::string(left.size() < 24 ? 24 - left.size() : 1, ' ') + help
            + (spec.repeatable ? " (repeatable)" : "") + "\n";
    }
    return text;
}

} // namespace waferscope::cli
