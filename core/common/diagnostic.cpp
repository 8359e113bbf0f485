#include "core/common/diagnostic.h"

#include "core/common/displaytext.h"

namespace waferscope::core {

std::string Diagnostic::format(const char* severity) const
{
    std::string text = file.empty() ? std::string("<input>") : displayText(file);
    if (line > 0) {
        text += ':' + std::to_string(line);
        if (column > 0)
            text += ':' + std::to_string(column);
    }
    text += ": ";
    text += severity;
    text += ": ";
    text += displayText(message);
    return text;
}

} // namespace waferscope::core
