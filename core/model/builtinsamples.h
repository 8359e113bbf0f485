#pragma once

// The sample params files (samples/*.yaml), compiled in: the published figures run them
// (core/validation), and a software profile's speculative decoding names its draft model by one.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace waferscope::core {

// The YAML text of a built-in sample by file name ("llama3_8b.yaml"), or nothing.
std::optional<std::string_view> builtinSample(const std::string& fileName);
std::vector<std::string> builtinSampleNames();

} // namespace waferscope::core
