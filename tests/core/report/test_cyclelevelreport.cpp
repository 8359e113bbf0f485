// The cycle-level part of a run directory, from a hand-made cycle-level run of a five-block
// decoder: report.json's "cycle_level" is what cycleRunToJson prints and reads back,
// cycle_vs_model.csv has every region, the HTML tables show the first and last block and sum the
// blocks between, and compare lines up the cycle-level totals.
#include "testing.h"

#include "core/report/cyclelevelsections.h"
#include "core/report/htmlreport.h"
#include "core/report/reportcompare.h"
#include "core/report/rundirectory.h"
#include "core/report/runreport.h"
#include "core/report/tfevents.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <sstream>

using namespace waferscope::core;
using namespace waferscope::core::report;

namespace {

// embedding, then per block q (norm+gemv), k (gemv, no model figure) and attention, then lm_head.
cyclelevel::CycleRunResult decoderRun(int blocks)
{
    cyclelevel::CycleRunResult run;
    run.model = "tiny";
    run.system = "CS-2";
    run.prompt = { 3, 1, 4 };
    run.tokens = { 15, 9 };
    run.referenceTokens = { 15, 9 };
    run.decode.resize(2);
    run.decode[0].cycles = 5000;
    run.decode[1].cycles = 5200;
    run.prefillCycles = 11000;
    run.ttftCycles = 16000; // the prefill and the first step
    run.cyclesPerToken = 5100.0;
    run.clockHz = 1.1e9;
    run.tokensPerS = run.clockHz / run.cyclesPerToken;
    run.maxAbsLogitError = 2.5e-6;
    run.tokensMatchReference = true;
    const auto add = [&](const std::string& op, const std::string& kernelName, std::uint64_t measured, double model) {
        const RegionKernelKind kernel = *fromName<RegionKernelKind>(kernelName);
        const std::size_t i = run.regions.size();
        run.regions.push_back({ .op = op,
            .kernel = kernel,
            .measuredCycles = measured,
            .finishCycle = 0,
            .linkWavelets = 1000 + 37 * i,
            .busyFraction = 0.01 * double(i % 7 + 1),
            .pes = std::int64_t(16 + 8 * i),
            .expertsChosen = {} });
        run.modelCycles.push_back(model);
    };
    add("embedding", "embedding", 900, 2600.0);
    for (int b = 0; b < blocks; ++b) {
        const std::string layer = "layers." + std::to_string(b) + ".";
        add(layer + "attn.q", "norm+gemv", 270 + 10 * std::uint64_t(b), 2131.0);
        add(layer + "attn.k", "gemv", 60 + std::uint64_t(b), 0.0);
        add(layer + "attn.core", "attention", 350 + 7 * std::uint64_t(b % 3), 2045.5);
    }
    add("lm_head", "lm_head", 1661, 2858.0);
    run.colorsAtBusiestRouter = 12;
    run.peakSramBytesPerPe = 6144;
    run.hostBytes = 123456789;
    run.buildS = 1.5;
    run.referenceS = 0.01;
    run.prefillS = 0.7;
    run.decodeS = 0.35;
    run.notes = { "the prompt fills the KV cache one position at a time" };
    return run;
}

RunReport reportWith(const cyclelevel::CycleRunResult& run)
{
    RunReport report;
    report.manifest.model = run.model;
    report.metrics.mode = RunMode::Inference;
    report.metrics.stepTimeS = 4.0e-6; // 4,400 cycles at 1.1 GHz
    report.metrics.tokensPerS = 1.0 / report.metrics.stepTimeS;
    report.cycleLevel = cycleLevelReport(run);
    return report;
}

std::vector<std::string> split(const std::string& text, char separator)
{
    std::vector<std::string> parts;
    std::string part;
    std::istringstream in(text);
    while (std::getline(in, part, separator))
        parts.push_back(part);
    if (!text.empty() && text.back() == separator)
        parts.push_back("");
    return parts;
}

// 1234567 -> "1,234,567"
std::string grouped(long long value)
{
    std::string digits = std::to_string(value);
    for (int at = int(digits.size()) - 3; at > 0; at -= 3)
        digits.insert(std::size_t(at), ",");
    return digits;
}

} // namespace

WS_TEST(cycleLevelJsonIsWhatCycleRunToJsonPrints)
{
    const cyclelevel::CycleRunResult run = decoderRun(5);
    WS_CHECK_EQ(cycleLevelToJson(cycleLevelReport(run)), cyclelevel::cycleRunToJson(run));
    cyclelevel::CycleRunResult differing = run;
    differing.tokens.back() = 7;
    differing.tokensMatchReference = false;
    differing.gapAtDifference = 0.03125;
    WS_CHECK_EQ(cycleLevelToJson(cycleLevelReport(differing)), cyclelevel::cycleRunToJson(differing));
}

WS_TEST(reportJsonCarriesTheCycleLevelAndReadsItBack)
{
    const cyclelevel::CycleRunResult run = decoderRun(5);
    const RunReport report = reportWith(run);
    const std::string text = reportToJson(report);
    const nlohmann::json json = nlohmann::json::parse(text);
    WS_CHECK(json.at("cycle_level") == nlohmann::json::parse(cyclelevel::cycleRunToJson(run)));
    const Expected<RunReport> read = reportFromJson(text, "report.json");
    WS_REQUIRE(read.hasValue());
    WS_REQUIRE(read->cycleLevel.has_value());
    WS_CHECK_EQ(reportToJson(*read), text);
    WS_CHECK_EQ(read->cycleLevel->regions.size(), run.regions.size());
    WS_CHECK_EQ(read->cycleLevel->regions[4].measuredCycles, run.regions[4].measuredCycles);
    WS_CHECK_EQ(read->cycleLevel->regions[4].modelCycles, run.modelCycles[4]);
    WS_CHECK_EQ(read->cycleLevel->cyclesPerToken, run.cyclesPerToken);
    WS_CHECK(read->cycleLevel->generated == run.tokens);
    WS_CHECK_EQ(read->cycleLevel->ttftCycles, std::uint64_t(16000));

    // A report written before ttft_cycles existed reads back, with no time to first token.
    nlohmann::json older = json;
    older["cycle_level"].erase("ttft_cycles");
    const Expected<RunReport> readOlder = reportFromJson(older.dump(2), "report.json");
    WS_REQUIRE(readOlder.hasValue());
    WS_CHECK_EQ(readOlder->cycleLevel->prefillCycles, std::uint64_t(11000));
    WS_CHECK_EQ(readOlder->cycleLevel->ttftCycles, std::uint64_t(0));

    // A model-level report is written as before, without the key, and reads back without a part.
    RunReport modelLevel = report;
    modelLevel.cycleLevel.reset();
    const std::string plain = reportToJson(modelLevel);
    WS_CHECK(!nlohmann::json::parse(plain).contains("cycle_level"));
    WS_CHECK(!reportFromJson(plain, "report.json")->cycleLevel.has_value());

    // A wrong value inside is located by its key.
    std::string bad = text;
    const std::size_t at = bad.find("\"measured_cycles\"", bad.find("\"cycle_level\""));
    bad.replace(at, bad.find(',', at) - at, "\"measured_cycles\": -3");
    const Expected<RunReport> refused = reportFromJson(bad, "report.json");
    WS_REQUIRE(!refused.hasValue());
    WS_CHECK_CONTAINS(refused.error().message, "measured_cycles");
    WS_CHECK_EQ(std::size_t(refused.error().line),
        std::size_t(std::count(bad.begin(), bad.begin() + std::ptrdiff_t(at), '\n')) + 1);
}

WS_TEST(cycleVsModelCsvHasEveryRegionWithItsRatio)
{
    const cyclelevel::CycleRunResult run = decoderRun(5);
    const std::vector<std::string> lines = split(cycleVsModelCsv(cycleLevelReport(run)), '\n');
    WS_REQUIRE(lines.size() == run.regions.size() + 2); // header, rows, the empty piece after the last newline
    WS_CHECK_EQ(lines[0], std::string("op,kernel,measured_cycles,model_cycles,ratio,link_wavelets,busy_fraction,pes"));
    for (std::size_t i = 0; i < run.regions.size(); ++i) {
        const std::vector<std::string> cells = split(lines[i + 1], ',');
        WS_REQUIRE(cells.size() == 8);
        const cyclelevel::RegionCycles& region = run.regions[i];
        WS_CHECK_EQ(cells[0], region.op);
        WS_CHECK_EQ(cells[1], std::string(toString(region.kernel)));
        WS_CHECK_EQ(std::stoull(cells[2]), region.measuredCycles);
        WS_CHECK_EQ(std::stod(cells[3]), run.modelCycles[i]);
        if (run.modelCycles[i] == 0.0)
            WS_CHECK(cells[4].empty());
        else
            WS_CHECK_NEAR(std::stod(cells[4]), double(region.measuredCycles) / run.modelCycles[i], 1e-15);
        WS_CHECK_EQ(std::stoull(cells[5]), region.linkWavelets);
        WS_CHECK_EQ(std::stod(cells[6]), region.busyFraction);
        WS_CHECK_EQ(std::stoll(cells[7]), region.pes);
    }
}

WS_TEST(regionRowsShowTheFirstAndLastBlockAndSumTheOnesBetween)
{
    WS_CHECK_EQ(blockOfRegion("layers.12.attn.core"), std::string("layers.12"));
    WS_CHECK_EQ(blockOfRegion("h.3.mlp.expert.7"), std::string("h.3"));
    WS_CHECK_EQ(blockOfRegion("lm_head"), std::string());
    WS_CHECK_EQ(blockOfRegion("3.x"), std::string());

    const CycleLevelReport report = cycleLevelReport(decoderRun(5));
    const std::vector<CycleRegionRow> rows = cycleRegionRows(report);
    // embedding, layers.0 (3), layers.1..3 summed, layers.4 (3), lm_head
    WS_REQUIRE(rows.size() == 9);
    const std::vector<std::size_t> firsts { 0, 1, 2, 3, 4, 13, 14, 15, 16 };
    for (std::size_t r = 0; r < rows.size(); ++r) {
        WS_CHECK_EQ(rows[r].firstRegion, firsts[r]);
        WS_CHECK_EQ(rows[r].regionCount, r == 4 ? std::size_t(9) : std::size_t(1));
    }
    const CycleRegionRow& between = rows[4];
    WS_CHECK_EQ(between.blocks, 3);
    WS_CHECK_EQ(between.firstBlock, std::string("layers.1"));
    WS_CHECK_EQ(between.lastBlock, std::string("layers.3"));

    // Block b measures (270 + 10b) + (60 + b) + (350 + 7 (b mod 3)), the model 2131 + 0 + 2045.5.
    const std::vector<BlockCycles> blocks = cyclesByBlock(report);
    WS_REQUIRE(blocks.size() == 5);
    for (int b = 0; b < 5; ++b) {
        WS_CHECK_EQ(blocks[std::size_t(b)].block, "layers." + std::to_string(b));
        WS_CHECK_EQ(blocks[std::size_t(b)].regions, 3);
        WS_CHECK_EQ(blocks[std::size_t(b)].measuredCycles, double(270 + 10 * b + 60 + b + 350 + 7 * (b % 3)));
        WS_CHECK_EQ(blocks[std::size_t(b)].modelCycles, 2131.0 + 2045.5);
    }

    // Two blocks: nothing between them to sum.
    WS_CHECK_EQ(cycleRegionRows(cycleLevelReport(decoderRun(2))).size(), std::size_t(8));
}

WS_TEST(kernelSummarySumsEveryRegionMostCyclesFirst)
{
    const cyclelevel::CycleRunResult run = decoderRun(5);
    std::map<std::string, double> measured, model, busy, peCycles;
    for (std::size_t i = 0; i < run.regions.size(); ++i) {
        const cyclelevel::RegionCycles& region = run.regions[i];
        measured[toString(region.kernel)] += double(region.measuredCycles);
        model[toString(region.kernel)] += run.modelCycles[i];
        busy[toString(region.kernel)] += region.busyFraction * double(region.pes) * double(region.measuredCycles);
        peCycles[toString(region.kernel)] += double(region.pes) * double(region.measuredCycles);
    }
    const std::vector<KernelCycles> kernels = cyclesByKernel(cycleLevelReport(run));
    WS_REQUIRE(kernels.size() == measured.size());
    for (std::size_t k = 0; k < kernels.size(); ++k) {
        WS_CHECK_EQ(kernels[k].measuredCycles, measured[kernels[k].kernel]);
        WS_CHECK_EQ(kernels[k].modelCycles, model[kernels[k].kernel]);
        WS_CHECK_NEAR(kernels[k].busyPeCycles, busy[kernels[k].kernel], 1e-12);
        WS_CHECK_EQ(kernels[k].peCycles, peCycles[kernels[k].kernel]);
        if (k > 0)
            WS_CHECK(kernels[k - 1].measuredCycles >= kernels[k].measuredCycles);
    }
    // Attention (5 regions, 1,778 cycles) before the LM head (1 region, 1,661 cycles).
    WS_CHECK_EQ(kernels[0].kernel, std::string("attention"));
    WS_CHECK_EQ(kernels[0].regions, 5);
    WS_CHECK_EQ(kernels[1].kernel, std::string("lm_head"));
}

WS_TEST(htmlShowsTheCycleLevelAgainstTheModel)
{
    const cyclelevel::CycleRunResult run = decoderRun(5);
    const RunReport report = reportWith(run);
    const std::string html = reportHtml(report);
    for (const char* title : { "<h2>Cycle level vs model</h2>", "<h2>Cycle level vs model by kernel</h2>",
             "<h2>Cycle level vs model by region</h2>", "<h2>Cycle-level run</h2>" })
        WS_CHECK_CONTAINS(html, title);
    // Measured per token against the model's decode step at the clock: 5,100 and 4,400 cycles.
    const long long modelCycles = std::llround(report.metrics.stepTimeS * run.clockHz);
    WS_CHECK_CONTAINS(html, "<td class=\"num\">" + grouped(std::llround(run.cyclesPerToken)) + "</td>");
    WS_CHECK_CONTAINS(html, "<td class=\"num\">" + grouped(modelCycles) + "</td>");
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.2f", run.cyclesPerToken / double(modelCycles));
    WS_CHECK_CONTAINS(html, std::string("<td class=\"num\">") + ratio + "</td>");
    for (const char* shown : { "embedding", "layers.0.attn.q", "layers.4.attn.core", "lm_head" })
        WS_CHECK_CONTAINS(html, std::string("<td>") + shown + "</td>");
    WS_CHECK(html.find("layers.2.attn.q") == std::string::npos);
    WS_CHECK_CONTAINS(html, "<td>layers.1 to layers.3</td><td>3 blocks</td>");
    // Blocks 0 to 4 measure (270 + 10b) + (60 + b) + (350 + 7 (b mod 3)): 680, 698, 716, 713 and 731;
    // the model 2131 + 2045.5 each, rounded to 4,177.
    WS_CHECK_CONTAINS(html,
        "<td>Cycles of one block, least to most of 5</td><td class=\"num\">680 to 731</td>"
        "<td class=\"num\">4,177</td>");
    WS_CHECK_CONTAINS(html, "Cycle level: the prompt fills the KV cache");
    // Without a cycle-level run, none of it.
    RunReport modelLevel = report;
    modelLevel.cycleLevel.reset();
    WS_CHECK(reportHtml(modelLevel).find("Cycle level") == std::string::npos);
}

WS_TEST(runDirectoryAndSummaryCarryTheCycleLevel)
{
    const RunReport report = reportWith(decoderRun(2));
    const engine::RunResult run;
    const ExecutionPlan plan;
    std::vector<std::string> names;
    for (const ReportFile& file : runDirectoryFiles(report, run, plan))
        names.push_back(file.name);
    WS_REQUIRE(names.size() == 7);
    WS_CHECK(isWaferScopeEventFile(names[5]));
    names.erase(names.begin() + 5);
    WS_CHECK(names
        == std::vector<std::string>(
            { "report.json", "report.csv", "report.html", "trace.json", "summary.txt", "cycle_vs_model.csv" }));
    RunReport modelLevel = report;
    modelLevel.cycleLevel.reset();
    WS_CHECK_EQ(runDirectoryFiles(modelLevel, run, plan).size(), std::size_t(6));
    WS_CHECK_CONTAINS(reportSummary(report), "cycle level: 5100 cycles per decode token, the model 4400");
}

WS_TEST(compareLinesUpTheCycleLevelTotals)
{
    const RunReport a = reportWith(decoderRun(2));
    cyclelevel::CycleRunResult slower = decoderRun(2);
    slower.cyclesPerToken = 6375.0;
    slower.tokensPerS = slower.clockHz / slower.cyclesPerToken;
    const RunReport b = reportWith(slower);
    const ReportComparison c = compareReports(a, b);
    std::map<std::string, MetricChange> byName;
    for (const MetricChange& m : c.totals)
        byName[m.metric] = m;
    WS_REQUIRE(byName.count("cycle_level_cycles_per_token") == 1);
    WS_CHECK_EQ(byName["cycle_level_cycles_per_token"].a, 5100.0);
    WS_CHECK_EQ(byName["cycle_level_cycles_per_token"].b, 6375.0);
    WS_CHECK_EQ(byName["cycle_level_tokens_per_s"].b, slower.tokensPerS);
    const nlohmann::json json = nlohmann::json::parse(comparisonToJson(c, a, b, "A", "B"));
    bool found = false;
    for (const nlohmann::json& total : json["totals"])
        if (total["metric"] == "cycle_level_cycles_per_token") {
            found = true;
            WS_CHECK_NEAR(total["change"].get<double>(), 6375.0 / 5100.0 - 1.0, 1e-12);
        }
    WS_CHECK(found);
    const std::string text = comparisonText(c, a, b, "A", "B");
    WS_CHECK_CONTAINS(text, "cycle-level cycles/token");
    WS_CHECK_CONTAINS(text, "+25.0%");

    // Against a model-level report: the figure is missing on one side.
    RunReport modelLevel = b;
    modelLevel.cycleLevel.reset();
    const ReportComparison half = compareReports(a, modelLevel);
    const nlohmann::json halfJson = nlohmann::json::parse(comparisonToJson(half, a, modelLevel, "A", "B"));
    for (const nlohmann::json& total : halfJson["totals"])
        if (total["metric"] == "cycle_level_tokens_per_s")
            WS_CHECK(total["b"].is_null() && total["change"].is_null());
    WS_CHECK_EQ(compareReports(modelLevel, modelLevel).totals.size(), c.totals.size() - 2);
}
