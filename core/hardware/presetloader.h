#pragma once

#include "core/common/expected.h"
#include "core/hardware/systemspec.h"

#include <string>
#include <string_view>

namespace waferscope::core {

// Reads a hardware preset (schema "waferscope-hardware/1", see README.md, "Hardware presets").
// Every numeric fact is an object {"value": V, "source": "..."} or {"value": V, "assumed":
// "reason"}. Missing keys, unknown keys (usually typos), wrong types, values outside physical
// ranges and inconsistent combinations are all errors located at FILE:LINE:COL.
Expected<SystemSpec> loadPresetText(std::string_view text, const std::string& fileName);

// Same, from a file; a missing path, a directory or an unreadable file is a located error too.
Expected<SystemSpec> loadPresetFile(const std::string& path);

} // namespace waferscope::core
