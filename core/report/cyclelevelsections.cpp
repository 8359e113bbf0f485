#include "core/report/cyclelevelsections.h"

#include "core/common/units.h"
#include "core/report/reportformat.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <utility>

namespace waferscope::core::report {

namespace {

using namespace cells;

// 1234567 -> "1,234,567"; "-" when not finite; beyond a long long (a report edited by hand) ungrouped.
std::string whole(double value)
{
    if (!std::isfinite(value))
        return "-";
    return std::abs(value) < 9e18 ? formatThousands(std::llround(value)) : formatFixed(value, 0);
}

std::string ratioText(double measured, double model)
{
    const std::optional<double> ratio = measuredOverModel(measured, model);
    return ratio ? formatFixed(*ratio, 2) : "-";
}

// Three significant digits: 1.91e-06, 0.0312.
std::string significant(double value)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", value);
    return text;
}

// "12, 7, 31" (at most `shown` ids, then how many more).
std::string tokenList(const std::vector<std::int32_t>& ids, std::size_t shown = 16)
{
    std::string text;
    for (std::size_t i = 0; i < ids.size() && i < shown; ++i)
        text += (i ? ", " : "") + std::to_string(ids[i]);
    if (ids.size() > shown)
        text += ", ... (" + std::to_string(ids.size() - shown) + " more)";
    return text;
}

std::string matchText(const CycleLevelReport& c)
{
    if (c.tokensMatchReference)
        return c.generated.size() == 1 ? "yes, the one generated token"
                                       : "yes, all " + std::to_string(c.generated.size()) + " generated tokens";
    std::size_t step = 0;
    while (step < c.generated.size() && step < c.referenceGenerated.size()
        && c.generated[step] == c.referenceGenerated[step])
        ++step;
    return "no: decode step " + std::to_string(step + 1) + " differs (the reference's top two logits "
        + formatFixed(c.gapAtDifference, 4) + " apart)";
}

// "23,744 cycles on a 4 x 4 block of prefill kernels; their closed forms 24,100 (measured / model
// 0.99)", or "... cycles, one position at a time".
std::string prefillText(const CycleLevelReport& c)
{
    const std::string cycles = whole(double(c.prefillCycles)) + " cycles";
    if (c.prefillBlock == 0)
        return c.promptTokens > 1 ? cycles + ", one position at a time through the decode kernels" : cycles;
    const std::string block = std::to_string(c.prefillBlock);
    std::string text = cycles + " on a " + block + " x " + block + " block of prefill kernels";
    if (c.prefillModelCycles > 0.0)
        text += "; their closed forms, one after another, " + whole(c.prefillModelCycles) + " (measured / model "
            + ratioText(double(c.prefillCycles), c.prefillModelCycles) + ")";
    return text;
}

// "3,702" or "3,690 to 3,712": the least and the most of one figure over the blocks.
std::string blockRange(const std::vector<BlockCycles>& blocks, double BlockCycles::*figure)
{
    double least = blocks.front().*figure;
    double most = least;
    for (const BlockCycles& block : blocks) {
        least = std::min(least, block.*figure);
        most = std::max(most, block.*figure);
    }
    return least == most ? whole(least) : whole(least) + " to " + whole(most);
}

// Measured on the fabric against the model-level engine's figures for the same plan.
ReportTable comparisonTable(const RunReport& r, const CycleLevelReport& c)
{
    double measuredSum = 0.0;
    double modelSum = 0.0;
    for (const CycleRegionReport& region : c.regions) {
        measuredSum += double(region.measuredCycles);
        modelSum += region.modelCycles;
    }
    const double modelCyclesPerToken = r.metrics.stepTimeS * c.clockHz;
    std::vector<std::vector<std::string>> rows {
        { "Cycles per decode token", whole(c.cyclesPerToken), whole(modelCyclesPerToken),
            ratioText(c.cyclesPerToken, modelCyclesPerToken) },
        { "Decode tokens/s, one user", rate(c.tokensPerS, "tokens/s"), rate(r.metrics.tokensPerS, "tokens/s"),
            ratioText(c.tokensPerS, r.metrics.tokensPerS) },
        { "Regions' cycles summed (last decode step)", whole(measuredSum), whole(modelSum),
            ratioText(measuredSum, modelSum) },
    };
    if (const std::vector<BlockCycles> blocks = cyclesByBlock(c); !blocks.empty()) {
        double measuredBlocks = 0.0;
        double modelBlocks = 0.0;
        for (const BlockCycles& block : blocks) {
            measuredBlocks += block.measuredCycles;
            modelBlocks += block.modelCycles;
        }
        rows.push_back({ "Cycles of one block, least to most of " + std::to_string(blocks.size()),
            blockRange(blocks, &BlockCycles::measuredCycles), blockRange(blocks, &BlockCycles::modelCycles),
            ratioText(measuredBlocks, modelBlocks) });
    }
    rows.push_back({ "Largest logit error against the reference", significant(c.maxAbsLogitError), "-", "-" });
    rows.push_back({ "Tokens match the reference", matchText(c), "-", "-" });
    return ReportTable { { "Figure", "Cycle level (measured)", "Model level", "Measured / model" }, "lnnn", rows, "" };
}

// `leading` cells, then the figures of `sum`; its share is of `total` measured cycles.
std::vector<std::string> figureRow(std::vector<std::string> leading, const KernelCycles& sum, double total)
{
    leading.insert(leading.end(),
        { whole(sum.measuredCycles), whole(sum.modelCycles), ratioText(sum.measuredCycles, sum.modelCycles),
            percent(total > 0.0 ? sum.measuredCycles / total : 0.0), whole(sum.linkWavelets),
            percent(sum.peCycles > 0.0 ? sum.busyPeCycles / sum.peCycles : 0.0) });
    return leading;
}

KernelCycles sumRegions(const CycleLevelReport& c, std::size_t first, std::size_t count)
{
    KernelCycles sum;
    for (std::size_t i = first; i < first + count && i < c.regions.size(); ++i) {
        const CycleRegionReport& region = c.regions[i];
        const double peCycles = double(region.pes) * double(region.measuredCycles);
        ++sum.regions;
        sum.measuredCycles += double(region.measuredCycles);
        sum.modelCycles += region.modelCycles;
        sum.linkWavelets += double(region.linkWavelets);
        sum.busyPeCycles += region.busyFraction * peCycles;
        sum.peCycles += peCycles;
    }
    return sum;
}

ReportTable kernelTable(const CycleLevelReport& c)
{
    const KernelCycles all = sumRegions(c, 0, c.regions.size());
    std::vector<std::vector<std::string>> rows;
    for (const KernelCycles& kernel : cyclesByKernel(c))
        rows.push_back(figureRow({ kernel.kernel, std::to_string(kernel.regions) }, kernel, all.measuredCycles));
    rows.push_back(figureRow({ "all regions", std::to_string(all.regions) }, all, all.measuredCycles));
    return ReportTable { { "Kernel", "Regions", "Measured cycles", "Model cycles", "Measured / model", "Share of token",
                             "Link wavelets", "PE busy" },
        "lnnnnnnn", rows, "The run measured no regions." };
}

ReportTable regionTable(const CycleLevelReport& c)
{
    const double total = sumRegions(c, 0, c.regions.size()).measuredCycles;
    std::vector<std::vector<std::string>> rows;
    for (const CycleRegionRow& row : cycleRegionRows(c)) {
        const KernelCycles sum = sumRegions(c, row.firstRegion, row.regionCount);
        if (row.blocks == 0) {
            const CycleRegionReport& region = c.regions[row.firstRegion];
            rows.push_back(figureRow({ region.op, region.kernel, whole(double(region.pes)) }, sum, total));
            continue;
        }
        // Narrow cells: the PDF's text columns share what the number columns leave.
        rows.push_back(figureRow(
            { row.firstBlock + " to " + row.lastBlock, std::to_string(row.blocks) + " blocks", "-" }, sum, total));
    }
    return ReportTable { { "Region", "Kernel", "PEs", "Measured cycles", "Model cycles", "Measured / model",
                             "Share of token", "Link wavelets", "PE busy" },
        "llnnnnnnn", rows, "The run measured no regions." };
}

ReportTable runTable(const CycleLevelReport& c)
{
    const std::vector<std::pair<std::string, std::string>> pairs {
        { "Model on system", c.model + " on " + c.system },
        { "Clock", formatSi(c.clockHz, "Hz") },
        { "Prompt", std::to_string(c.promptTokens) + " tokens: " + tokenList(c.prompt) },
        { "Prefill", prefillText(c) },
        { "Time to first token (prefill, then the last prompt token's step)",
            c.ttftCycles == 0 ? "" : whole(double(c.ttftCycles)) + " cycles" },
        { "Decode steps", std::to_string(c.decodeSteps) },
        { "Generated on the fabric", tokenList(c.generated) },
        { "Generated by the reference", tokenList(c.referenceGenerated) },
        { "Colours at the busiest router", std::to_string(c.colorsAtBusiestRouter) },
        { "Peak SRAM per PE", formatBytes(double(c.peakSramBytesPerPe)) },
        { "Host memory of the simulation", formatBytes(double(c.hostBytes)) },
        { "Wall time: build, reference, prefill, one decode step",
            seconds(c.buildS) + ", " + seconds(c.referenceS) + ", " + seconds(c.prefillS) + ", "
                + seconds(c.decodeTokenS) },
    };
    ReportTable table;
    table.align = "ll";
    for (const auto& [key, value] : pairs)
        table.rows.push_back({ key, orDash(value) });
    return table;
}

} // namespace

std::string blockOfRegion(const std::string& op)
{
    for (std::size_t begin = 0; begin < op.size();) {
        const std::size_t end = std::min(op.find('.', begin), op.size());
        const bool numeric = end > begin
            && std::all_of(op.begin() + std::ptrdiff_t(begin), op.begin() + std::ptrdiff_t(end),
                [](unsigned char c) { return std::isdigit(c) != 0; });
        if (numeric)
            return begin > 0 ? op.substr(0, end) : std::string();
        begin = end + 1;
    }
    return {};
}

std::vector<CycleRegionRow> cycleRegionRows(const CycleLevelReport& report)
{
    std::vector<std::string> blocks;
    std::string firstBlock;
    std::string lastBlock;
    for (const CycleRegionReport& region : report.regions) {
        blocks.push_back(blockOfRegion(region.op));
        if (!blocks.back().empty()) {
            firstBlock = firstBlock.empty() ? blocks.back() : firstBlock;
            lastBlock = blocks.back();
        }
    }
    std::vector<CycleRegionRow> rows;
    CycleRegionRow between; // the blocks between the first and the last, being summed while it has blocks
    const auto closeBetween = [&] {
        if (between.blocks > 0)
            rows.push_back(between);
        between = CycleRegionRow {};
    };
    for (std::size_t i = 0; i < report.regions.size(); ++i) {
        const std::string& block = blocks[i];
        if (block.empty() || block == firstBlock || block == lastBlock) {
            closeBetween();
            rows.push_back({ i, 1, "", "", 0 });
            continue;
        }
        if (between.blocks == 0) {
            between.firstRegion = i;
            between.firstBlock = block;
        }
        if (between.blocks == 0 || block != between.lastBlock) {
            ++between.blocks;
            between.lastBlock = block;
        }
        between.regionCount = i - between.firstRegion + 1;
    }
    closeBetween();
    return rows;
}

std::vector<BlockCycles> cyclesByBlock(const CycleLevelReport& report)
{
    std::vector<BlockCycles> blocks;
    for (const CycleRegionReport& region : report.regions) {
        const std::string block = blockOfRegion(region.op);
        if (block.empty())
            continue;
        if (blocks.empty() || blocks.back().block != block)
            blocks.push_back({ block, 0, 0.0, 0.0 });
        ++blocks.back().regions;
        blocks.back().measuredCycles += double(region.measuredCycles);
        blocks.back().modelCycles += region.modelCycles;
    }
    return blocks;
}

std::vector<KernelCycles> cyclesByKernel(const CycleLevelReport& report)
{
    std::map<std::string, KernelCycles> byName;
    for (std::size_t i = 0; i < report.regions.size(); ++i) {
        const KernelCycles one = sumRegions(report, i, 1);
        KernelCycles& sum = byName[report.regions[i].kernel];
        sum.kernel = report.regions[i].kernel;
        sum.regions += one.regions;
        sum.measuredCycles += one.measuredCycles;
        sum.modelCycles += one.modelCycles;
        sum.linkWavelets += one.linkWavelets;
        sum.busyPeCycles += one.busyPeCycles;
        sum.peCycles += one.peCycles;
    }
    std::vector<KernelCycles> kernels;
    for (auto& [name, sum] : byName)
        kernels.push_back(std::move(sum));
    std::stable_sort(kernels.begin(), kernels.end(),
        [](const KernelCycles& a, const KernelCycles& b) { return a.measuredCycles > b.measuredCycles; });
    return kernels;
}

std::vector<ReportSection> cycleLevelSections(const RunReport& report)
{
    if (!report.cycleLevel)
        return {};
    const CycleLevelReport& c = *report.cycleLevel;
    return { tableSection("cycle_level", "Cycle level vs model", comparisonTable(report, c)),
        tableSection("cycle_level_kernels", "Cycle level vs model by kernel", kernelTable(c)),
        tableSection("cycle_level_regions", "Cycle level vs model by region", regionTable(c)),
        tableSection("cycle_level_run", "Cycle-level run", runTable(c)) };
}

} // namespace waferscope::core::report
