#pragma once

#include <nlohmann/json.hpp>

// The memory budget's estimates against what the work takes (issue 39), each done by
// waferscope-memoryprobe in a child process: `memory_estimate_ratio_<kind>`, the child's peak
// resident set beyond a small baseline of the same work over what the estimates say it adds (1 is
// exact; the tests hold it within 1/1.5..1.5). And the time the readers take on the largest
// inputs they accept: `reader_ms_params_4mib` (the worst params file under the 4 MiB cap, a flow
// sequence of small scalars just under the node limit), `reader_ms_jobs_16mib` (a jobs file of
// 16 MiB) and `reader_ms_report_64mib` (a report.json of 64 MiB through readReportFile).
bool memoryFigures(nlohmann::ordered_json& figures, bool quick, int rounds);
