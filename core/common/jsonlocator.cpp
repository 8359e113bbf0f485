#include "core/common/jsonlocator.h"

#include <vector>

namespace waferscope::core {

namespace {

// Escapes a key as a JSON pointer reference token (RFC 6901).
std::string pointerToken(std::string_view key)
{
    std::string token;
    for (char c : key) {
        if (c == '~')
            token += "~0";
        else if (c == '/')
            token += "~1";
        else
            token += c;
    }
    return token;
}

struct Scanner {
    std::string_view text;
    std::size_t offset = 0;
    int line = 1;
    int column = 1;

    bool atEnd() const { return offset >= text.size(); }
    char peek() const { return text[offset]; }
    void advance()
    {
        if (text[offset] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
        ++offset;
    }
    void skipSpace()
    {
        while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
            advance();
    }
    // Reads a string literal starting at '"'; returns its raw content (escapes kept as written,
    // which is enough for the ASCII keys of WaferScope's files).
    std::string readString()
    {
        std::string value;
        advance(); // opening quote
        while (!atEnd() && peek() != '"') {
            if (peek() == '\\') {
                advance();
                if (atEnd())
                    break;
            }
            value += peek();
            advance();
        }
        if (!atEnd())
            advance(); // closing quote
        return value;
    }
};

} // namespace

JsonLocator::JsonLocator(std::string_view text)
{
    // Each open container remembers its pointer and, for arrays, the next element index.
    struct Frame {
        std::string pointer;
        bool isArray = false;
        int nextIndex = 0;
        std::string pendingKey;
    };
    std::vector<Frame> stack;
    Scanner scan { text };

    auto recordValueStart = [&](std::string pointer) {
        m_positions.emplace(std::move(pointer), Position { scan.line, scan.column });
    };
    auto childPointer = [&]() -> std::string {
        if (stack.empty())
            return "";
        Frame& top = stack.back();
        if (top.isArray)
            return top.pointer + '/' + std::to_string(top.nextIndex++);
        return top.pointer + '/' + pointerToken(top.pendingKey);
    };

    // A UTF-8 byte order mark, which nlohmann skips, is not a value.
    if (text.substr(0, 3) == "\xEF\xBB\xBF")
        for (int i = 0; i < 3; ++i)
            scan.advance();
    bool expectKey = false;
    while (true) {
        scan.skipSpace();
        if (scan.atEnd())
            break;
        const char c = scan.peek();
        if (expectKey) {
            if (stack.empty())
                break; // malformed; keep what we have
            if (c == '"') {
                stack.back().pendingKey = scan.readString();
                scan.skipSpace();
                if (!scan.atEnd() && scan.peek() == ':')
                    scan.advance();
                expectKey = false;
                continue;
            }
            if (c != '}')
                break; // malformed; keep what we have
        }
        if (c == '}' || c == ']') {
            if (stack.empty())
                break;
            stack.pop_back();
            scan.advance();
            expectKey = false; // an empty object closes without a key
            continue;
        }
        if (c == ',') {
            scan.advance();
            expectKey = !stack.empty() && !stack.back().isArray;
            continue;
        }
        // A value starts here.
        std::string pointer = childPointer();
        recordValueStart(pointer);
        if (c == '{' || c == '[') {
            stack.push_back(Frame { std::move(pointer), c == '[', 0, {} });
            scan.advance();
            expectKey = (c == '{');
        } else if (c == '"') {
            scan.readString();
        } else {
            while (!scan.atEnd() && scan.peek() != ',' && scan.peek() != '}' && scan.peek() != ']' && scan.peek() != ' '
                && scan.peek() != '\n' && scan.peek() != '\r' && scan.peek() != '\t')
                scan.advance();
        }
    }
}

JsonLocator::Position JsonLocator::locate(const std::string& pointer) const
{
    std::string probe = pointer;
    while (true) {
        if (auto it = m_positions.find(probe); it != m_positions.end())
            return it->second;
        if (probe.empty())
            return Position { 1, 1 };
        probe.erase(probe.rfind('/'));
    }
}

JsonLocator::Position JsonLocator::positionOfOffset(std::string_view text, std::size_t offset)
{
    Position position { 1, 1 };
    for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++position.line;
            position.column = 1;
        } else {
            ++position.column;
        }
    }
    return position;
}

} // namespace waferscope::core
