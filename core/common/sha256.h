#pragma once

#include <string>
#include <string_view>

namespace waferscope::core {

// SHA-256 (FIPS 180-4) of `bytes`, as 64 lowercase hex digits. Reports record the digest of
// their input so that a reader can tell whether the file changed since.
std::string sha256Hex(std::string_view bytes);

} // namespace waferscope::core
