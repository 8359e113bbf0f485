#pragma once

#include "core/cyclelevel/cyclerun.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::core::report {

// What a run directory keeps of `run --level cycle` (report.json's "cycle_level", the
// "Cycle level vs model" tables of the HTML report, cycle_vs_model.csv): the figures
// cycleRunToJson prints, as plain values, without the per-step logits the run holds.

// One region's share of the last decode step, measured on the fabric, beside the model's figure.
struct CycleRegionReport {
    std::string op; // the plan's op name ("layers.3.attn.core")
    std::string kernel; // "gemv", "norm+gemv", "attention", "embedding", "lm_head", ...
    std::uint64_t measuredCycles = 0; // its share of the token's critical path
    double modelCycles = 0.0; // the model-level engine's figure for the same region; 0 when it has none
    std::uint64_t linkWavelets = 0;
    double busyFraction = 0.0; // engine-busy cycles / (pes x measuredCycles)
    std::int64_t pes = 0;
};

struct CycleLevelReport {
    std::string model;
    std::string system;
    std::int64_t promptTokens = 0;
    std::int64_t decodeSteps = 0;
    double cyclesPerToken = 0.0; // mean over the decode steps
    double tokensPerS = 0.0; // at clockHz
    double clockHz = 0.0;
    std::uint64_t prefillCycles = 0;
    std::uint64_t ttftCycles = 0; // prefill plus the first token's step; 0 in reports written before it
    // The prefill kernels' block side and their closed forms' cycles; 0 when the prompt ran one
    // position at a time (or in reports written before them).
    int prefillBlock = 0;
    double prefillModelCycles = 0.0;
    double maxAbsLogitError = 0.0;
    bool tokensMatchReference = false;
    double gapAtDifference = -1.0; // negative when every token matches
    std::vector<std::int32_t> prompt;
    std::vector<std::int32_t> generated;
    std::vector<std::int32_t> referenceGenerated;
    std::vector<CycleRegionReport> regions; // of the last decode step, in plan order
    int colorsAtBusiestRouter = 0;
    std::uint64_t peakSramBytesPerPe = 0;
    std::uint64_t hostBytes = 0;
    // Host wall time in seconds: building the fabric, the reference, the prefill, one decode step.
    double buildS = 0.0;
    double referenceS = 0.0;
    double prefillS = 0.0;
    double decodeTokenS = 0.0;
    std::vector<std::string> notes;
};

// The model-level engine's figure, in cycles, for each region the cycle-level run measured
// (CycleRunResult::modelCycles): the same token (the last decoded, at position prompt + tokens
// - 2, attending prompt + tokens - 1 positions) on the same plan, with the built-in profile
// without the launch-era software overhead the fabric does not run; 0 for a region the engine
// has no figure for. The comparison of the two levels lives here, above both.
std::vector<double> modelCyclesOfRegions(const cyclelevel::CycleRunResult& run, const ModelGraph& graph,
    const ExecutionPlan& plan, const SystemSpec& system);

CycleLevelReport cycleLevelReport(const cyclelevel::CycleRunResult& run);

// measured / model, or nothing where the model has no figure (zero or not finite).
std::optional<double> measuredOverModel(double measured, double model);

// The JSON object cycleRunToJson prints, with the same keys and values.
std::string cycleLevelToJson(const CycleLevelReport& report, int indent = 2);

// cycle_vs_model.csv: one row per region, "op,kernel,measured_cycles,model_cycles,ratio,
// link_wavelets,busy_fraction,pes"; ratio is measured / model, empty where the model has no
// figure; numbers written as in report.json.
std::string cycleVsModelCsv(const CycleLevelReport& report);

} // namespace waferscope::core::report
