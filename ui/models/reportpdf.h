#pragma once

#include "core/report/runreport.h"

#include <QString>

namespace waferscope::ui {

// The report as a PDF (QPdfWriter, A4): the report document (core/report/reportdocument.h), the
// same that report.html renders, section by section: tables with page breaks between rows and
// the header row repeated, lists, and the charts rendered from their SVG with QSvgRenderer (so
// they stay vector graphics), with a page footer. Returns the PDF's bytes; empty with `error` set
// when it cannot be made. Any thread (no widgets involved).
QByteArray reportPdf(const core::report::RunReport& report, QString* error = nullptr);

} // namespace waferscope::ui
