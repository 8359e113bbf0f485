// No header of its own: defines reportSummary and the other summary writers of runreport.h.
// summary.txt and the CLI's text output: the figures a person looks at first.
#include "core/report/runreport.h"

#include "core/common/displaytext.h"
#include "core/common/units.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <sstream>

namespace waferscope::core::report {

namespace {

std::string percent(double share)
{
    return formatFixed(100.0 * share, 1) + "%";
}

void printThroughput(const engine::Metrics& m, std::ostream& out)
{
    if (m.mode == RunMode::Inference) {
        out << "  decode " << formatFixed(m.tokensPerS, 1) << " tokens/s per user (" << formatSeconds(m.stepTimeS)
            << " per step, " << m.users << " user" << (m.users > 1 ? "s" : "") << "), aggregate "
            << formatFixed(m.aggregateTokensPerS, 1) << " tokens/s\n";
        out << "  time to first token " << formatSeconds(m.timeToFirstTokenS) << " for a " << m.promptTokens
            << "-token prompt\n";
        return;
    }
    out << "  step " << formatSeconds(m.stepTimeS) << "   " << formatFixed(m.samplesPerS, 2) << " samples/s   "
        << formatFixed(m.tokensPerS, 0) << " tokens/s   batch " << m.batchPerSystem << " per system";
    if (m.execution == ExecutionMode::Pipelined)
        out << ", " << m.microBatch << " per pipeline copy\n";
    else
        out << " in " << m.microBatchesPerStep << " micro-batch(es) of " << m.microBatch << "\n";
}

void printSlowestLayers(const engine::Metrics& m, std::ostream& out)
{
    std::vector<std::size_t> order(m.layers.size());
    std::iota(order.begin(), order.end(), std::size_t(0));
    std::stable_sort(order.begin(), order.end(),
        [&](std::size_t a, std::size_t b) { return m.layers[a].timeS > m.layers[b].timeS; });
    const std::size_t shown = std::min<std::size_t>(order.size(), 12);
    out << "\n  slowest layers                       time        util    bound\n";
    for (std::size_t i = 0; i < shown; ++i) {
        const engine::LayerMetrics& layer = m.layers[order[i]];
        out << formatText("  %-36s %-11s %5.1f%%  %s\n", displayText(layer.name).c_str(),
            formatSeconds(layer.timeS).c_str(), 100.0 * layer.utilization, toString(layer.bound));
    }
    if (shown < order.size())
        out << "  ... " << order.size() - shown << " more (report.csv and --json list every layer)\n";
}

// The cycle-level run beside the model's figures; the HTML report and cycle_vs_model.csv have the regions.
void printCycleLevel(const RunReport& report, std::ostream& out)
{
    const CycleLevelReport& c = *report.cycleLevel;
    const double modelCycles = report.metrics.stepTimeS * c.clockHz;
    const std::optional<double> ratio = measuredOverModel(c.cyclesPerToken, modelCycles);
    char error[32];
    std::snprintf(error, sizeof error, "%.3g", c.maxAbsLogitError);
    out << "  cycle level: " << formatFixed(c.cyclesPerToken, 0) << " cycles per decode token, the model "
        << formatFixed(modelCycles, 0) << " (measured / model " << (ratio ? formatFixed(*ratio, 2) : "-") << "), "
        << formatFixed(c.tokensPerS, 0) << " tokens/s\n               tokens "
        << (c.tokensMatchReference ? "match the reference's" : "differ from the reference's")
        << ", largest logit error " << error << "\n";
}

} // namespace

std::string reportSummary(const RunReport& report)
{
    const engine::Metrics& m = report.metrics;
    const Manifest& manifest = report.manifest;
    std::ostringstream out;
    out << manifest.model << " on " << m.numSystems << " x " << m.system << ": " << toString(m.mode) << ", "
        << toString(m.execution) << "\n";
    printThroughput(m, out);
    out << "  MFU " << percent(m.mfu) << "   utilization: compute " << percent(m.utilization.compute) << ", fabric "
        << percent(m.utilization.fabric) << ", I/O " << percent(m.utilization.io) << ", MemoryX "
        << percent(m.utilization.memoryx) << ", SwarmX " << percent(m.utilization.swarmx) << "\n";
    out << "  bottleneck: " << toString(m.bottleneck) << "\n";
    if (report.cycleLevel)
        printCycleLevel(report, out);
    if (m.checkpointStrategy && *m.checkpointStrategy != CheckpointStrategy::AllBlocks) {
        out << "  checkpoints: " << toString(*m.checkpointStrategy);
        if (*m.checkpointStrategy == CheckpointStrategy::EveryK)
            out << " (every " << m.checkpointEvery << " blocks)";
        out << ", recompute " << formatSi(m.recomputeFlopsPerStep, "FLOP") << " per step";
        if (m.checkpointBytesPerStep > 0.0)
            out << ", " << formatBytes(m.checkpointBytesPerStep) << " to MemoryX and back per step";
        out << "\n";
    }
    for (const std::string& note : m.notes)
        out << "  - " << note << "\n";
    printSlowestLayers(m, out);
    if (report.scaling && !report.scaling->points.empty()) {
        out << "\n  num_csx  samples/s     speedup  efficiency  bound\n";
        for (const sweeps::ScalingPoint& p : report.scaling->points) {
            char line[160];
            std::snprintf(line, sizeof line, "  %-8d %-13.2f %-8.2f %-11.3f %s\n", p.numCsx, p.samplesPerS, p.speedup,
                p.efficiency, toString(p.bottleneck));
            out << line;
        }
    }
    out << "\n  input " << manifest.inputPath << " (sha256 " << manifest.inputSha256.substr(0, 16) << "...)\n"
        << "  WaferScope " << manifest.version << ", calibration " << manifest.calibrationVersion
        << (manifest.calibrationProfile.empty() ? "" : " (" + manifest.calibrationProfile + ")") << ", "
        << manifest.createdUtc << "\n";
    return out.str();
}

} // namespace waferscope::core::report
