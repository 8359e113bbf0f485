// libFuzzer target for the hardware preset reader and validator: any bytes must yield a
// SystemSpec that passes its own checks or a located diagnostic, never a crash, a hang or
// unbounded memory. An accepted preset is also described the way `waferscope-cli hardware`
// shows it, so the fact sheet and the JSON writer see every value the reader lets through.
#include "core/hardware/hardwarefacts.h"
#include "core/hardware/hardwarejson.h"
#include "core/hardware/presetloader.h"
#include "core/hardware/presetvalidator.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

using waferscope::core::SystemSpec;

// The ranges the reader promises (presetloader.cpp) that the rest of the core relies on.
bool withinContract(const SystemSpec& spec)
{
    const waferscope::core::WaferSpec& wafer = spec.wafer;
    return !spec.name.empty() && !wafer.name.empty() && wafer.cores >= 1 && wafer.fabricWidth >= 1
        && wafer.fabricHeight >= 1 && wafer.usableX >= 0 && wafer.usableY >= 0 && wafer.usableWidth >= 1
        && wafer.usableHeight >= 1 && wafer.usableX + wafer.usableWidth <= wafer.fabricWidth
        && wafer.usableY + wafer.usableHeight <= wafer.fabricHeight && wafer.fabricPes() <= wafer.cores
        && wafer.clockHz > 0.0 && wafer.sramPerPeBytes > 0 && spec.ioBytesPerS > 0.0;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    waferscope::core::Expected<SystemSpec> spec = waferscope::core::loadPresetText(text, "fuzz.json");
    if (!spec) {
        const waferscope::core::Diagnostic& error = spec.error();
        if (error.file != "fuzz.json" || error.line < 1 || error.column < 1 || error.message.empty())
            std::abort(); // every refusal must be located and explained
        return 0;
    }
    if (!withinContract(spec.value()) || waferscope::core::findInconsistency(spec.value()))
        std::abort(); // accepted, but not what the reader promises
    if (waferscope::core::describeHardware(spec.value()).empty())
        std::abort();
    if (waferscope::core::hardwareToJson({ spec.value() }).empty())
        std::abort();
    return 0;
}
