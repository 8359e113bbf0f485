// The report's charts: plain SVG text built from the RunReport alone, with no external reference
// of any kind, so report.html opens offline and the GUI's QSvgRenderer draws the very same SVG into
// the PDF.
#include "core/report/reportcharts.h"

#include "core/common/units.h"
#include "core/report/reportformat.h"
#include "core/report/svgparts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace waferscope::core::report {

namespace {

using namespace cells;
using namespace svg;

// Rows shrink as their number grows so hundreds of layers or lanes still fit a printable height;
// names are then written on every Nth row only (kLabelPitch apart), so they never overlap.
constexpr double kLabelPitch = 11;
double rowPitch(std::size_t rows, double budget, double maxPitch)
{
    return std::clamp(budget / double(std::max<std::size_t>(rows, 1)), 2.0, maxPitch);
}

// The layer and timeline charts share one frame: names at the left, a 480 px plot, one row each.
constexpr double kRowsWidth = 740, kRowsLeft = 200, kRowsPlot = 480, kRowsTop = 40;

// Every bound in the legend's order; a layer without one (Bound::None) is drawn grey, "unknown".
constexpr std::pair<Bound, const char*> kBoundColours[] = { { Bound::Compute, "#2b6cb0" }, { Bound::Fabric, "#38a169" },
    { Bound::Latency, "#805ad5" }, { Bound::Io, "#dd6b20" }, { Bound::SwarmX, "#b7791f" },
    { Bound::MemoryX, "#c53030" }, { Bound::Pipeline, "#d53f8c" } };
constexpr const char* kUnknownBoundColour = "#a0aec0";

std::string boundLabel(Bound bound)
{
    return bound == Bound::None ? "unknown" : toString(bound);
}

std::string boundColour(Bound bound)
{
    for (const auto& [known, colour] : kBoundColours)
        if (known == bound)
            return colour;
    return kUnknownBoundColour;
}

// The bounds of these layers in the table's order, then "unknown" when a layer has none.
Pairs boundLegend(const std::vector<engine::LayerMetrics>& layers)
{
    std::set<Bound> present;
    for (const engine::LayerMetrics& layer : layers)
        present.insert(layer.bound);
    Pairs entries;
    for (const auto& [bound, colour] : kBoundColours)
        if (present.count(bound))
            entries.emplace_back(boundLabel(bound), colour);
    if (present.count(Bound::None))
        entries.emplace_back(boundLabel(Bound::None), kUnknownBoundColour);
    return entries;
}

// From 0 to `extent` (in tick units) along the plot, gridlines across its rows.
std::string rowsAxis(double top, double plotHeight, double extent, double step, const std::string& title)
{
    const double bottom = top + plotHeight;
    std::string svg;
    for (int k = 0; k * step <= extent * (1 + 1e-9); ++k) {
        const double x = kRowsLeft + kRowsPlot * (k * step) / extent;
        svg += line(x, top, x, bottom, stroke(kGridColour));
        svg += line(x, bottom, x, bottom + 4, stroke(kAxisColour));
        svg += text(x, bottom + 16, tickLabel(k * step, step), "text-anchor=\"middle\"");
    }
    return svg + text(kRowsLeft + kRowsPlot / 2, bottom + 34, title, "text-anchor=\"middle\"");
}

std::string layerBar(const engine::LayerMetrics& layer, double y, double pitch)
{
    const double thickness = pitch >= 6 ? pitch - 3 : std::max(pitch - 0.5, 1.0);
    const double share = clamp01(layer.utilization);
    const std::string title = layer.name + ": " + formatFixed(share * 100.0, 1) + " % (" + boundLabel(layer.bound)
        + "), " + seconds(layer.timeS);
    return rect(kRowsLeft, y + (pitch - thickness) / 2, share * kRowsPlot, thickness,
        "class=\"bar\" fill=\"" + boundColour(layer.bound) + "\"", title);
}

std::string layerUtilizationSvg(const std::vector<engine::LayerMetrics>& layers)
{
    if (layers.empty())
        return messageSvg("The run has no layers: there is nothing to chart.");
    const double pitch = rowPitch(layers.size(), 600, 16);
    const std::size_t every = std::size_t(std::ceil(kLabelPitch / pitch));
    const double plotHeight = pitch * double(layers.size());
    std::string svg = svgOpen(kRowsWidth, kRowsTop + plotHeight + 46);
    svg += legend(boundLegend(layers), kRowsLeft, 18);
    svg += text(kRowsLeft - 8, kRowsTop - 6, "Layer", "text-anchor=\"end\" font-weight=\"bold\"");
    svg += rowsAxis(kRowsTop, plotHeight, 100, 20, "Utilization (% of peak while the layer runs)");
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const double y = kRowsTop + pitch * double(i);
        svg += layerBar(layers[i], y, pitch);
        if (i % every == 0)
            svg += text(kRowsLeft - 8, y + pitch / 2 + 3.5, shortened(layers[i].name, 34),
                "text-anchor=\"end\" font-size=\"10\"");
    }
    svg += rect(kRowsLeft, kRowsTop, kRowsPlot, plotHeight, "class=\"plot\" fill=\"none\" " + stroke(kAxisColour));
    return svg + "</svg>";
}

constexpr int kOccupancyLevels = 64;

// White to dark blue: the value is carried by lightness alone, so it survives grey printing.
std::string occupancyColour(double share)
{
    const auto channel = [t = clamp01(share)](int dark) { return int(std::lround(255.0 + (dark - 255.0) * t)); };
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", channel(8), channel(48), channel(107));
    return buffer;
}

// Neighbouring bins of the same level (1/64 steps, finer than the eye sees) are merged into one
// cell, which keeps a report with hundreds of region lanes small.
std::string laneStrip(const LaneReport& lane, double y, double height, const std::string& title)
{
    std::string svg = "<g><title>" + escape(title) + "</title>"
        + rect(kRowsLeft, y, kRowsPlot, height, "class=\"strip\" fill=\"#ffffff\" " + stroke("#cbd5e0", 0.5));
    const auto occupancyLevel = [](double share) { return int(std::lround(clamp01(share) * kOccupancyLevels)); };
    const std::size_t bins = lane.occupancy.size();
    const double cell = bins > 0 ? kRowsPlot / double(bins) : 0.0;
    for (std::size_t i = 0; i < bins;) {
        const int level = occupancyLevel(lane.occupancy[i]);
        std::size_t j = i + 1;
        while (j < bins && occupancyLevel(lane.occupancy[j]) == level)
            ++j;
        if (level > 0)
            svg += rect(kRowsLeft + cell * double(i), y, cell * double(j - i), height,
                "class=\"cell\" fill=\"" + occupancyColour(double(level) / kOccupancyLevels) + "\"");
        i = j;
    }
    return svg + "</g>";
}

std::string occupancyLegend()
{
    std::string svg = text(kRowsLeft, 18, "Busy share of each time slice:") + text(kRowsLeft + 200, 18, "0 %");
    double x = kRowsLeft + 226;
    for (int i = 0; i <= 4; ++i, x += 16)
        svg += rect(x, 9, 14, 10, "fill=\"" + occupancyColour(i / 4.0) + "\" " + stroke("#cbd5e0", 0.5));
    return svg + text(x + 4, 18, "100 %");
}

std::string timelineSvg(const std::vector<LaneReport>& lanes, double span)
{
    if (lanes.empty())
        return messageSvg("The run has no timeline lanes: there is nothing to chart.");
    if (!(span > 0) || !std::isfinite(span))
        return messageSvg("The run's timeline has a zero span: there is nothing to chart.");
    const double pitch = rowPitch(lanes.size(), 540, 18);
    const double height = pitch >= 8 ? pitch - 4 : std::max(pitch - 0.5, 1.0);
    const std::size_t every = std::size_t(std::ceil(kLabelPitch / pitch));
    const double plotHeight = pitch * double(lanes.size());
    std::string svg = svgOpen(kRowsWidth, kRowsTop + plotHeight + 46) + occupancyLegend();
    const double extent = span < 1 ? span * 1e3 : span;
    svg += rowsAxis(kRowsTop, plotHeight, extent, niceStep(extent, 6), span < 1 ? "Time (ms)" : "Time (s)");
    svg += text(kRowsLeft + kRowsPlot + 8, kRowsTop - 6, "Busy", "font-weight=\"bold\"");
    for (std::size_t i = 0; i < lanes.size(); ++i) {
        const LaneReport& lane = lanes[i];
        const double y = kRowsTop + pitch * double(i);
        const double share = clamp01(lane.busyS / span);
        svg += laneStrip(lane, y + (pitch - height) / 2, height,
            lane.name + ": busy " + seconds(lane.busyS) + ", " + percent(share) + " of the run");
        if (i % every != 0)
            continue;
        const double baseline = y + pitch / 2 + 3.5;
        svg += text(kRowsLeft - 8, baseline, shortened(lane.name, 30), "text-anchor=\"end\" font-size=\"10\"");
        svg += text(kRowsLeft + kRowsPlot + 8, baseline, percent(share), "font-size=\"10\"");
    }
    return svg + "</svg>";
}

constexpr double kScaleWidth = 640, kScaleHeight = 380, kScaleLeft = 80, kScaleTop = 40;
constexpr double kScalePlotW = 480, kScalePlotH = 276;

struct ScaleFrame {
    double lo = 0; // log2 of the smallest count
    double hi = 1;
    double top = 1; // samples/s at the top of the y axis
    double x(double n) const { return kScaleLeft + kScalePlotW * (std::log2(n) - lo) / (hi - lo); }
    double y(double v) const { return kScaleTop + kScalePlotH * (1.0 - finiteOr(v) / top); }
};

ScaleFrame scaleFrame(const std::vector<sweeps::ScalingPoint>& points, double baseline)
{
    ScaleFrame frame;
    frame.lo = std::log2(double(points.front().numCsx));
    frame.hi = std::log2(double(points.back().numCsx));
    const double pad = frame.hi - frame.lo < 1e-9 ? 0.5 : 0.0; // one count: centred
    frame.lo -= pad;
    frame.hi += pad;
    double highest = baseline * points.back().numCsx;
    for (const sweeps::ScalingPoint& point : points)
        highest = std::max(highest, finiteOr(point.samplesPerS));
    highest = highest > 0 ? highest : 1;
    const double step = niceStep(highest, 5);
    frame.top = std::ceil(highest / step * (1 - 1e-9)) * step;
    return frame;
}

std::string scaleAxes(const ScaleFrame& frame, const std::vector<sweeps::ScalingPoint>& points)
{
    const double bottom = kScaleTop + kScalePlotH;
    std::string svg;
    const double step = niceStep(frame.top, 5);
    for (int k = 0; k * step <= frame.top * (1 + 1e-9); ++k) {
        const double y = frame.y(k * step);
        svg += line(kScaleLeft, y, kScaleLeft + kScalePlotW, y, stroke(kGridColour));
        svg += text(kScaleLeft - 6, y + 4, formatCount(k * step), "text-anchor=\"end\"");
    }
    double lastLabel = -1e9;
    for (const sweeps::ScalingPoint& point : points) {
        const double x = frame.x(point.numCsx);
        svg += line(x, bottom, x, bottom + 4, stroke(kAxisColour));
        if (x - lastLabel >= 24) {
            svg += text(x, bottom + 16, std::to_string(point.numCsx), "text-anchor=\"middle\"");
            lastLabel = x;
        }
    }
    svg += rect(kScaleLeft, kScaleTop, kScalePlotW, kScalePlotH, "class=\"plot\" fill=\"none\" " + stroke(kAxisColour));
    svg += text(kScaleLeft + kScalePlotW / 2, bottom + 36, "CS-X systems (log2 scale)", "text-anchor=\"middle\"");
    return svg + "<text transform=\"translate(20 " + num(kScaleTop + kScalePlotH / 2)
        + ") rotate(-90)\" text-anchor=\"middle\">Throughput (samples/s)</text>";
}

std::string idealLine(const ScaleFrame& frame, const std::vector<sweeps::ScalingPoint>& points, double baseline)
{
    const double first = points.front().numCsx;
    const double last = points.back().numCsx;
    if (!(baseline > 0) || last <= first)
        return "";
    std::string path;
    for (int k = 0; k <= 32; ++k) {
        const double n = first * std::pow(last / first, k / 32.0);
        path += (k ? " " : "") + num(frame.x(n)) + "," + num(frame.y(baseline * n));
    }
    return "<polyline class=\"ideal\" points=\"" + path + "\" fill=\"none\" " + stroke("#718096", 1.5)
        + " stroke-dasharray=\"6 4\"/>";
}

std::string measuredPoints(const ScaleFrame& frame, const std::vector<sweeps::ScalingPoint>& points)
{
    std::string path, marks;
    for (const sweeps::ScalingPoint& point : points) {
        const double x = frame.x(point.numCsx);
        const double y = frame.y(point.samplesPerS);
        path += (path.empty() ? "" : " ") + num(x) + "," + num(y);
        const std::string title = std::to_string(point.numCsx) + " systems: " + rate(point.samplesPerS, "samples/s")
            + ", efficiency " + percent(point.efficiency, 0) + ", bottleneck " + orDash(toString(point.bottleneck));
        marks += "<circle class=\"point\" cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"4\" fill=\"#2b6cb0\" "
            + stroke("#ffffff", 1) + "><title>" + escape(title) + "</title></circle>";
        // Below the rising curve, but above the x axis.
        marks += text(
            x + 7, std::min(y + 14, kScaleTop + kScalePlotH - 4), percent(point.efficiency, 0), "font-size=\"10\"");
    }
    return "<polyline class=\"measured\" points=\"" + path + "\" fill=\"none\" " + stroke("#2b6cb0", 2) + "/>" + marks;
}

std::string scalingSvg(const sweeps::ScalingSweep& sweep)
{
    std::vector<sweeps::ScalingPoint> points;
    std::copy_if(sweep.points.begin(), sweep.points.end(), std::back_inserter(points),
        [](const auto& p) { return p.numCsx >= 1; });
    if (points.empty())
        return messageSvg("The scaling sweep has no valid point: there is nothing to chart.");
    std::stable_sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.numCsx < b.numCsx; });
    const double baseline = finiteOr(sweep.baselineSamplesPerS);
    const ScaleFrame frame = scaleFrame(points, baseline);
    std::string svg = svgOpen(kScaleWidth, kScaleHeight) + scaleAxes(frame, points);
    svg += line(kScaleLeft, 16, kScaleLeft + 24, 16, stroke("#2b6cb0", 2)) + text(kScaleLeft + 30, 20, "measured");
    svg += line(kScaleLeft + 120, 16, kScaleLeft + 144, 16, stroke("#718096", 1.5) + " stroke-dasharray=\"6 4\"");
    svg += text(kScaleLeft + 150, 20, "ideal linear from 1 system; labels: scaling efficiency");
    return svg + idealLine(frame, points, baseline) + measuredPoints(frame, points) + "</svg>";
}

// All wafers drawn share 640 px of width; a lone wafer is also kept within 720 px of height.
constexpr double kPlaceArea = 640, kPlaceMaxHeight = 720, kPlaceMargin = 20, kWaferGap = 24, kWaferLabel = 18;
constexpr int kWafersPerRow = 4;

constexpr const char* kRegionPalette[]
    = { "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac" };

struct WaferLayout {
    double scale = 1; // px per PE
    std::map<int, std::pair<double, double>> origin; // wafer index -> top left of its fabric
    double width = 0;
    double height = 0;
};

WaferLayout waferLayout(const RunReport& report)
{
    std::set<int> wafers = { 0 };
    for (const RegionReport& region : report.regions)
        wafers.insert(std::max(region.system, 0));
    WaferLayout layout;
    const int columns = std::min<int>(int(wafers.size()), kWafersPerRow);
    const double cellWidth = (kPlaceArea - (columns - 1) * kWaferGap) / columns;
    layout.scale = std::min(cellWidth / report.plan.fabricWidth, kPlaceMaxHeight / report.plan.fabricHeight);
    const double waferWidth = report.plan.fabricWidth * layout.scale;
    const double rowHeight = kWaferLabel + report.plan.fabricHeight * layout.scale + kWaferGap;
    int k = 0;
    for (int wafer : wafers) {
        const int column = k % columns;
        const int row = k++ / columns;
        layout.origin[wafer]
            = { kPlaceMargin + column * (cellWidth + kWaferGap), kPlaceMargin + row * rowHeight + kWaferLabel };
    }
    const int rows = (int(wafers.size()) + columns - 1) / columns;
    layout.width = 2 * kPlaceMargin + (columns - 1) * (cellWidth + kWaferGap) + waferWidth;
    layout.height = kPlaceMargin + rows * rowHeight + 16;
    return layout;
}

// Drawn over the regions, which may all cover it (weight streaming).
std::string usableOutline(const Rect& u, const WaferLayout& layout, int wafer)
{
    const auto [x, y] = layout.origin.at(wafer);
    const double s = layout.scale;
    const std::string attrs = "class=\"usable\" fill=\"none\" " + stroke("#2d3748", 0.8) + " stroke-dasharray=\"4 3\"";
    return u.w > 0 && u.h > 0 ? rect(x + u.x * s, y + u.y * s, u.w * s, u.h * s, attrs) : "";
}

std::string regionRect(const RegionReport& region, std::size_t index, const WaferLayout& layout)
{
    const auto [x, y] = layout.origin.at(std::max(region.system, 0));
    const double s = layout.scale;
    const std::string colour = kRegionPalette[index % std::size(kRegionPalette)];
    const std::string title = region.op + ": " + formatThousands(region.rect.area()) + " PEs, " + seconds(region.timeS)
        + " per step (wafer " + std::to_string(region.system) + ", stage " + std::to_string(region.stage) + ")";
    return rect(x + region.rect.x * s, y + region.rect.y * s, region.rect.w * s, region.rect.h * s,
        "class=\"region\" fill=\"" + colour + "\" fill-opacity=\"0.55\" stroke=\"" + colour + "\" stroke-width=\"0.6\"",
        title);
}

std::string placementSvg(const RunReport& report)
{
    const PlanSummary& plan = report.plan;
    if (plan.fabricWidth <= 0 || plan.fabricHeight <= 0)
        return messageSvg("The plan has no fabric size: there is no placement to draw.");
    const WaferLayout layout = waferLayout(report);
    std::string svg = svgOpen(layout.width, layout.height);
    for (const auto& [wafer, at] : layout.origin)
        svg += text(at.first, at.second - 6, "wafer " + std::to_string(wafer), "font-weight=\"bold\"")
            + rect(at.first, at.second, plan.fabricWidth * layout.scale, plan.fabricHeight * layout.scale,
                "class=\"wafer\" fill=\"#f7fafc\" " + stroke("#2d3748"));
    for (std::size_t i = 0; i < report.regions.size(); ++i)
        if (report.regions[i].rect.w > 0 && report.regions[i].rect.h > 0)
            svg += regionRect(report.regions[i], i, layout);
    for (const auto& [wafer, at] : layout.origin)
        svg += usableOutline(plan.usable, layout, wafer);
    const std::string footer = "Fabric " + std::to_string(plan.fabricWidth) + " x " + std::to_string(plan.fabricHeight)
        + " PEs per wafer (1 px = " + formatFixed(1.0 / layout.scale, 2) + " PEs); dashed: usable area.";
    return svg + text(kPlaceMargin, layout.height - 8, footer, "font-size=\"10\"") + "</svg>";
}

} // namespace

std::vector<ReportChart> reportCharts(const RunReport& report)
{
    std::vector<ReportChart> charts;
    charts.push_back({ "layer_utilization", "Utilization per layer",
        "One bar per layer in execution order: its length is the share of the wafer's peak the layer uses while it "
        "runs, its colour the bound that limits it.",
        layerUtilizationSvg(report.metrics.layers) });
    charts.push_back({ "timeline", "Timeline summary",
        "One row per resource lane over the whole run: darker cells are busier slices of time, and the figure at the "
        "right is the lane's busy share of the run.",
        timelineSvg(report.lanes, report.spanS) });
    if (report.scaling && !report.scaling->points.empty())
        charts.push_back({ "scaling", "Scaling with the number of systems",
            "Measured throughput against the number of CS-X systems (log2 axis), with ideal linear scaling from the "
            "one-system baseline dashed; each point is labelled with its scaling efficiency.",
            scalingSvg(*report.scaling) });
    charts.push_back({ "placement", "Placement on the wafer",
        "The fabric of each wafer used, in PEs, with the usable area dashed; each coloured rectangle is one region "
        "of the plan (regions that share the fabric over time overlap).",
        placementSvg(report) });
    return charts;
}

} // namespace waferscope::core::report
