#pragma once

#include "core/report/reportdocument.h"

#include <string>

namespace waferscope::core::report {

// report.html: the document as a self-contained HTML page (inline CSS and SVG, no script, no URL)
// that reads well printed.
std::string reportHtml(const ReportDocument& document);
std::string reportHtml(const RunReport& report); // of reportDocument(report)

} // namespace waferscope::core::report
