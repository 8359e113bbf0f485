#include "app/cli/hardwaretable.h"

#include "core/hardware/hardwarefacts.h"

#include <algorithm>

namespace waferscope::cli {

namespace {

std::string pad(const std::string& text, std::size_t width)
{
    return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

void trimLine(std::string& text)
{
    while (!text.empty() && text.back() == ' ')
        text.pop_back();
    text += "\n";
}

} // namespace

std::string formatHardwareTable(const std::vector<core::SystemSpec>& systems)
{
    // cells[system][fact]; every system describes the same rows in the same order.
    std::vector<std::vector<core::HardwareFact>> facts;
    for (const core::SystemSpec& system : systems)
        facts.push_back(core::describeHardware(system));
    if (facts.empty())
        return {};
    const std::size_t rowCount = facts.front().size();

    std::size_t labelWidth = 0;
    for (const core::HardwareFact& fact : facts.front())
        labelWidth = std::max(labelWidth, fact.label.size());
    std::vector<std::size_t> columnWidth;
    bool anyAssumed = false;
    for (std::size_t c = 0; c < systems.size(); ++c) {
        std::size_t width = systems[c].displayName.size();
        for (core::HardwareFact& fact : facts[c]) {
            if (fact.assumed) {
                fact.value += "*";
                anyAssumed = true;
            }
            width = std::max(width, fact.value.size());
        }
        columnWidth.push_back(width);
    }

    std::string text = pad("", labelWidth + 2);
    for (std::size_t c = 0; c < systems.size(); ++c)
        text += pad(systems[c].displayName, columnWidth[c] + 3);
    trimLine(text);
    for (std::size_t r = 0; r < rowCount; ++r) {
        text += pad(facts.front()[r].label, labelWidth + 2);
        for (std::size_t c = 0; c < systems.size(); ++c)
            text += pad(facts[c][r].value, columnWidth[c] + 3);
        trimLine(text);
    }
    if (anyAssumed)
        text += "\n* assumed: not published; the reason is in the preset (waferscope-cli hardware --json, "
                "\"provenance\").\n";
    return text;
}

} // namespace waferscope::cli
