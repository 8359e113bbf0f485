#pragma once

#include "core/common/expected.h"

#include <map>
#include <string>
#include <string_view>

namespace waferscope::core::engine {

// The engine constants no vendor publishes, each with the figure it was fitted to
// (resources/calibration/engine.json, compiled in). One calibration for every model.
struct Calibration {
    std::string version;
    double reduceAddCycles = 1.0; // per hop of a partial-sum chain, on top of the router hop
    double streamMarkerCycles = 1.0; // end-of-row marker of a streamed GEMM
    double regionLaunchCycles = 0.0; // per region visited by a decode token
    std::map<std::string, std::string> fittedTo; // constant name -> the figure behind it
};

// Parses a calibration file; errors are located in `fileName`.
Expected<Calibration> parseCalibration(std::string_view text, const std::string& fileName);

// The built-in calibration (resources/calibration/engine.json).
const Calibration& builtinCalibration();
std::string_view builtinCalibrationText();

} // namespace waferscope::core::engine
