#pragma once

#include <iosfwd>
#include <span>
#include <string>

namespace waferscope::cli {

// The whole of waferscope-cli as a function, so tests drive it in-process. `args` excludes the
// program name. Writes results to `out` and diagnostics to `err`; returns an ExitCode.
int runCli(std::span<const std::string> args, std::ostream& out, std::ostream& err);

} // namespace waferscope::cli
