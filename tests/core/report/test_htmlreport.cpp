// core/report: the report's SVG charts and its HTML page, checked on a report built by hand, with
// the geometry read back out of the SVG and compared with figures computed here.
#include "testing.h"

#include "core/report/htmlreport.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <regex>
#include <string>
#include <vector>

using namespace waferscope::core;
using namespace waferscope::test;

namespace {

engine::LayerMetrics layer(const std::string& name, int region, double utilization, Bound bound)
{
    engine::LayerMetrics l;
    l.name = name;
    l.kind = engine::LayerKind::Linear;
    l.region = region;
    l.params = 1000;
    l.flops = 2e9;
    l.timeS = 1e-3;
    l.utilization = utilization;
    l.bound = bound;
    return l;
}

report::RegionReport region(const std::string& op, int system, Rect rect)
{
    report::RegionReport r;
    r.op = op;
    r.system = system;
    r.stage = system;
    r.rect = rect;
    r.timeS = 2e-3;
    r.utilization = 0.5;
    r.bound = Bound::Compute;
    return r;
}

report::LaneReport lane(const std::string& name, double busyS, std::vector<double> occupancy)
{
    report::LaneReport l;
    l.lane = engine::LaneKind::CsxCompute;
    l.name = name;
    l.busyS = busyS;
    l.occupancy = std::move(occupancy);
    return l;
}

sweeps::ScalingPoint point(int numCsx, double samplesPerS, double efficiency, Bound bottleneck)
{
    sweeps::ScalingPoint p;
    p.numCsx = numCsx;
    p.samplesPerS = samplesPerS;
    p.speedup = efficiency * numCsx;
    p.efficiency = efficiency;
    p.bottleneck = bottleneck;
    return p;
}

const std::string kOddName = "layers.0.attn<&\"q";

// Four layers with distinct bounds, two lanes, two regions on two wafers, a sweep over 1, 2 and 8.
report::RunReport sampleReport()
{
    report::RunReport r;
    r.manifest.version = "0.9.0";
    r.manifest.createdUtc = "2026-11-21T10:00:00Z";
    r.manifest.inputPath = "samples/tiny.yaml";
    r.manifest.inputSha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    r.manifest.model = "tiny<&\"gpt";
    r.manifest.system = "cs2";
    r.manifest.numCsx = 2;
    r.manifest.mode = RunMode::Train;
    r.manifest.executionRequested = ExecutionChoice::Auto;
    r.manifest.calibrationVersion = "cal-7";
    r.plan.execution = ExecutionMode::Pipelined;
    r.plan.fabricWidth = 750;
    r.plan.fabricHeight = 994;
    r.plan.usable = { 4, 4, 742, 986 };
    r.plan.notes = { "plan note" };
    r.metrics.mode = RunMode::Train;
    r.metrics.execution = ExecutionMode::Pipelined;
    r.metrics.system = "cs2";
    r.metrics.stepTimeS = 0.0125;
    r.metrics.samplesPerS = 5120;
    r.metrics.bottleneck = Bound::Compute;
    r.metrics.notes = { "metric note; see http://example.com//x, url(a) src=b href=c" };
    r.metrics.layers = { layer("embed", 0, 0.25, Bound::Pipeline), layer(kOddName, 0, 0.5, Bound::Compute),
        layer("layers.0.ffn", 1, 0.75, Bound::Fabric), layer("head", 1, 1.0, Bound::Io) };
    r.regions = { region(kOddName, 0, { 10, 20, 300, 400 }), region("layers.0.ffn", 1, { 100, 50, 200, 100 }) };
    r.systems.resize(2);
    r.systems[1].index = 1;
    r.systems[1].sameScheduleAs0 = true;
    std::vector<double> halfBusy(report::kOccupancyBins, 0.0);
    std::fill(halfBusy.begin(), halfBusy.begin() + report::kOccupancyBins / 2, 1.0);
    r.lanes = { lane("CS-X 0 wafer", 0.006, halfBusy), lane("MemoryX", 0.003, std::vector<double>(120, 0.5)) };
    r.spanS = 0.012;
    r.steps = { { 1, 0.0, 0.006, 0.006, 4000.0, 0.0, 0.4, { 0.5, 0.1, 0.2, 0.3, 0.0 } },
        { 2, 0.006, 0.012, 0.006, 4000.0, 0.0, 0.4, { 0.5, 0.1, 0.2, 0.3, 0.0 } } };
    sweeps::ScalingSweep sweep;
    sweep.baselineSamplesPerS = 1000;
    sweep.points = { point(1, 1000, 1.0, Bound::Compute), point(2, 1900, 0.95, Bound::Compute),
        point(8, 6400, 0.8, Bound::MemoryX) };
    r.scaling = sweep;
    return r;
}

// Opening tags `<tag ...>` that carry class="cls", in document order. Attribute values are
// escaped, so the first '>' ends the tag.
std::vector<std::string> tagsWithClass(const std::string& svg, const std::string& tag, const std::string& cls)
{
    std::vector<std::string> tags;
    const std::string open = "<" + tag + " ";
    for (std::size_t at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
        const std::string text = svg.substr(at, svg.find('>', at) - at + 1);
        if (text.find("class=\"" + cls + "\"") != std::string::npos)
            tags.push_back(text);
    }
    return tags;
}

std::string attributeText(const std::string& tag, const std::string& name)
{
    const std::string key = " " + name + "=\"";
    const std::size_t at = tag.find(key);
    if (at == std::string::npos)
        return "";
    const std::size_t from = at + key.size();
    return tag.substr(from, tag.find('"', from) - from);
}

double attribute(const std::string& tag, const std::string& name)
{
    const std::string text = attributeText(tag, name);
    return text.empty() ? std::nan("") : std::stod(text);
}

const report::ReportChart& chart(const std::vector<report::ReportChart>& charts, const std::string& id)
{
    const auto found = std::find_if(charts.begin(), charts.end(), [&](const auto& c) { return c.id == id; });
    WS_REQUIRE(found != charts.end());
    return *found;
}

// viewBox="0 0 W H" -> { W, H }
std::pair<double, double> viewBox(const std::string& svg)
{
    std::smatch match;
    const std::regex pattern("viewBox=\"0 0 ([0-9.]+) ([0-9.]+)\"");
    WS_REQUIRE(std::regex_search(svg, match, pattern));
    return { std::stod(match[1]), std::stod(match[2]) };
}

std::size_t count(const std::string& text, const std::string& needle)
{
    std::size_t n = 0;
    for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
        ++n;
    return n;
}

// "nan" or "inf" as a word of its own ("-nan", ">inf<"), not inside "inference".
bool containsWord(const std::string& text, const std::string& word)
{
    std::string lower = text;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    const auto isWordChar = [&](std::size_t i) { return i < lower.size() && std::isalnum((unsigned char)lower[i]); };
    for (std::size_t at = lower.find(word); at != std::string::npos; at = lower.find(word, at + 1))
        if ((at == 0 || !isWordChar(at - 1)) && !isWordChar(at + word.size()))
            return true;
    return false;
}

void checkNoUrl(const std::string& text)
{
    for (const char* forbidden : { "http:", "https:", "src=", "href=", "url(", "//", "xmlns" })
        WS_CHECK(text.find(forbidden) == std::string::npos);
}

} // namespace

WS_TEST(chartsComeInOrderAsStandaloneSvg)
{
    const auto charts = report::reportCharts(sampleReport());
    WS_REQUIRE(charts.size() == 4);
    const char* ids[] = { "layer_utilization", "timeline", "scaling", "placement" };
    const std::regex threeDecimals("[0-9]\\.[0-9]{3}");
    for (std::size_t i = 0; i < charts.size(); ++i) {
        const std::string& svg = charts[i].svg;
        WS_CHECK_EQ(charts[i].id, std::string(ids[i]));
        WS_CHECK(!charts[i].title.empty() && !charts[i].caption.empty());
        WS_CHECK(svg.rfind("<svg viewBox=\"0 0 ", 0) == 0);
        WS_CHECK(svg.size() > 6 && svg.substr(svg.size() - 6) == "</svg>");
        WS_CHECK_CONTAINS(svg, "font-family=\"DejaVu Sans, sans-serif\"");
        const auto [width, height] = viewBox(svg);
        const std::string open = svg.substr(0, svg.find('>') + 1);
        WS_CHECK_EQ(attribute(open, "width"), width);
        WS_CHECK_EQ(attribute(open, "height"), height);
        checkNoUrl(svg);
        WS_CHECK(!std::regex_search(svg, threeDecimals));
        WS_CHECK(!containsWord(svg, "nan") && !containsWord(svg, "inf"));
    }
}

WS_TEST(layerBarsFollowUtilizationOnTheAxis)
{
    const report::RunReport r = sampleReport();
    const std::string svg = chart(report::reportCharts(r), "layer_utilization").svg;
    const auto bars = tagsWithClass(svg, "rect", "bar");
    const auto plot = tagsWithClass(svg, "rect", "plot");
    WS_REQUIRE(bars.size() == r.metrics.layers.size());
    WS_REQUIRE(plot.size() == 1);
    const double axis = attribute(plot[0], "width");
    WS_CHECK(axis > 100);
    for (std::size_t i = 0; i < bars.size(); ++i) {
        WS_CHECK_NEAR(attribute(bars[i], "width"), r.metrics.layers[i].utilization * axis, 1e-3);
        WS_CHECK_EQ(attribute(bars[i], "x"), attribute(plot[0], "x"));
        if (i > 0)
            WS_CHECK(attribute(bars[i], "y") > attribute(bars[i - 1], "y"));
    }
    WS_CHECK_NEAR(attribute(bars[1], "width"), axis / 2, 1e-3); // utilization 0.5
    WS_CHECK(attributeText(bars[1], "fill") != attributeText(bars[2], "fill")); // compute vs fabric
    WS_CHECK_CONTAINS(svg, "<title>layers.0.attn&lt;&amp;&quot;q: 50.0 % (compute), 1.00 ms</title>");
    for (const char* present : { ">compute<", ">fabric<", ">io<", ">pipeline<" })
        WS_CHECK_CONTAINS(svg, present);
    for (const char* absent : { ">swarmx<", ">memoryx<", ">latency<" })
        WS_CHECK(svg.find(absent) == std::string::npos);
}

WS_TEST(everyBoundOfTheNameTableHasItsOwnColourAndLegendEntry)
{
    // One layer per bound the engine can report (the name table's, "pipeline" included) and one
    // with none: each bound gets a colour of its own, none the grey of "unknown", and a legend entry.
    report::RunReport r = sampleReport();
    r.metrics.layers.clear();
    for (const EnumName<Bound>& entry : nameTable<Bound>())
        r.metrics.layers.push_back(layer(entry.name[0] ? entry.name : "none", 0, 0.5, entry.value));
    WS_REQUIRE(r.metrics.layers.front().bound == Bound::None);
    const std::string svg = chart(report::reportCharts(r), "layer_utilization").svg;
    const auto bars = tagsWithClass(svg, "rect", "bar");
    WS_REQUIRE(bars.size() == r.metrics.layers.size());
    const std::string unknownColour = attributeText(bars[0], "fill");
    WS_CHECK_CONTAINS(svg, ">unknown<");
    std::vector<std::string> colours;
    for (std::size_t i = 1; i < bars.size(); ++i) {
        const std::string name = toString(r.metrics.layers[i].bound);
        const std::string colour = attributeText(bars[i], "fill");
        WS_CHECK_CONTAINS(svg, ">" + name + "<");
        WS_CHECK_CONTAINS(svg, "<rect fill=\"" + colour + "\""); // the legend's swatch
        WS_CHECK(colour != unknownColour);
        WS_CHECK(std::find(colours.begin(), colours.end(), colour) == colours.end());
        colours.push_back(colour);
    }
    WS_CHECK_EQ(colours.size(), nameTable<Bound>().size() - 1);
}

WS_TEST(manyLayersGetThinBarsAndSpacedLabels)
{
    report::RunReport r = sampleReport();
    r.metrics.layers.clear();
    for (int i = 0; i < 400; ++i)
        r.metrics.layers.push_back(layer("layers." + std::to_string(i), 0, (i % 10) / 10.0, Bound::Compute));
    const std::string svg = chart(report::reportCharts(r), "layer_utilization").svg;
    const auto bars = tagsWithClass(svg, "rect", "bar");
    WS_REQUIRE(bars.size() == 400);
    WS_CHECK(attribute(bars[0], "height") <= 3);
    WS_CHECK(viewBox(svg).second >= 400 * 2.0);
    std::vector<double> labelYs;
    const std::string labelAttrs = "text-anchor=\"end\" font-size=\"10\"";
    for (std::size_t at = svg.find(labelAttrs); at != std::string::npos; at = svg.find(labelAttrs, at + 1))
        labelYs.push_back(attribute(svg.substr(svg.rfind("<text", at), at - svg.rfind("<text", at)), "y"));
    WS_CHECK(labelYs.size() > 10 && labelYs.size() < 400);
    for (std::size_t i = 1; i < labelYs.size(); ++i)
        WS_CHECK(labelYs[i] - labelYs[i - 1] >= 10);
}

WS_TEST(timelineRowsShowOccupancyAndBusyShare)
{
    const report::RunReport r = sampleReport();
    const std::string svg = chart(report::reportCharts(r), "timeline").svg;
    const auto strips = tagsWithClass(svg, "rect", "strip");
    WS_REQUIRE(strips.size() == r.lanes.size());
    const auto cells = tagsWithClass(svg, "rect", "cell");
    WS_REQUIRE(cells.size() == 2); // equal neighbouring bins are drawn as one cell
    const double stripWidth = attribute(strips[0], "width");
    // Lane 0: busy over the first half, at full intensity.
    WS_CHECK_EQ(attribute(cells[0], "x"), attribute(strips[0], "x"));
    WS_CHECK_NEAR(attribute(cells[0], "width"), stripWidth / 2, 1e-3);
    WS_CHECK_EQ(attributeText(cells[0], "fill"), std::string("#08306b"));
    // Lane 1: half busy everywhere, a mid tone.
    WS_CHECK_NEAR(attribute(cells[1], "width"), stripWidth, 1e-3);
    WS_CHECK_EQ(attribute(cells[1], "y"), attribute(strips[1], "y"));
    const std::string mid = attributeText(cells[1], "fill");
    WS_CHECK(mid != "#ffffff" && mid != "#08306b");
    WS_CHECK_CONTAINS(svg, ">50.0 %<"); // 6 ms of 12
    WS_CHECK_CONTAINS(svg, ">25.0 %<");
    WS_CHECK_CONTAINS(svg, "Time (ms)");
    WS_CHECK_CONTAINS(svg, ">12<"); // the last tick, at the span
    WS_CHECK_CONTAINS(svg, ">CS-X 0 wafer<");
}

WS_TEST(scalingPointsUseLog2Spacing)
{
    const std::string svg = chart(report::reportCharts(sampleReport()), "scaling").svg;
    const auto points = tagsWithClass(svg, "circle", "point");
    WS_REQUIRE(points.size() == 3); // 1, 2 and 8 systems
    const double x1 = attribute(points[0], "cx"), x2 = attribute(points[1], "cx"), x8 = attribute(points[2], "cx");
    WS_CHECK(x1 < x2 && x2 < x8);
    WS_CHECK_NEAR(x8 - x2, 2 * (x2 - x1), 1e-3); // log2(8/2) = 2 log2(2/1)
    WS_CHECK(attribute(points[2], "cy") < attribute(points[1], "cy")); // more samples/s is higher up
    WS_CHECK(attribute(points[1], "cy") < attribute(points[0], "cy"));
    // The ideal line starts at the one-system point (baseline = its throughput) and is dashed.
    const auto ideal = tagsWithClass(svg, "polyline", "ideal");
    WS_REQUIRE(ideal.size() == 1);
    WS_CHECK_CONTAINS(ideal[0], "stroke-dasharray");
    const std::string first = attributeText(ideal[0], "points").substr(0, attributeText(ideal[0], "points").find(' '));
    WS_CHECK_NEAR(std::stod(first.substr(0, first.find(','))), x1, 1e-3);
    WS_CHECK_NEAR(std::stod(first.substr(first.find(',') + 1)), attribute(points[0], "cy"), 1e-3);
    WS_CHECK_CONTAINS(svg, "bottleneck memoryx</title>");
    WS_CHECK_CONTAINS(svg, ">95 %<");
    WS_CHECK_CONTAINS(svg, ">80 %<");
    WS_CHECK_CONTAINS(svg, "log2");
}

WS_TEST(placementScalesRegionsWithTheWafer)
{
    const report::RunReport r = sampleReport();
    const std::string svg = chart(report::reportCharts(r), "placement").svg;
    const auto wafers = tagsWithClass(svg, "rect", "wafer");
    const auto regions = tagsWithClass(svg, "rect", "region");
    const auto usable = tagsWithClass(svg, "rect", "usable");
    WS_REQUIRE(wafers.size() == 2 && regions.size() == 2 && usable.size() == 2);
    WS_CHECK_CONTAINS(svg, ">wafer 0<");
    WS_CHECK_CONTAINS(svg, ">wafer 1<");
    const double scale = attribute(wafers[0], "width") / r.plan.fabricWidth;
    const double tolerance = 0.011; // two decimals on both sides
    WS_CHECK(std::fabs(attribute(wafers[0], "height") - r.plan.fabricHeight * scale) <= tolerance * 2);
    WS_CHECK(attribute(wafers[1], "x") > attribute(wafers[0], "x") + attribute(wafers[0], "width"));
    WS_CHECK(attribute(wafers[1], "x") + attribute(wafers[1], "width") <= viewBox(svg).first);
    for (std::size_t i = 0; i < regions.size(); ++i) {
        const Rect& rect = r.regions[i].rect;
        const std::string& wafer = wafers[std::size_t(r.regions[i].system)];
        WS_CHECK(std::fabs(attribute(regions[i], "width") - rect.w * scale) <= tolerance * 2);
        WS_CHECK(std::fabs(attribute(regions[i], "height") - rect.h * scale) <= tolerance * 2);
        WS_CHECK(std::fabs(attribute(regions[i], "x") - (attribute(wafer, "x") + rect.x * scale)) <= tolerance * 2);
        WS_CHECK(std::fabs(attribute(regions[i], "y") - (attribute(wafer, "y") + rect.y * scale)) <= tolerance * 2);
    }
    WS_CHECK(std::fabs(attribute(usable[0], "x") - (attribute(wafers[0], "x") + 4 * scale)) <= tolerance * 2);
    WS_CHECK_CONTAINS(svg, "<title>layers.0.attn&lt;&amp;&quot;q: 120,000 PEs, 2.00 ms");
}

WS_TEST(weightStreamingRegionsOverlapOnOneWafer)
{
    report::RunReport r = sampleReport();
    r.regions = { region("a", 0, r.plan.usable), region("b", 0, r.plan.usable), region("c", 0, r.plan.usable) };
    const std::string svg = chart(report::reportCharts(r), "placement").svg;
    const auto wafers = tagsWithClass(svg, "rect", "wafer");
    const auto regions = tagsWithClass(svg, "rect", "region");
    WS_REQUIRE(wafers.size() == 1 && regions.size() == 3);
    WS_CHECK(attribute(wafers[0], "width") <= 640 && attribute(wafers[0], "height") <= 720);
    const double ratio = attribute(wafers[0], "width") / attribute(wafers[0], "height");
    WS_CHECK_NEAR(ratio, double(r.plan.fabricWidth) / r.plan.fabricHeight, 1e-3);
    WS_CHECK_EQ(attributeText(regions[0], "width"), attributeText(regions[2], "width"));
    WS_CHECK(attributeText(regions[0], "fill") != attributeText(regions[1], "fill"));
    WS_CHECK_CONTAINS(regions[0], "fill-opacity");
}

WS_TEST(htmlIsSelfContainedAndEscaped)
{
    const report::RunReport r = sampleReport();
    const std::string html = report::reportHtml(r);
    WS_CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
    WS_CHECK_CONTAINS(html, "<meta charset=\"utf-8\">");
    WS_CHECK_CONTAINS(html, "<style>");
    WS_CHECK_CONTAINS(html, "@media print");
    WS_CHECK_CONTAINS(html, "page-break-inside: avoid");
    for (const char* forbidden : { "http:", "https:", "src=", "href=", "url(", "//", "<script", "<link" })
        WS_CHECK(html.find(forbidden) == std::string::npos);
    WS_CHECK_CONTAINS(html, "metric note; see http&#58;");
    WS_CHECK_CONTAINS(html, "plan note");
    WS_CHECK_CONTAINS(html, "WaferScope report: tiny&lt;&amp;&quot;gpt on 2 x cs2");
    WS_CHECK(html.find(kOddName) == std::string::npos);
    const auto charts = report::reportCharts(r);
    WS_CHECK_EQ(count(html, "<svg"), charts.size());
    for (const report::ReportChart& c : charts) {
        WS_CHECK_CONTAINS(html, "<h2>" + c.title + "</h2>");
        WS_CHECK_CONTAINS(html, c.svg);
    }
    for (const char* field : { "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "cal-7",
             "samples/tiny.yaml", "Execution resolved", "Samples/s", "MFU", "Bottleneck", "same as system 0" })
        WS_CHECK_CONTAINS(html, field);
    WS_CHECK(html.find("Time to first token") == std::string::npos);
    // One row per layer, region and system, besides the key-value tables.
    WS_CHECK_CONTAINS(html, "<td>layers.0.ffn</td><td>linear</td>");
    WS_CHECK_CONTAINS(html, "<td>(100, 50) 200 x 100</td>");
}

// One document behind both renderings: its sections in order, its rows from the report, and the
// HTML page showing every one of them (the PDF draws the same document in ui/).
WS_TEST(theDocumentHoldsWhatBothRenderingsShow)
{
    report::RunReport r = sampleReport();
    r.metrics.checkpointStrategy = CheckpointStrategy::EveryK;
    r.metrics.checkpointEvery = 2;
    r.metrics.recomputeFlopsPerStep = 3e15;
    r.metrics.checkpointBytesPerStep = 0.0;
    const report::ReportDocument document = report::reportDocument(r);
    std::vector<std::string> ids;
    for (const report::ReportSection& section : document.sections)
        ids.push_back(section.id);
    WS_CHECK(ids
        == std::vector<std::string>({ "manifest", "key_figures", "notes", "layer_utilization", "timeline", "scaling",
            "placement", "steps", "regions", "systems", "layers" }));
    const auto section = [&](const std::string& id) -> const report::ReportSection& {
        return *std::find_if(document.sections.begin(), document.sections.end(),
            [&](const report::ReportSection& candidate) { return candidate.id == id; });
    };
    const report::ReportTable& figures = section("key_figures").table;
    WS_CHECK(figures.headers.empty()); // a key-value table
    WS_CHECK(std::find(figures.rows.begin(), figures.rows.end(),
                 std::vector<std::string>({ "Checkpoints", "every_k (every 2 blocks)" }))
        != figures.rows.end());
    WS_CHECK(std::find(figures.rows.begin(), figures.rows.end(),
                 std::vector<std::string>({ "Recomputed per step", "3.00 PFLOP" }))
        != figures.rows.end());
    WS_CHECK(section("notes").items == std::vector<std::string>({ r.metrics.notes[0], r.plan.notes[0] }));
    WS_CHECK_EQ(section("regions").table.rows.size(), r.regions.size());
    WS_REQUIRE(!r.steps.empty());
    WS_CHECK_EQ(section("steps").table.rows.size(), r.steps.size());
    WS_CHECK_EQ(section("steps").table.headers[3], std::string("Samples/s"));
    WS_CHECK_EQ(section("systems").table.rows.size(), r.systems.size());
    WS_CHECK_EQ(section("layers").table.rows.size(), r.metrics.layers.size());
    WS_CHECK_EQ(section("layers").table.rows[0].back(), std::string(toString(Bound::Pipeline)));
    WS_CHECK_EQ(document.title, std::string("WaferScope report: tiny<&\"gpt on 2 x cs2"));
    WS_CHECK_EQ(document.pageFooter, document.title + ", created 2026-11-21T10:00:00Z");

    const std::string html = report::reportHtml(r);
    WS_CHECK_EQ(html, report::reportHtml(document));
    for (const report::ReportSection& shown : document.sections) {
        WS_CHECK_CONTAINS(html, "<h2>" + shown.title + "</h2>");
        for (const std::vector<std::string>& row : shown.table.rows)
            for (const std::string& cell : row)
                if (cell.find_first_of("<&\"'/:") == std::string::npos)
                    WS_CHECK_CONTAINS(html, ">" + cell + "</t");
    }
    WS_CHECK_CONTAINS(html, "<p class=\"meta\">Written by WaferScope 0.9.0.</p>");
}

WS_TEST(inferenceHtmlShowsDecodeFigures)
{
    report::RunReport r = sampleReport();
    r.metrics.mode = RunMode::Inference;
    r.metrics.timeToFirstTokenS = 0.25;
    r.metrics.aggregateTokensPerS = 12000;
    const std::string html = report::reportHtml(r);
    WS_CHECK_CONTAINS(html, "Time to first token</th><td>250 ms");
    WS_CHECK_CONTAINS(html, "Aggregate tokens/s</th><td>12.0 k tokens/s");
    WS_CHECK(html.find("<th>Samples/s</th>") == std::string::npos);
}

WS_TEST(noScalingChartWithoutSweep)
{
    report::RunReport r = sampleReport();
    r.scaling.reset();
    auto charts = report::reportCharts(r);
    WS_CHECK_EQ(charts.size(), std::size_t(3));
    for (const report::ReportChart& c : charts)
        WS_CHECK(c.id != "scaling");
    r.scaling = sweeps::ScalingSweep {};
    WS_CHECK_EQ(report::reportCharts(r).size(), std::size_t(3));
    WS_CHECK_EQ(count(report::reportHtml(r), "<svg"), std::size_t(3));
}

WS_TEST(emptyAndNonFiniteReportsDrawWithoutNanOrInf)
{
    const report::RunReport empty {}; // no layers, no lanes, zero span, no fabric
    const auto charts = report::reportCharts(empty);
    WS_REQUIRE(charts.size() == 3);
    for (const report::ReportChart& c : charts) {
        viewBox(c.svg);
        WS_CHECK(!containsWord(c.svg, "nan") && !containsWord(c.svg, "inf"));
    }
    const std::string html = report::reportHtml(empty);
    WS_CHECK(!containsWord(html, "nan") && !containsWord(html, "inf"));

    report::RunReport broken = sampleReport();
    const double nan = std::nan("");
    const double inf = std::numeric_limits<double>::infinity();
    broken.metrics.layers[0].utilization = nan;
    broken.metrics.layers[1].timeS = inf;
    broken.metrics.mfu = nan;
    broken.metrics.stepTimeS = inf;
    broken.lanes[0].occupancy[3] = nan;
    broken.lanes[1].busyS = inf;
    broken.regions[0].timeS = nan;
    broken.scaling->baselineSamplesPerS = inf;
    broken.scaling->points[1].samplesPerS = nan;
    for (const report::ReportChart& c : report::reportCharts(broken))
        WS_CHECK(!containsWord(c.svg, "nan") && !containsWord(c.svg, "inf"));
    const std::string brokenHtml = report::reportHtml(broken);
    WS_CHECK(!containsWord(brokenHtml, "nan") && !containsWord(brokenHtml, "inf"));
    broken.spanS = nan;
    WS_CHECK_CONTAINS(chart(report::reportCharts(broken), "timeline").svg, "zero span");
}
