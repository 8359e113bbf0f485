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
    // has no valid bit), as two countdowns that a hop decrements together, each with a guard bit
    // above it that the countdown's last borrow clears (no borrow ever goes further):
    //   bits  0..11  X hops left + 0x7ff: bit 11 is set while the X leg goes on;
    //   bit  12      the X leg's direction: West, else East;
    //   bit  13      the Y leg's direction: North, else South;
    //   bits 16..28  hops left + 0xfff: bit 28 is set until the destination.
    // So the port is a lookup of bits 11..13 (kLegPort) unless bit 28 is clear: then the ramp.
    // Routes are at most 2046 hops along X and 4092 in all, which the fields hold.
    static constexpr int kLegShift = 11;
    static constexpr std::uint32_t kWestBit = 1u << 12;
    static constexpr std::uint32_t kNorthBit = 1u << 13;
    static constexpr int kHopsShift = 16;
    static constexpr std::uint32_t kEnRoute = 1u << 28; // the guard of the hops left
    static constexpr std::uint32_t kHop = 1u | (1u << kHopsShift);
    static constexpr int kRampPort = 4;
    // The port bit by bits 11..13: (X leg goes on, West, North).
    static constexpr std::uint8_t kLegPort[8] = { directionBit(South), directionBit(East), directionBit(South),
        directionBit(West), directionBit(North), directionBit(East), directionBit(North), directionBit(West) };

    bool valid() const { return tag & kValid; } // statically routed (colored) wavelets
    int color() const { return int(tag & 31u); }
    // Dimension-order routing: the output port at the router whose queue holds the wavelet, as a
    // bit (directionBit or kRampBit) and as an index (a Direction, or kRampPort). No branch: one
    // on the leg would mispredict.
    std::uint32_t portBit() const
    {
        const std::uint32_t leg = kLegPort[(tag >> kLegShift) & 7u];
        return tag & kEnRoute ? leg : std::uint32_t(kRampBit);
    }
    int port() const { return __builtin_ctz(portBit()); } // the bit is never 0
    // The wavelet as the next router receives it. Only for a wavelet leaving on a link.
    Wavelet afterHop() const { return { data, tag - kHop }; }
    // The route from (x, y) to (destX, destY): along X first, then along Y, then the ramp.
    static Wavelet dimensionOrder(int x, int y, int destX, int destY, std::uint32_t payload)
    {
        const int dx = destX - x;
        const int dy = destY - y;
        const auto xHops = std::uint32_t(dx < 0 ? -dx : dx);
        const auto hops = xHops + std::uint32_t(dy < 0 ? -dy : dy);
        return { payload,
            (0x7ffu + xHops) | (dx < 0 ? kWestBit : 0u) | (dy < 0 ? kNorthBit : 0u) | ((0xfffu + hops) << kHopsShift) };
    }

    static Wavelet colored(int color, std::uint32_t payload) { return { payload, kValid | std::uint32_t(color) }; }
};

static_assert(sizeof(Wavelet) == 8);

} // namespace waferscope::core::fabric
