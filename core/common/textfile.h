#pragma once

#include "core/common/expected.h"

#include <cstddef>
#include <string>

namespace waferscope::core {

// Reads a whole text file the user named. A missing path, a directory, a special file, an
// unreadable or oversized file is a located error (at 1:1) that says what was expected:
// `expectedKind` completes "expected a ..." ("Model Zoo params YAML file").
Expected<std::string> readTextFile(const std::string& path, std::size_t maxBytes, const std::string& expectedKind);

} // namespace waferscope::core
