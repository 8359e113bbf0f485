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
    // Dimension-order routing (X, then Y) carries the route instead of the destination (and
    // has no valid bit): hops left to the destination (bits 0..11), the port bits of the X leg
    // (East or West) and of the Y leg (North or South) (12..15), and the X hops left minus one as
    // a 16-bit two's-complement count (16..31), negative once the X leg is done. A hop subtracts
    // kHop from the tag, and the port is the X leg's while bit 31 is clear, then the Y leg's,
    // then the ramp once no hops are left. Routes are at most 2 x 2046 hops: no field wraps.
    static constexpr int kHopBits = 12;
    static constexpr std::uint32_t kHopMask = (1u << kHopBits) - 1u;
    static constexpr int kLegBitsShift = 12;
    static constexpr int kXHopsShift = 16;
    static constexpr std::uint32_t kHop = 1u | (1u << kXHopsShift);
    static constexpr int kRampPort = 4;

    bool valid() const { return tag & kValid; } // statically routed (colored) wavelets
    int color() const { return int(tag & 31u); }
    // Dimension-order routing: the output port at the router whose queue holds the wavelet, as a
    // bit (directionBit or kRampBit) and as an index (a Direction, or kRampPort). Arithmetic only:
    // a branch on the leg would mispredict.
    std::uint32_t portBit() const
    {
        const std::uint32_t onY = tag >> 31;
        const std::uint32_t legBit = (tag >> kLegBitsShift) & (0xcu >> (2 * onY)); // East/West, or North/South
        const std::uint32_t arrived = std::uint32_t((tag & kHopMask) == 0) - 1u; // 0 at the destination, else all ones
        return (legBit & arrived) | (kRampBit & ~arrived);
    }
    int port() const { return __builtin_ctz(portBit()); } // the bit is never 0
    // The wavelet as the next router receives it. Only for a wavelet leaving on a link.
    Wavelet afterHop() const { return { data, tag - kHop }; }
    // The route from (x, y) to (destX, destY): along X first, then along Y, then the ramp.
    static Wavelet dimensionOrder(int x, int y, int destX, int destY, std::uint32_t payload)
    {
        const int dx = destX - x;
        const int dy = destY - y;
        const std::uint32_t xBit = dx > 0 ? directionBit(East) : dx < 0 ? directionBit(West) : 0u;
        const std::uint32_t yBit = dy > 0 ? directionBit(South) : dy < 0 ? directionBit(North) : 0u;
        const auto xHops = std::uint32_t(dx < 0 ? -dx : dx);
        const auto hops = xHops + std::uint32_t(dy < 0 ? -dy : dy);
        return { payload, hops | ((xBit | yBit) << kLegBitsShift) | ((xHops - 1u) << kXHopsShift) };
    }

    static Wavelet colored(int color, std::uint32_t payload) { return { payload, kValid | std::uint32_t(color) }; }
};

static_assert(sizeof(Wavelet) == 8);

} // namespace waferscope::core::fabric
