#pragma once

#include <cstdint>
#include <string>

namespace waferscope::core {

// One wafer-scale engine (WSE-1/2/3): the PE mesh as a program sees it. Values come from a
// hardware preset (resources/hardware/*.json), where each carries its source.
struct WaferSpec {
    std::string name; // "WSE-2"
    std::int64_t cores = 0; // marketed core count (includes spares the fabric does not expose)
    int fabricWidth = 0; // PE columns of the fabric (SDK fabric dims)
    int fabricHeight = 0; // PE rows of the fabric
    int usableX = 0; // first usable column (the SDK's fabric offset; I/O columns west of it)
    int usableY = 0; // first usable row
    int usableWidth = 0; // columns a program may use (I/O columns on the W/E edges excluded)
    int usableHeight = 0; // rows a program may use
    std::int64_t sramPerPeBytes = 0; // local SRAM of one PE
    double clockHz = 0.0;
    int fmacPerPePerCycle = 0; // FP16 FMAC SIMD width: FMACs one PE retires per cycle
    int linkBytesPerCycle = 0; // one 32-bit wavelet per link per direction per cycle
    int routableColors = 0; // virtual channels with static routes
    int hopLatencyCycles = 0; // router latency per hop
    int sramReadBytesPerCycle = 0; // per PE
    int sramWriteBytesPerCycle = 0; // per PE

    std::int64_t fabricPes() const { return std::int64_t(fabricWidth) * fabricHeight; }
    bool isUsable(int x, int y) const
    {
        return x >= usableX && x < usableX + usableWidth && y >= usableY && y < usableY + usableHeight;
    }
    std::int64_t usablePes() const { return std::int64_t(usableWidth) * usableHeight; }
    // Dense FP16 peak over the usable rectangle (2 FLOP per FMAC). Lower than the vendor's
    // figure, which counts every core.
    double peakFlopsPerS() const { return double(usablePes()) * fmacPerPePerCycle * 2.0 * clockHz; }
    double usableSramBytes() const { return double(usablePes()) * double(sramPerPeBytes); }
};

} // namespace waferscope::core
