#pragma once

#include "core/common/expected.h"
#include "core/common/names.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace waferscope::core::engine {

// What a software release runs, as the engine builds it. Only the mechanisms the engine has are
// accepted in a calibration file: asking for one it has not is an error, never silently ignored.
// A profile's "mechanisms" object spells each by the name in its table (core/engine/enginenames.cpp).

// "gemv": Chain ("chain_reduced") is the SDK-style GEMV, multicast down columns, output rows
// reduced along chains; Tree ("tree_reduced") the same with the rows reduced along binary trees
// (MeshGEMV-style, ExecutionPlan::treeReducedGemv).
enum class GemvReduction { Chain, Tree };
// "region_sizing": ByWeights ("by_weights") is a strip per block, each region sized by the bytes it
// holds; Stacked ("stacked") lets the blocks of a wafer share its PEs in SRAM tiers
// (CompileOptions::stackLayers), in as many bands as give the fastest token (engine::compileFor).
enum class RegionSizing { ByWeights, Stacked };
// "speculative_decoding": Off ("off") is one token per pass; DraftModel ("draft_model") a draft
// model proposing tokens that the target checks in one pass (Calibration::speculation).
enum class SpeculativeDecoding { Off, DraftModel };

struct Mechanisms {
    GemvReduction gemv = GemvReduction::Chain;
    RegionSizing regionSizing = RegionSizing::ByWeights;
    SpeculativeDecoding speculativeDecoding = SpeculativeDecoding::Off;
};

// Speculative decoding as a profile runs it (Leviathan, Kalman and Matias, "Fast Inference from
// Transformers via Speculative Decoding", ICML 2023). Per pass, the draft model runs k tokens one
// after another; the target then takes its last token and the k drafted ones in one pass, back to
// back as it takes a prompt, and keeps the drafted tokens up to the first it would not have chosen,
// plus one of its own. Each drafted token is accepted with the acceptance rate a, independently,
// so a pass yields (1 - a^(k+1)) / (1 - a) tokens. The engine picks the k (0 to maxDraftTokens,
// 0 being no draft) whose tokens per second are highest. The draft and a are published choices
// fixed before the profile's overhead is fitted: choosing them to meet a figure would be a second fit.
struct Speculation {
    std::string draftParams; // a built-in sample's file name ("llama3_8b.yaml")
    std::string draftWhy; // why this draft model
    double acceptanceRate = 0.0; // in [0, 1)
    std::string acceptanceSource; // where it was measured
    int maxDraftTokens = 8;
    // Where draftParams was given, so that an error about the draft points there: the calibration
    // file's line and column, or the option itself for a built-in profile.
    std::string draftFile = "--calibration";
    int draftLine = 0;
    int draftColumn = 0;
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
    Speculation speculation; // mechanisms.speculativeDecoding == SpeculativeDecoding::DraftModel
    double reduceAddCycles = 1.0; // per hop of a partial-sum chain, on top of the router hop
    double streamMarkerCycles = 1.0; // end-of-row marker of a streamed GEMM
    double regionLaunchCycles = 0.0; // per region group visited by a decode token
    std::map<std::string, std::string> fittedTo; // constant name -> the figure behind it (or its source)
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

namespace waferscope::core {

template <>
std::span<const EnumName<engine::GemvReduction>> nameTable<engine::GemvReduction>();
template <>
std::span<const EnumName<engine::RegionSizing>> nameTable<engine::RegionSizing>();
template <>
std::span<const EnumName<engine::SpeculativeDecoding>> nameTable<engine::SpeculativeDecoding>();

} // namespace waferscope::core
