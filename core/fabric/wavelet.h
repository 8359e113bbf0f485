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
// and either its color (statically routed kernels) or its destination (synthetic traffic with
// dimension-order routing). `data` is the 32-bit payload.
struct Wavelet {
    std::uint32_t data = 0;
    std::uint32_t tag = 0;

    static constexpr std::uint32_t kValid = 1u << 31;
    static constexpr int kCoordBits = 11; // destinations up to 2047 x 2047 PEs
    static constexpr std::uint32_t kCoordMask = (1u << kCoordBits) - 1u;
    // Dimension-order routing: the output port (Direction or 4 for the ramp) the wavelet takes
    // at the router whose queue holds it, computed by whoever put it there.
    static constexpr int kPortShift = 24;

    bool valid() const { return tag & kValid; }
    int color() const { return int(tag & 31u); }
    int destX() const { return int(tag & kCoordMask); }
    int destY() const { return int((tag >> kCoordBits) & kCoordMask); }
    int port() const { return int((tag >> kPortShift) & 7u); }
    Wavelet withPort(int port) const
    {
        return { data, (tag & ~(7u << kPortShift)) | (std::uint32_t(port) << kPortShift) };
    }

    static Wavelet colored(int color, std::uint32_t payload) { return { payload, kValid | std::uint32_t(color) }; }
    static Wavelet addressed(int x, int y, std::uint32_t payload)
    {
        return { payload, kValid | std::uint32_t(x) | (std::uint32_t(y) << kCoordBits) };
    }
};

static_assert(sizeof(Wavelet) == 8);

} // namespace waferscope::core::fabric
