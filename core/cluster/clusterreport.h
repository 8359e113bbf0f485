#pragma once

#include "core/cluster/cluster.h"
#include "core/report/reportdocument.h"

#include <string>

namespace waferscope::core::cluster {

// What `cluster --model_dir DIR` writes besides cluster.json: report.html, the schedule as a page
// (key figures, the assumptions, a Gantt chart of the systems over time with a queue lane, the
// jobs), and trace.json, a Chrome trace with one track per system (Perfetto, chrome://tracing),
// at most a million spans.
report::ReportDocument clusterDocument(const ClusterResult& result, const std::string& jobsPath);
std::string clusterHtml(const ClusterResult& result, const std::string& jobsPath);
std::string clusterTrace(const ClusterResult& result);

} // namespace waferscope::core::cluster
