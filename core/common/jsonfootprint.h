#pragma once

#include <cstddef>
#include <string_view>

namespace waferscope::core {

// What nlohmann::json's tree of a JSON text will hold, counted by a SAX pass that builds nothing,
// so that a document can be refused before its tree is built (a report of many small objects
// takes about 30 bytes of memory per byte of text). `bytes` is the estimate of the tree's heap
// memory with libstdc++'s containers and glibc's allocator: a value is 16 bytes inline; an object
// or array adds its container (std::map, std::vector) and a string its std::string on the heap;
// an object member is a map node holding its key; long strings add their characters. Each heap
// block pays the allocator's 16-byte header and rounding. Counts stop at the first syntax error.
struct JsonFootprint {
    std::size_t values = 0; // every value: scalars, strings, objects and arrays
    std::size_t objects = 0;
    std::size_t arrays = 0;
    std::size_t members = 0; // object members (keys)
    std::size_t strings = 0; // string values
    std::size_t longTextBytes = 0; // characters of keys and strings too long for the small-string buffer
    double bytes = 0; // estimated heap memory of the tree
};
JsonFootprint estimateJsonFootprint(std::string_view text);

} // namespace waferscope::core
