#pragma once

#include "core/report/runreport.h"

#include <string>
#include <vector>

namespace waferscope::core::report {

// Two runs lined up (`waferscope-cli compare`, the GUI's baseline): the totals that matter and
// every layer matched by name, so that a change of hardware, system count or config shows
// where the time went.
struct MetricChange {
    // "step_time_s", "samples_per_s", ...; "cycle_level_cycles_per_token" and
    // "cycle_level_tokens_per_s" when either report carries a cycle-level run (NaN for the other)
    std::string metric;
    std::string label; // "step time"
    double a = 0.0;
    double b = 0.0;
    bool higherIsBetter = true;
    double ratio() const { return a != 0.0 ? b / a : 0.0; } // 0 when not defined
};

struct LayerChange {
    std::string name; // matched by name (and occurrence, for repeated names)
    double aTimeS = 0.0;
    double bTimeS = 0.0;
    Bound aBound = Bound::None;
    Bound bBound = Bound::None;
    double aUtilization = 0.0;
    double bUtilization = 0.0;
};

struct ReportComparison {
    std::vector<MetricChange> totals;
    Bound aBottleneck = Bound::None;
    Bound bBottleneck = Bound::None;
    std::vector<LayerChange> layers; // in A's order
    std::vector<std::string> onlyInA;
    std::vector<std::string> onlyInB;
    bool sameInput = false; // the same params file bytes (SHA-256)
};

ReportComparison compareReports(const RunReport& a, const RunReport& b);

// `compare --json`: {"a": {...}, "b": {...}, "same_input", "totals": [{metric, a, b, change}],
// "bottleneck": {a, b}, "layers": [{name, a_time_s, b_time_s, change, a_bound, b_bound}],
// "bound_changes", "only_in_a", "only_in_b"}; `change` is b/a - 1 (null when a is 0).
std::string comparisonToJson(const ReportComparison& comparison, const RunReport& a, const RunReport& b,
    const std::string& aPath, const std::string& bPath, int indent = 2);

// The text `compare` prints: the totals, the bound changes and the layers whose time changed most.
std::string comparisonText(const ReportComparison& comparison, const RunReport& a, const RunReport& b,
    const std::string& aPath, const std::string& bPath, std::size_t layersShown = 15);

} // namespace waferscope::core::report
