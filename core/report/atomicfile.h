#pragma once

#include "core/common/diagnostic.h"

#include <optional>
#include <string>

namespace waferscope::core::report {

// Writes `content` to `path` atomically: into a temporary file beside it, flushed, then renamed
// over the target, so a reader (or a crash) sees the previous file or the new one, never a
// truncated one. Returns the error (naming the path) when it cannot, and leaves no temporary.
std::optional<Diagnostic> writeFileAtomically(const std::string& path, const std::string& content);

} // namespace waferscope::core::report
