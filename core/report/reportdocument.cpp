#include "core/report/reportdocument.h"

#include "core/common/units.h"
#include "core/report/cyclelevelsections.h"
#include "core/report/reportformat.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace waferscope::core::report {

namespace {

using namespace cells;
using Pairs = std::vector<std::pair<std::string, std::string>>;

ReportSection keyValues(std::string id, std::string title, const Pairs& pairs)
{
    ReportSection section;
    section.id = std::move(id);
    section.title = std::move(title);
    section.table.align = "ll";
    for (const auto& [key, value] : pairs)
        section.table.rows.push_back({ key, orDash(value) });
    return section;
}

std::string pageTitle(const RunReport& r)
{
    const std::string system = r.manifest.system.empty() ? r.metrics.system : r.manifest.system;
    return "WaferScope report: " + orDash(r.manifest.model) + " on " + std::to_string(r.manifest.numCsx) + " x "
        + orDash(system);
}

Pairs manifestRows(const RunReport& r)
{
    const Manifest& m = r.manifest;
    return { { "WaferScope version", m.version }, { "Created (UTC)", m.createdUtc }, { "Input", m.inputPath },
        { "Input SHA-256", m.inputSha256 }, { "Model", m.model }, { "System", m.system },
        { "num_csx", std::to_string(m.numCsx) }, { "Mode", toString(m.mode) },
        { "Execution requested", toString(m.executionRequested) }, { "Execution resolved", toString(r.plan.execution) },
        { "Max steps", std::to_string(m.maxSteps) },
        { "Global batch", m.globalBatch == 0 ? "the config's batch size" : std::to_string(m.globalBatch) },
        { "Users", std::to_string(m.users) },
        { "Prompt tokens", m.promptTokens == 0 ? "engine default" : std::to_string(m.promptTokens) },
        { "Calibration",
            m.calibrationVersion + (m.calibrationProfile.empty() ? "" : ", profile " + m.calibrationProfile) },
        { "Seed", std::to_string(m.seed) } };
}

Pairs keyFigureRows(const RunReport& r)
{
    const engine::Metrics& m = r.metrics;
    Pairs rows = { { "Execution", toString(m.execution) } };
    if (m.mode == RunMode::Inference) {
        rows.insert(rows.end(),
            { { "Decode step time", seconds(m.stepTimeS) }, { "Time to first token", seconds(m.timeToFirstTokenS) },
                { "Tokens/s per user", rate(m.tokensPerS, "tokens/s") },
                { "Aggregate tokens/s", rate(m.aggregateTokensPerS, "tokens/s") },
                { "Sequences/s", rate(m.samplesPerS, "sequences/s") }, { "Users", std::to_string(m.users) } });
    } else {
        rows.insert(rows.end(),
            { { "Step time", seconds(m.stepTimeS) }, { "Samples/s", rate(m.samplesPerS, "samples/s") },
                { "Tokens/s", rate(m.tokensPerS, "tokens/s") }, { "Micro-batch", std::to_string(m.microBatch) } });
    }
    const engine::Utilization& u = m.utilization;
    rows.insert(rows.end(),
        { { "MFU", percent(m.mfu) }, { "Utilization: compute", percent(u.compute) },
            { "Utilization: fabric", percent(u.fabric) }, { "Utilization: I/O", percent(u.io) },
            { "Utilization: MemoryX", percent(u.memoryx) }, { "Utilization: SwarmX", percent(u.swarmx) },
            { "Bottleneck", toString(m.bottleneck) }, { "PEs in regions", percent(r.plan.peUtilization) },
            { "SRAM used", percent(r.plan.sramUtilization) } });
    if (m.checkpointStrategy) {
        const std::string every = *m.checkpointStrategy == CheckpointStrategy::EveryK
            ? " (every " + std::to_string(m.checkpointEvery) + " blocks)"
            : "";
        rows.insert(rows.end(),
            { { "Checkpoints", toString(*m.checkpointStrategy) + every },
                { "Recomputed per step", formatSi(m.recomputeFlopsPerStep, "FLOP") },
                { "Checkpoint traffic per step", formatBytes(m.checkpointBytesPerStep) } });
    }
    return rows;
}

std::vector<std::string> notes(const RunReport& r)
{
    std::vector<std::string> all = r.metrics.notes;
    all.insert(all.end(), r.plan.notes.begin(), r.plan.notes.end());
    if (r.cycleLevel)
        for (const std::string& note : r.cycleLevel->notes)
            all.push_back("Cycle level: " + note);
    return all;
}

ReportTable regionTable(const RunReport& r)
{
    std::vector<std::vector<std::string>> rows;
    for (std::size_t i = 0; i < r.regions.size(); ++i) {
        const RegionReport& g = r.regions[i];
        const std::string rectText = "(" + std::to_string(g.rect.x) + ", " + std::to_string(g.rect.y) + ") "
            + std::to_string(g.rect.w) + " x " + std::to_string(g.rect.h);
        rows.push_back({ std::to_string(i), g.op, std::to_string(g.system), std::to_string(g.stage), rectText,
            formatThousands(g.rect.area()), seconds(g.timeS), percent(g.utilization), toString(g.bound) });
    }
    return ReportTable { { "#", "Op", "Wafer", "Stage", "Rect (x, y) w x h", "PEs", "Time/step", "Utilization",
                             "Bound" },
        "nlnnlnnnl", rows, "The plan has no regions." };
}

ReportTable systemTable(const RunReport& r)
{
    std::vector<std::vector<std::string>> rows;
    for (const SystemReport& s : r.systems)
        rows.push_back({ std::to_string(s.index), seconds(s.computeBusyS), seconds(s.ioBusyS),
            formatSi(finiteOr(s.flops), "FLOP"), formatBytes(finiteOr(s.ioBytes)), percent(s.computeUtilization),
            s.sameScheduleAs0 ? "same as system 0" : "simulated" });
    return ReportTable { { "System", "Compute busy", "I/O busy", "FLOPs", "I/O bytes", "Compute utilization",
                             "Schedule" },
        "nnnnnnl", rows, "The report lists no systems." };
}

ReportTable layerTable(const RunReport& r)
{
    std::vector<std::vector<std::string>> rows;
    for (std::size_t i = 0; i < r.metrics.layers.size(); ++i) {
        const engine::LayerMetrics& l = r.metrics.layers[i];
        rows.push_back({ std::to_string(i), l.name, toString(l.kind), formatCount(double(l.params)),
            formatSi(finiteOr(l.flops), "FLOP"), l.region < 0 ? "-" : std::to_string(l.region), seconds(l.timeS),
            percent(l.utilization), toString(l.bound) });
    }
    return ReportTable { { "#", "Layer", "Kind", "Params", "FLOPs", "Region", "Time/step", "Utilization", "Bound" },
        "nllnnnnnl", rows, "The run has no layers." };
}

// Each simulated step (report.json's steps[], the TensorBoard scalars).
ReportTable stepTable(const RunReport& r)
{
    const bool inference = r.metrics.mode == RunMode::Inference;
    std::vector<std::vector<std::string>> rows;
    for (const engine::StepFigures& s : r.steps) {
        const engine::Utilization& u = s.utilization;
        rows.push_back({ std::to_string(s.step), seconds(s.startS), seconds(s.stepTimeS),
            inference ? rate(s.tokensPerS, "tokens/s") : rate(s.samplesPerS, "samples/s"), percent(s.mfu),
            percent(u.compute), percent(u.fabric), percent(u.io), percent(u.memoryx), percent(u.swarmx) });
    }
    return ReportTable { { "Step", "Starts at", "Step time", inference ? "Tokens/s per user" : "Samples/s", "MFU",
                             "Compute", "Fabric", "I/O", "MemoryX", "SwarmX" },
        "nnnnnnnnnn", rows, "The report has no per-step figures." };
}

std::string general(double value)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", value);
    return text;
}

std::string signedPercent(double change)
{
    char text[32];
    std::snprintf(text, sizeof text, "%+.2f %%", 100.0 * change);
    return text;
}

// What this result depends on: each ranged factor alone at its low and its high.
ReportTable sensitivityTable(const sweeps::Sensitivity& s)
{
    const std::string unit = figureUnit(s.figure);
    std::vector<std::vector<std::string>> rows;
    for (const sweeps::FactorEffect& f : s.factors) {
        const auto change = [&](double figure) {
            return s.baseline != 0.0 ? signedPercent(figure / s.baseline - 1.0) : std::string("-");
        };
        rows.push_back({ f.name, f.reason, general(f.value), general(f.lowValue) + " .. " + general(f.highValue),
            general(f.figureAtLow), general(f.figureAtHigh), change(f.figureAtLow) + " / " + change(f.figureAtHigh) });
    }
    return ReportTable { { "Factor", "Why it spans its range", "Value", "Range", unit + " at low", unit + " at high",
                             "Change from " + general(s.baseline) + " " + unit },
        "llnnnnn", rows, "No hardware value or calibration constant carries a range." };
}

} // namespace

std::string figureUnit(const std::string& figure)
{
    if (figure == "samples_per_s")
        return "samples/s";
    if (figure == "tokens_per_s")
        return "tokens/s per user";
    return figure;
}

ReportDocument reportDocument(const RunReport& report)
{
    ReportDocument document;
    document.title = pageTitle(report);
    document.subtitle = "Created " + orDash(report.manifest.createdUtc) + " from " + orDash(report.manifest.inputPath);
    document.sections.push_back(keyValues("manifest", "Manifest", manifestRows(report)));
    document.sections.push_back(keyValues("key_figures", "Key figures", keyFigureRows(report)));
    ReportSection notesSection;
    notesSection.kind = ReportSection::Kind::List;
    notesSection.id = "notes";
    notesSection.title = "Notes";
    notesSection.items = notes(report);
    notesSection.whenEmpty = "No notes.";
    document.sections.push_back(std::move(notesSection));
    if (report.sensitivity)
        document.sections.push_back(
            tableSection("sensitivity", "What this result depends on", sensitivityTable(*report.sensitivity)));
    for (ReportSection& section : cycleLevelSections(report))
        document.sections.push_back(std::move(section));
    for (ReportChart& chart : reportCharts(report)) {
        ReportSection section;
        section.kind = ReportSection::Kind::Chart;
        section.id = chart.id;
        section.title = chart.title;
        section.chart = std::move(chart);
        document.sections.push_back(std::move(section));
    }
    document.sections.push_back(tableSection("steps", "Steps", stepTable(report)));
    document.sections.push_back(tableSection("regions", "Regions", regionTable(report)));
    document.sections.push_back(tableSection("systems", "Systems", systemTable(report)));
    document.sections.push_back(tableSection("layers", "Layers", layerTable(report)));
    document.closing = "Written by WaferScope " + orDash(report.manifest.version) + ".";
    document.pageFooter = document.title + ", created " + orDash(report.manifest.createdUtc);
    return document;
}

ReportSection tableSection(std::string id, std::string title, ReportTable table)
{
    ReportSection section;
    section.id = std::move(id);
    section.title = std::move(title);
    section.table = std::move(table);
    return section;
}

} // namespace waferscope::core::report
