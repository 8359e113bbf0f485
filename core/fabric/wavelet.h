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
    // left on the current leg (bits 0..10), hops of the next leg (11..21), the output port at
    // the router whose queue holds the wavelet (24..26, a Direction or 4 for the ramp) and the
    // port it turns to when the current leg ends (27..29). Each hop is then one decrement.
    static constexpr int kPortShift = 24;
    static constexpr int kTurnShift = 27;
    static constexpr int kRampPort = 4;

    bool valid() const { return tag & kValid; }
    int color() const { return int(tag & 31u); }
    int port() const { return int((tag >> kPortShift) & 7u); }
    int hopsLeft() const { return int(tag & kCoordMask); }
    // The wavelet as the next router receives it: one hop fewer, or the next leg's route once
    // this leg is over. Only for a wavelet leaving on a link (port() < 4).
    Wavelet afterHop() const
    {
        const std::uint32_t hop = tag - 1;
        const std::uint32_t turned = kValid | ((hop >> kCoordBits) & kCoordMask)
            | (((hop >> kTurnShift) & 7u) << kPortShift) | (std::uint32_t(kRampPort) << kTurnShift);
        const std::uint32_t legOver = std::uint32_t((hop & kCoordMask) == 0) * ~0u; // a select, not a branch
        return { data, (hop & ~legOver) | (turned & legOver) };
    }
    // The route from (x, y) to (destX, destY): along X first, then along Y, then the ramp.
    static Wavelet dimensionOrder(int x, int y, int destX, int destY, std::uint32_t payload)
    {
        const int dx = destX - x;
        const int dy = destY - y;
        const std::uint32_t yPort = dy > 0 ? 1u : dy < 0 ? 0u : std::uint32_t(kRampPort); // South, North
        const auto yHops = std::uint32_t(dy < 0 ? -dy : dy);
        if (dx == 0)
            return { payload, kValid | yHops | (yPort << kPortShift) | (std::uint32_t(kRampPort) << kTurnShift) };
        const std::uint32_t xPort = dx > 0 ? 2u : 3u; // East, West
        const auto xHops = std::uint32_t(dx < 0 ? -dx : dx);
        return { payload, kValid | xHops | (yHops << kCoordBits) | (xPort << kPortShift) | (yPort << kTurnShift) };
    }

    static Wavelet colored(int color, std::uint32_t payload) { return { payload, kValid | std::uint32_t(color) }; }
};

static_assert(sizeof(Wavelet) == 8);

} // namespace waferscope::core::fabric
