#include "core/report/reportcompare.h"

#include "core/common/displaytext.h"
#include "core/common/units.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>

namespace waferscope::core::report {

namespace {

using Json = nlohmann::ordered_json;

Json number(double value)
{
    return std::isfinite(value) ? Json(value) : Json(nullptr);
}

// b/a - 1, or null where a run has no such figure.
Json change(double a, double b)
{
    return a != 0.0 && std::isfinite(a) && std::isfinite(b) ? Json(b / a - 1.0) : Json(nullptr);
}

// "layers.0.attn" occurring the second time is keyed "layers.0.attn#2".
std::vector<std::string> occurrenceKeys(const std::vector<engine::LayerMetrics>& layers)
{
    std::map<std::string, int> seen;
    std::vector<std::string> keys;
    for (const engine::LayerMetrics& layer : layers) {
        const int n = ++seen[layer.name];
        keys.push_back(n == 1 ? layer.name : layer.name + "#" + std::to_string(n));
    }
    return keys;
}

std::string describe(const RunReport& r)
{
    return r.manifest.model + " on " + std::to_string(r.metrics.numSystems) + " x " + r.metrics.system + " ("
        + toString(r.metrics.mode) + ", " + toString(r.metrics.execution) + ")";
}

std::string formatValue(const MetricChange& m, double value)
{
    if (!std::isfinite(value))
        return "-";
    if (m.metric.ends_with("_s") && !m.metric.ends_with("_per_s"))
        return formatSeconds(value);
    if (m.metric.ends_with("cycles_per_token"))
        return formatFixed(value, 0);
    if (m.metric == "mfu" || m.metric.starts_with("utilization_"))
        return formatFixed(100.0 * value, 1) + "%";
    return formatFixed(value, 2);
}

std::string formatChange(double a, double b)
{
    if (a == 0.0 || !std::isfinite(a) || !std::isfinite(b))
        return "-";
    const double percent = 100.0 * (b / a - 1.0);
    return (percent >= 0 ? "+" : "") + formatFixed(percent, 1) + "%";
}

} // namespace

ReportComparison compareReports(const RunReport& a, const RunReport& b)
{
    ReportComparison c;
    const engine::Metrics& ma = a.metrics;
    const engine::Metrics& mb = b.metrics;
    const auto add = [&](const char* metric, const char* label, double va, double vb, bool higherIsBetter) {
        c.totals.push_back({ metric, label, va, vb, higherIsBetter });
    };
    add("step_time_s", "step time", ma.stepTimeS, mb.stepTimeS, false);
    if (ma.mode == RunMode::Inference || mb.mode == RunMode::Inference) {
        add("tokens_per_s", "tokens/s per user", ma.tokensPerS, mb.tokensPerS, true);
        add("aggregate_tokens_per_s", "tokens/s, all users", ma.aggregateTokensPerS, mb.aggregateTokensPerS, true);
        add("time_to_first_token_s", "time to first token", ma.timeToFirstTokenS, mb.timeToFirstTokenS, false);
    } else {
        add("samples_per_s", "samples/s", ma.samplesPerS, mb.samplesPerS, true);
        add("tokens_per_s", "tokens/s", ma.tokensPerS, mb.tokensPerS, true);
    }
    add("mfu", "MFU", ma.mfu, mb.mfu, true);
    add("utilization_compute", "compute utilization", ma.utilization.compute, mb.utilization.compute, true);
    add("utilization_fabric", "fabric utilization", ma.utilization.fabric, mb.utilization.fabric, true);
    add("utilization_io", "CS-X I/O utilization", ma.utilization.io, mb.utilization.io, true);
    add("utilization_memoryx", "MemoryX utilization", ma.utilization.memoryx, mb.utilization.memoryx, true);
    add("utilization_swarmx", "SwarmX utilization", ma.utilization.swarmx, mb.utilization.swarmx, true);
    if (a.cycleLevel || b.cycleLevel) {
        // A run without a cycle-level part has no such figure (null in JSON, "-" in text).
        const double none = std::numeric_limits<double>::quiet_NaN();
        const auto cycle = [none](const RunReport& r, double CycleLevelReport::*figure) {
            return r.cycleLevel ? (*r.cycleLevel).*figure : none;
        };
        add("cycle_level_cycles_per_token", "cycle-level cycles/token", cycle(a, &CycleLevelReport::cyclesPerToken),
            cycle(b, &CycleLevelReport::cyclesPerToken), false);
        add("cycle_level_tokens_per_s", "cycle-level tokens/s", cycle(a, &CycleLevelReport::tokensPerS),
            cycle(b, &CycleLevelReport::tokensPerS), true);
    }
    c.aBottleneck = ma.bottleneck;
    c.bBottleneck = mb.bottleneck;
    c.sameInput = a.manifest.inputSha256 == b.manifest.inputSha256;

    const std::vector<std::string> keysA = occurrenceKeys(ma.layers);
    const std::vector<std::string> keysB = occurrenceKeys(mb.layers);
    std::map<std::string, std::size_t> indexB;
    for (std::size_t i = 0; i < keysB.size(); ++i)
        indexB[keysB[i]] = i;
    std::vector<bool> matchedB(keysB.size(), false);
    for (std::size_t i = 0; i < keysA.size(); ++i) {
        const auto found = indexB.find(keysA[i]);
        if (found == indexB.end()) {
            c.onlyInA.push_back(keysA[i]);
            continue;
        }
        matchedB[found->second] = true;
        const engine::LayerMetrics& la = ma.layers[i];
        const engine::LayerMetrics& lb = mb.layers[found->second];
        c.layers.push_back({ keysA[i], la.timeS, lb.timeS, la.bound, lb.bound, la.utilization, lb.utilization });
    }
    for (std::size_t i = 0; i < keysB.size(); ++i)
        if (!matchedB[i])
            c.onlyInB.push_back(keysB[i]);
    return c;
}

std::string comparisonToJson(const ReportComparison& c, const RunReport& a, const RunReport& b,
    const std::string& aPath, const std::string& bPath, int indent)
{
    const auto side = [](const RunReport& r, const std::string& path) {
        return Json { { "path", path }, { "model", r.manifest.model }, { "system", r.metrics.system },
            { "num_csx", r.metrics.numCsx }, { "num_systems", r.metrics.numSystems },
            { "mode", toString(r.metrics.mode) }, { "execution", toString(r.metrics.execution) },
            { "input_sha256", r.manifest.inputSha256 }, { "created_utc", r.manifest.createdUtc } };
    };
    Json json;
    json["a"] = side(a, aPath);
    json["b"] = side(b, bPath);
    json["same_input"] = c.sameInput;
    Json totals = Json::array();
    for (const MetricChange& m : c.totals)
        totals.push_back({ { "metric", m.metric }, { "a", number(m.a) }, { "b", number(m.b) },
            { "change", change(m.a, m.b) }, { "higher_is_better", m.higherIsBetter } });
    json["totals"] = std::move(totals);
    json["bottleneck"] = { { "a", toString(c.aBottleneck) }, { "b", toString(c.bBottleneck) } };
    Json layers = Json::array();
    int boundChanges = 0;
    for (const LayerChange& l : c.layers) {
        boundChanges += l.aBound != l.bBound ? 1 : 0;
        layers.push_back({ { "name", l.name }, { "a_time_s", number(l.aTimeS) }, { "b_time_s", number(l.bTimeS) },
            { "change", change(l.aTimeS, l.bTimeS) }, { "a_bound", toString(l.aBound) },
            { "b_bound", toString(l.bBound) }, { "a_utilization", number(l.aUtilization) },
            { "b_utilization", number(l.bUtilization) } });
    }
    json["layers"] = std::move(layers);
    json["bound_changes"] = boundChanges;
    json["only_in_a"] = c.onlyInA;
    json["only_in_b"] = c.onlyInB;
    return json.dump(indent);
}

std::string comparisonText(const ReportComparison& c, const RunReport& a, const RunReport& b, const std::string& aPath,
    const std::string& bPath, std::size_t layersShown)
{
    std::ostringstream out;
    out << "A  " << displayText(describe(a)) << "   " << displayText(aPath) << "\n"
        << "B  " << displayText(describe(b)) << "   " << displayText(bPath) << "\n";
    if (!c.sameInput)
        out << "   (different params files: layers are matched by name)\n";
    char line[256];
    std::snprintf(line, sizeof line, "\n  %-24s %-14s %-14s %s\n", "", "A", "B", "B vs A");
    out << line;
    for (const MetricChange& m : c.totals) {
        out << formatText("  %-24s %-14s %-14s %s\n", m.label.c_str(), formatValue(m, m.a).c_str(),
            formatValue(m, m.b).c_str(), formatChange(m.a, m.b).c_str());
    }
    std::snprintf(line, sizeof line, "  %-24s %-14s %-14s %s\n", "bottleneck", toString(c.aBottleneck),
        toString(c.bBottleneck), c.aBottleneck == c.bBottleneck ? "" : "changed");
    out << line;

    out << "\n  layers: " << c.layers.size() << " in both";
    if (!c.onlyInA.empty() || !c.onlyInB.empty())
        out << ", " << c.onlyInA.size() << " only in A, " << c.onlyInB.size() << " only in B";
    out << "\n";
    std::vector<std::size_t> order(c.layers.size());
    std::iota(order.begin(), order.end(), std::size_t(0));
    const auto moved = [&](std::size_t i) { return std::abs(c.layers[i].bTimeS - c.layers[i].aTimeS); };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return moved(x) > moved(y); });
    const std::size_t shown = std::min(layersShown, order.size());
    if (shown > 0)
        out << "\n  largest per-layer changes              A            B            change    bound\n";
    for (std::size_t k = 0; k < shown; ++k) {
        const LayerChange& l = c.layers[order[k]];
        const std::string bound = l.aBound == l.bBound ? std::string(toString(l.aBound))
                                                       : std::string(toString(l.aBound)) + " -> " + toString(l.bBound);
        out << formatText("  %-36s %-12s %-12s %-9s %s\n", displayText(l.name).c_str(), formatSeconds(l.aTimeS).c_str(),
            formatSeconds(l.bTimeS).c_str(), formatChange(l.aTimeS, l.bTimeS).c_str(), bound.c_str());
    }
    const auto boundChanges
        = std::count_if(c.layers.begin(), c.layers.end(), [](const LayerChange& l) { return l.aBound != l.bBound; });
    out << "\n  " << boundChanges << " layer(s) changed bound\n";
    return out.str();
}

} // namespace waferscope::core::report
