#pragma once

#include <cstdint>

namespace waferscope::core::fabric {

// The four mesh directions of a router's links. The fifth port, the ramp to the PE's own compute
// engine, only appears in route masks (kRampBit).
enum Direction : int { North = 0, South = 1, East = 2, West = 3 };
constexpr int kDirections = 4;
constexpr int kMaxColors = 24; // routable colors (virtual channels) of the WSE fabric

constexpr std::uint8_t directionBit(int direction)
{
    return std::uint8_t(1u << direction);
}
constexpr std::uint8_t kRampBit = 1u << 4;
constexpr int opposite(int direction)
{
    return direction ^ 1;
} // N<->S, E<->W
const char* directionName(int direction);

// A 32-bit wavelet as it travels the fabric, plus the sideband the simulator needs: a valid bit
// and either its color (statically routed kernels) or its route (synthetic traffic with
// dimension-order routing). `data` is the 32-bit payload.
struct Wavelet {
    std::uint32_t data = 0;
    std::uint32_t tag = 0;

    static constexpr std::uint32_t kValid = 1u << 31;
    static constexpr int kCoordBits = 11; // meshes up to 2047 x 2047 PEs
    static constexpr std::uint32_t kCoordMask = (1u << kCoordBits) - 1u;
    // Dimension-order routing (X, then Y) carries the route instead of the destination: hops
    // left to the destination (bits 0..11), hops of the Y leg (12..23) and the port bits of the
    // X leg (East or West) and of the Y leg (North or South) (24..27). A hop is then a decrement,
    // and the port is the X leg's while more hops are left than the Y leg has, then the Y leg's,
    // then the ramp.
    static constexpr int kHopBits = 12;
    static constexpr std::uint32_t kHopMask = (1u << kHopBits) - 1u;
    static constexpr int kLegBitsShift = 24;
    static constexpr int kRampPort = 4;

    bool valid() const { return tag & kValid; }
    int color() const { return int(tag & 31u); }
    // Dimension-order routing: the output port at the router whose queue holds the wavelet, as a
    // bit (directionBit or kRampBit) and as an index (a Direction, or kRampPort).
    std::uint32_t portBit() const
    {
        const std::uint32_t left = tag & kHopMask;
        const std::uint32_t yLeg = (tag >> kHopBits) & kHopMask;
        const std::uint32_t legBits = tag >> kLegBitsShift;
        const auto onX = std::uint32_t(left > yLeg); // the leg, by arithmetic: a branch would mispredict
        const std::uint32_t legBit = legBits & (0x3u << (2 * onX)); // North/South, or East/West
        const std::uint32_t arrived = std::uint32_t(left == 0) - 1u; // 0 at the destination, else all ones
        return (legBit & arrived) | (kRampBit & ~arrived);
    }
    int port() const { return __builtin_ctz(portBit()); } // the bit is never 0
    int hopsLeft() const { return int(tag & kHopMask); }
    // The wavelet as the next router receives it. Only for a wavelet leaving on a link.
    Wavelet afterHop() const { return { data, tag - 1 }; }
    // The route from (x, y) to (destX, destY): along X first, then along Y, then the ramp.
    static Wavelet dimensionOrder(int x, int y, int destX, int destY, std::uint32_t payload)
    {
        const int dx = destX - x;
        const int dy = destY - y;
        const std::uint32_t xBit = dx > 0 ? directionBit(East) : dx < 0 ? directionBit(West) : 0u;
        const std::uint32_t yBit = dy > 0 ? directionBit(South) : dy < 0 ? directionBit(North) : 0u;
        const auto yHops = std::uint32_t(dy < 0 ? -dy : dy);
        const auto hops = std::uint32_t(dx < 0 ? -dx : dx) + yHops;
        return { payload, kValid | hops | (yHops << kHopBits) | ((xBit | yBit) << kLegBitsShift) };
    }

    static Wavelet colored(int color, std::uint32_t payload) { return { payload, kValid | std::uint32_t(color) }; }
};

static_assert(sizeof(Wavelet) == 8);

} // namespace waferscope::core::fabric
