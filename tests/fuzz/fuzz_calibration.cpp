// libFuzzer target for the calibration reader: any bytes must yield a calibration whose
// constants are usable (finite, not negative) and whose profile is one of the file's, or a
// located diagnostic; never a crash, a hang or unbounded memory.
#include "core/engine/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    for (const char* profile : { "", "2024-08-launch", "custom" }) {
        const waferscope::core::Expected<waferscope::core::engine::Calibration> calibration
            = waferscope::core::engine::parseCalibration(text, "fuzz.json", profile);
        if (!calibration) {
            const waferscope::core::Diagnostic& error = calibration.error();
            if (error.file != "fuzz.json" || error.line < 1 || error.column < 1 || error.message.empty())
                std::abort(); // every refusal must be located and explained
            continue;
        }
        const waferscope::core::engine::Calibration& c = calibration.value();
        for (const double value : { c.reduceAddCycles, c.streamMarkerCycles, c.regionLaunchCycles })
            if (!std::isfinite(value) || value < 0.0)
                std::abort();
        if (std::find(c.profiles.begin(), c.profiles.end(), c.profile) == c.profiles.end())
            std::abort();
    }
    return 0;
}
