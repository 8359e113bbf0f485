#include "core/hardware/presetvalidator.h"

namespace waferscope::core {

std::optional<PresetProblem> findInconsistency(const SystemSpec& spec)
{
    const WaferSpec& wafer = spec.wafer;
    if (wafer.usableX + wafer.usableWidth > wafer.fabricWidth)
        return PresetProblem { "/wafer/usable_width/value",
            "usable_x + usable_width = " + std::to_string(wafer.usableX + wafer.usableWidth) + " exceeds fabric_width "
                + std::to_string(wafer.fabricWidth) + "; the usable rectangle lies inside the fabric" };
    if (wafer.usableY + wafer.usableHeight > wafer.fabricHeight)
        return PresetProblem { "/wafer/usable_height/value",
            "usable_y + usable_height = " + std::to_string(wafer.usableY + wafer.usableHeight)
                + " exceeds fabric_height " + std::to_string(wafer.fabricHeight)
                + "; the usable rectangle lies inside the fabric" };
    if (wafer.fabricPes() > wafer.cores)
        return PresetProblem { "/wafer/cores/value",
            "the fabric has " + std::to_string(wafer.fabricWidth) + " x " + std::to_string(wafer.fabricHeight) + " = "
                + std::to_string(wafer.fabricPes()) + " PEs but the wafer only " + std::to_string(wafer.cores)
                + " cores; every fabric PE is a core" };
    if (spec.memoryx.supported && spec.memoryx.dramBytes > spec.memoryx.capacityBytes)
        return PresetProblem { "/memoryx/dram_bytes/value",
            "dram_bytes exceeds capacity_bytes; the DRAM tier is part of the total capacity" };
    if (spec.memoryx.supported && spec.memoryx.dramBandwidthBytesPerS > 0.0
        && spec.memoryx.flashBandwidthBytesPerS > spec.memoryx.dramBandwidthBytesPerS)
        return PresetProblem { "/memoryx/flash_bandwidth_bytes_per_s/value",
            "flash_bandwidth_bytes_per_s exceeds dram_bandwidth_bytes_per_s; flash is the slower tier" };
    return std::nullopt;
}

} // namespace waferscope::core
