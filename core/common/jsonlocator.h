#pragma once

#include <map>
#include <string>
#include <string_view>

namespace waferscope::core {

// Where each value of a JSON document starts, by JSON pointer ("/wafer/clock_hz", "/list/0").
// nlohmann_json locates syntax errors only; semantic checks (a negative clock, a missing key)
// use this index to point at the offending line and column. Built by one linear scan of text
// that has already been parsed successfully; on malformed text it returns what it has seen.
class JsonLocator {
public:
    struct Position {
        int line = 0; // 1-based
        int column = 0; // 1-based, in bytes
    };

    explicit JsonLocator(std::string_view text);

    // Position of the value at `pointer`; for a pointer that does not exist (a missing key),
    // the position of the nearest existing ancestor, so "missing key" errors point at the
    // object that should have held it.
    Position locate(const std::string& pointer) const;

    // Position of a byte offset (nlohmann reports syntax errors by offset).
    static Position positionOfOffset(std::string_view text, std::size_t offset);

private:
    std::map<std::string, Position> m_positions; // JSON pointer -> start of its value
};

} // namespace waferscope::core
