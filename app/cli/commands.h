#pragma once

#include <iosfwd>
#include <span>
#include <string>

namespace waferscope::cli {

// One function per subcommand; each parses its own options (throwing UsageError) and returns
// an ExitCode.
int runHardwareCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int runInspectCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int runCompileCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int runRunCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int runScaleCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int runCompareCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int runFabricCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int runSensitivityCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int runClusterCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int runValidateCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);

} // namespace waferscope::cli
