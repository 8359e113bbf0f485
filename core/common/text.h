#pragma once

#include <string>

namespace waferscope::core {

// ASCII lower case, for matching case-insensitive config vocabulary ("AdamW", "GPT3").
inline std::string toLowerAscii(std::string text)
{
    for (char& c : text)
        if (c >= 'A' && c <= 'Z')
            c = char(c - 'A' + 'a');
    return text;
}

} // namespace waferscope::core
