#include "core/common/diagnostic.h"

namespace waferscope::core {

std::string Diagnostic::format() const
{
    std::string text = file.empty() ? std::string("<input>") : file;
    if (line > 0) {
        text += ':' + std::to_string(line);
        if (column > 0)
            text += ':' + std::to_string(column);
    }
    text += ": error: ";
    text += message;
    return text;
}

} // namespace waferscope::core
