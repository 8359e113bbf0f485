#pragma once

#include "core/common/expected.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace waferscope::core::engine {

// What a software release runs, as the engine builds it. Only the mechanisms the engine has are
// accepted in a calibration file: asking for one it has not is an error, never silently ignored.
struct Mechanisms {
    std::string gemv = "chain_reduced"; // the SDK-style GEMV: multicast down columns, chain-reduced rows
    // "by_weights": a strip per block, each region sized by the bytes it holds; "stacked": the
    // blocks of a wafer may share its PEs in SRAM tiers (CompileOptions::stackLayers), in as many
    // bands as give the fastest token (engine::compileFor).
    std::string regionSizing = "by_weights";
    std::string speculativeDecoding = "off"; // one token per pass
};

// The engine constants no vendor publishes, each with the figure it was fitted to
// (resources/calibration/engine.json, compiled in). The training and fabric constants are shared;
// a software profile (a release) adds its mechanisms and its one fitted overhead. One
// calibration for every model.
struct Calibration {
    std::string version;
    std::string profile; // the software profile ("2024-08-launch"); "custom" for a file without profiles
    std::string release; // what software it stands for
    std::string fittedFigure; // the validation figure (resources/validation) its overhead was fitted to
    Mechanisms mechanisms;
    double reduceAddCycles = 1.0; // per hop of a partial-sum chain, on top of the router hop
    double streamMarkerCycles = 1.0; // end-of-row marker of a streamed GEMM
    double regionLaunchCycles = 0.0; // per region group visited by a decode token
    std::map<std::string, std::string> fittedTo; // constant name -> the figure behind it
    struct Range {
        double low = 0.0;
        double high = 0.0;
        std::string reason;
    };
    std::map<std::string, Range> ranges; // constant name -> its plausible span (optional "range")
    std::vector<std::string> profiles; // every profile of the file it came from
    std::string defaultProfile; // of that file
};

// Parses a calibration file and picks `profile` (empty: the file's default); errors are located
// in `fileName`. Schema waferscope-calibration/2 has shared "constants" and "profiles";
// waferscope-calibration/1 (one flat set of constants) reads as a single profile "custom".
Expected<Calibration> parseCalibration(
    std::string_view text, const std::string& fileName, const std::string& profile = {});

// The built-in calibration (resources/calibration/engine.json) with its default profile.
const Calibration& builtinCalibration();
std::string_view builtinCalibrationText();

// --calibration NAME|FILE[#PROFILE]: a built-in profile by name, or a calibration file (its
// default profile, or the one after '#'). Errors name the argument and list the built-in profiles.
Expected<Calibration> resolveCalibration(const std::string& nameOrFile);

} // namespace waferscope::core::engine
