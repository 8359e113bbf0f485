#include "core/hardware/builtinpresets.h"

#include "core/common/names.h"
#include "core/hardware/presetloader.h"

namespace waferscope::core {

Expected<std::vector<SystemSpec>> loadBuiltinPresets()
{
    std::vector<SystemSpec> systems;
    for (const EmbeddedPreset& preset : embeddedPresets()) {
        Expected<SystemSpec> system = loadPresetText(preset.text, std::string(preset.fileName));
        if (!system)
            return system.error();
        systems.push_back(std::move(system).value());
    }
    return systems;
}

std::vector<std::string> builtinPresetNames()
{
    std::vector<std::string> names;
    for (const EmbeddedPreset& preset : embeddedPresets())
        names.emplace_back(preset.name);
    return names;
}

std::string builtinPresetChoices()
{
    return choiceList(builtinPresetNames());
}

std::string_view defaultPresetName()
{
    return "cs3";
}

Expected<SystemSpec> loadBuiltinPreset(std::string_view name)
{
    std::string known;
    for (const EmbeddedPreset& preset : embeddedPresets()) {
        if (preset.name == name)
            return loadPresetText(preset.text, std::string(preset.fileName));
        known += (known.empty() ? "" : ", ") + std::string(preset.name);
    }
    return Diagnostic { "<command line>", 0, 0,
        "unknown system '" + std::string(name) + "' (expected one of: " + known + ")" };
}

} // namespace waferscope::core
