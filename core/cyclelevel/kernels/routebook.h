#pragma once

#include "core/fabric/staticcolorfabric.h"
#include "core/kernels/geometry.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// One router's part of a stream: where the color comes in (a Direction, or the ramp for the
// PE's own sends) and where it goes (direction bits and/or the ramp bit).
struct Hop {
    int x = 0;
    int y = 0;
    int rx = fabric::Fabric::kRampPort;
    std::uint8_t tx = 0;
};

// The routes of one logical stream, a multicast tree: one sender and every router it passes,
// merged by PE. A stream may be several disjoint trees (the lanes of a vector) that share a
// color because no router carries two of them.
class StreamTree {
public:
    explicit StreamTree(std::string name)
        : m_name(std::move(name))
    {
    }
    const std::string& name() const { return m_name; }
    const std::vector<Hop>& hops() const { return m_hops; }
    bool empty() const { return m_hops.empty(); }

    // Adds tx bits at (x, y), which receives from rx. A second rx at one router is a bug in the
    // builder (std::logic_error).
    void hop(int x, int y, int rx, std::uint8_t tx);
    // A straight run from (x, y), `length` PEs in direction `along`; the first receives from `rx`
    // (the ramp for a sender), every PE but the last passes the stream on, and the PEs for which
    // deliver(i) is true also hand it to their own PE. Returns the PE after the last.
    void run(int x, int y, int along, int length, int rx, const std::vector<bool>& deliver);

private:
    std::string m_name;
    std::vector<Hop> m_hops;
    std::vector<std::int64_t> m_keys; // y << 32 | x, parallel to m_hops, for merging
};

// Thrown when no color is free along a stream; the message names the stream and a router.
struct RouteError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The colors of the fabric's routers and who holds them: the part of the compiler that gives
// each stream a color free at every router it crosses (the WSE has 24) and writes its routes.
class RouteBook {
public:
    explicit RouteBook(fabric::StaticColorFabric& fabric);

    // Routes every tree on the lowest color free at all of their routers and returns it.
    int place(const std::vector<const StreamTree*>& trees);
    int place(const StreamTree& tree) { return place(std::vector<const StreamTree*> { &tree }); }
    // The most colors any one router carries.
    int maxColorsAtARouter() const;
    int colorsInUse() const; // distinct colors used anywhere

private:
    fabric::StaticColorFabric& m_fabric;
    std::vector<std::uint32_t> m_used; // per PE: a bit per color
    std::uint32_t m_everUsed = 0;
};

} // namespace waferscope::core::cyclelevel
