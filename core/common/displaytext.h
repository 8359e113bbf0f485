#pragma once

#include <string>
#include <string_view>

namespace waferscope::core {

// User text (a key, a value, a layer or file name) made safe to echo in a one-line message or a
// table cell: control characters (C0, DEL, C1; a newline or a lone CR included), bytes that are
// not UTF-8, and invisible or direction-changing code points (zero-width characters, bidi
// embeddings and isolates, line and paragraph separators, the BOM, tag characters) become
// `\xNN` (bytes) or `\u{NNNN}` (code points). Everything else, other scripts and symbols
// included, is kept as it is. So a message is one line, a terminal never receives an escape
// sequence from input, and "got 768\x0D" shows what "got 768" hid.
std::string displayText(std::string_view text);

// Whether displayText would change `text`.
bool needsEscaping(std::string_view text);

// printf into a string as long as the values need: a table row is never cut short (a fixed
// buffer would drop its newline, and the next row would run on in the same line).
std::string formatText(const char* format, ...) __attribute__((format(printf, 1, 2)));

// The number of terminal columns `text` occupies once it is shown: one per code point, which is
// what the CLI's tables assume (they hold ASCII and the common symbols).
std::size_t displayWidth(std::string_view text);

} // namespace waferscope::core
