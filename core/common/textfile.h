#pragma once

#include "core/common/expected.h"

#include <cstddef>
#include <string>

namespace waferscope::core {

// The one way in for every file a user names (params, presets, calibration, jobs, reports).
// The file is opened without blocking and checked on the descriptor that is read, so a FIFO, a
// device or a socket is refused before a byte is read and never blocks; a missing path, a
// directory, a path with a NUL byte, an unreadable or oversized file (also one whose size the
// file system does not report, as in /proc), and an I/O error while reading (EIO, EINVAL) are each
// a located error at 1:1 that says what was expected: `expectedKind` completes "expected a ..."
// ("Model Zoo params YAML file"). At most `maxBytes` + 1 bytes are ever held.
Expected<std::string> readTextFile(const std::string& path, std::size_t maxBytes, const std::string& expectedKind);

// The first `maxBytes` of a regular file (fewer when it is shorter), with readTextFile's checks
// but no size limit: for telling file kinds apart (a jobs file from a params file) without
// reading a large file whole. Never blocks.
Expected<std::string> readTextPrefix(const std::string& path, std::size_t maxBytes, const std::string& expectedKind);

} // namespace waferscope::core
