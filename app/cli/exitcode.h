#pragma once

#include "core/common/diagnostic.h"

#include <ostream>

namespace waferscope::cli {

// Process exit codes, a contract shared by every subcommand (docs/CLI.md, "Exit codes").
enum ExitCode : int {
    kExitOk = 0,
    kExitInternalError = 1, // a defect in WaferScope
    kExitBadInput = 2, // the user's input or command line is wrong; message on stderr
    kExitCannotMap = 3, // valid input that cannot be mapped onto the chosen hardware
};

constexpr ExitCode exitCodeFor(core::Diagnostic::Kind kind)
{
    switch (kind) {
    case core::Diagnostic::Kind::BadInput:
        return kExitBadInput;
    case core::Diagnostic::Kind::CannotMap:
        return kExitCannotMap;
    case core::Diagnostic::Kind::Internal:
        return kExitInternalError;
    }
    return kExitInternalError;
}

// Prints the diagnostic as every front end does (`FILE:LINE:COL: error: MESSAGE`) and returns
// the exit code its kind selects.
inline ExitCode printDiagnostic(std::ostream& err, const core::Diagnostic& diagnostic)
{
    err << diagnostic.format() << "\n";
    return exitCodeFor(diagnostic.kind);
}

} // namespace waferscope::cli
