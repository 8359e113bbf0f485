#pragma once

#include "core/report/runreport.h"

#include <string>
#include <vector>

namespace waferscope::core::report {

// The charts of a report, as standalone SVG fragments (no external references, no xmlns URL):
// report.html inlines them and the GUI's PDF renders them with QSvgRenderer.
struct ReportChart {
    std::string id; // "layer_utilization", "timeline", "scaling", "placement"
    std::string title;
    std::string caption; // one sentence: what the chart shows and how to read it
    std::string svg; // <svg viewBox=... width=... height=...>...</svg>
};

// Utilization per layer, a timeline summary, the scaling curve (when the report has a sweep)
// and the wafer placement, in that order.
std::vector<ReportChart> reportCharts(const RunReport& report);

} // namespace waferscope::core::report
