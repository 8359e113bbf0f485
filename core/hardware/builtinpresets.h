#pragma once

#include "core/common/expected.h"
#include "core/hardware/systemspec.h"

#include <string>
#include <string_view>
#include <vector>

namespace waferscope::core {

// A hardware preset compiled into the binary from resources/hardware/NAME.json, so that every
// front end finds the presets without a source tree or an install prefix.
struct EmbeddedPreset {
    std::string_view name; // "cs2"
    std::string_view fileName; // "resources/hardware/cs2.json", used in diagnostics
    std::string_view text; // the JSON
};

// Generated at build time (embedpresets.cmake); in generation order cs1, cs2, cs3.
const std::vector<EmbeddedPreset>& embeddedPresets();

// Loads and validates every built-in preset. A failure here is a build defect, but it is still
// reported as a located diagnostic rather than a crash.
Expected<std::vector<SystemSpec>> loadBuiltinPresets();

// The built-in presets' names in generation order ("cs1", "cs2", "cs3"), and as an error message
// or a help text lists them ("cs1, cs2 or cs3"): every front end lists the presets from here.
std::vector<std::string> builtinPresetNames();
std::string builtinPresetChoices();
// The system every front end uses when none is named: the current generation. The CLI's
// outputs (and their digests) for a run without --system are of this preset.
std::string_view defaultPresetName();

// Loads the built-in preset `name`; the error lists the known names.
Expected<SystemSpec> loadBuiltinPreset(std::string_view name);

} // namespace waferscope::core
