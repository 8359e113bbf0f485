#pragma once

#include <cstddef>
#include <limits>
#include <string_view>

namespace waferscope::core {

// The yaml-cpp tree's heap memory per node (node, node_data, node_ref and their shared pointers,
// a map entry or sequence slot), measured with glibc on this platform: the document estimate
// multiplies it by the nodes the file holds before the tree is built.
inline constexpr double kYamlBytesPerNode = 600.0;

// What reading a YAML text into a tree takes, counted by yaml-cpp's event parser, which builds
// nothing (the readers refuse a text whose tree would not fit the memory budget before they build
// it). Counting stops at the first node past `nodeLimit`, or at the first syntax error (the
// tree's own parse reports it).
struct YamlFootprint {
    std::size_t nodes = 0; // scalars, nulls, aliases, sequences and mappings, as written
    std::size_t scalarBytes = 0; // characters of scalars too long for the small-string buffer
    bool pastLimit = false; // the count stopped at node nodeLimit + 1,
    int line = 0; // which starts here (1-based)
    int column = 0;
    // The tree (kYamlBytesPerNode a node, plus the long scalars' characters) and the two copies
    // of the text the parse makes.
    double bytes = 0.0;
};
YamlFootprint estimateYamlFootprint(
    std::string_view text, std::size_t nodeLimit = std::numeric_limits<std::size_t>::max());

} // namespace waferscope::core
