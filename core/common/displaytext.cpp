#include "core/common/displaytext.h"

#include <cstdarg>
#include <cstdint>
#include <cstdio>

namespace waferscope::core {

namespace {

// Decodes the UTF-8 sequence at `text[i]`: its code point and length, or length 0 when the
// bytes there are not well-formed UTF-8 (overlong forms and surrogates included).
struct Decoded {
    char32_t codePoint = 0;
    std::size_t length = 0;
};

Decoded decodeAt(std::string_view text, std::size_t i)
{
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80)
        return { byte, 1 };
    std::size_t length = (byte >> 5) == 0x6 ? 2 : (byte >> 4) == 0xE ? 3 : (byte >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || i + length > text.size())
        return {};
    char32_t codePoint = byte & (0x7F >> length);
    for (std::size_t k = 1; k < length; ++k) {
        const auto next = static_cast<unsigned char>(text[i + k]);
        if ((next >> 6) != 0x2)
            return {};
        codePoint = (codePoint << 6) | (next & 0x3F);
    }
    static constexpr char32_t kSmallest[] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (codePoint < kSmallest[length] || codePoint > 0x10FFFF || (codePoint >= 0xD800 && codePoint <= 0xDFFF))
        return {};
    return { codePoint, length };
}

// Code points that draw nothing, or change how the text around them is drawn or read.
bool isInvisible(char32_t c)
{
    return (c >= 0x80 && c <= 0x9F) // C1 controls
        || c == 0xAD || c == 0x34F || c == 0x61C || c == 0x115F || c == 0x1160 || c == 0x17B4 || c == 0x17B5
        || (c >= 0x180B && c <= 0x180F) // Mongolian variation selectors and vowel separator
        || (c >= 0x200B && c <= 0x200F) // zero-width space/joiners, LRM, RLM
        || (c >= 0x2028 && c <= 0x202E) // line and paragraph separators, bidi embeddings and overrides
        || (c >= 0x2060 && c <= 0x206F) // word joiner, invisible operators, bidi isolates
        || c == 0x3164 || c == 0xFEFF || c == 0xFFA0 || (c >= 0xFFF9 && c <= 0xFFFB) || c == 0xFFFE || c == 0xFFFF
        || (c >= 0xE0000 && c <= 0xE007F); // tag characters
}

} // namespace

bool needsEscaping(std::string_view text)
{
    for (std::size_t i = 0; i < text.size();) {
        const Decoded decoded = decodeAt(text, i);
        if (decoded.length == 0 || decoded.codePoint < 0x20 || decoded.codePoint == 0x7F
            || isInvisible(decoded.codePoint))
            return true;
        i += decoded.length;
    }
    return false;
}

std::string displayText(std::string_view text)
{
    if (!needsEscaping(text))
        return std::string(text);
    std::string shown;
    shown.reserve(text.size() + 16);
    char escape[16];
    for (std::size_t i = 0; i < text.size();) {
        const Decoded decoded = decodeAt(text, i);
        if (decoded.length == 0 || decoded.codePoint < 0x20 || decoded.codePoint == 0x7F) {
            std::snprintf(escape, sizeof escape, "\\x%02X", static_cast<unsigned char>(text[i]));
            shown += escape;
            ++i;
        } else if (isInvisible(decoded.codePoint)) {
            std::snprintf(escape, sizeof escape, "\\u{%04X}", static_cast<unsigned>(decoded.codePoint));
            shown += escape;
            i += decoded.length;
        } else {
            shown.append(text.substr(i, decoded.length));
            i += decoded.length;
        }
    }
    return shown;
}

std::string formatText(const char* format, ...)
{
    std::va_list arguments;
    va_start(arguments, format);
    std::va_list again;
    va_copy(again, arguments);
    const int length = std::vsnprintf(nullptr, 0, format, arguments);
    va_end(arguments);
    std::string text(length > 0 ? std::size_t(length) : 0, '\0');
    if (length > 0)
        std::vsnprintf(text.data(), text.size() + 1, format, again);
    va_end(again);
    return text;
}

std::size_t displayWidth(std::string_view text)
{
    std::size_t width = 0;
    for (unsigned char byte : text)
        width += (byte & 0xC0) != 0x80 ? 1 : 0;
    return width;
}

} // namespace waferscope::core
