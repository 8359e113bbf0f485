#pragma once

#include <string>

namespace waferscope::core {

// A problem in user input, located so that the user can go and fix it. Formats as the
// compiler-style line every WaferScope front end prints: `FILE:LINE:COL: error: MESSAGE`.
// Line and column are 1-based; 0 means "not known" and is left out of the text.
struct Diagnostic {
    // What the user can do about it, which also selects the CLI's exit code: fix the input
    // (BadInput: a file or an option is wrong), choose other hardware or options (CannotMap: valid
    // input the system cannot hold or run, or options that are infeasible together), or report a
    // defect (Internal).
    enum class Kind { BadInput, CannotMap, Internal };

    std::string file; // path as the user gave it, or a name such as "<built-in cs2>"
    int line = 0;
    int column = 0;
    std::string message; // what is wrong and what was expected
    Kind kind = Kind::BadInput; // set where the error is found; readers leave the default

    // One line whatever the file name and message hold: user text is shown through displayText,
    // so a newline in a value can never print a second, forged `FILE:LINE:COL:` line.
    std::string format(const char* severity = "error") const;
};

// Thrown across layers only where a value return would thread through many frames (parsers);
// every public entry point converts it into an Expected<T>.
struct InputError {
    Diagnostic diagnostic;
};

} // namespace waferscope::core
