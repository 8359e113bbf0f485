#pragma once

namespace waferscope::cli {

// Process exit codes, a contract shared by every subcommand (README, "Exit codes").
enum ExitCode : int {
    kExitOk = 0,
    kExitInternalError = 1, // a defect in WaferScope
    kExitBadInput = 2, // the user's input or command line is wrong; message on stderr
    kExitCannotMap = 3, // valid input that cannot be mapped onto the chosen hardware
};

} // namespace waferscope::cli
