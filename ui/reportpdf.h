#pragma once

#include "core/report/runreport.h"

#include <QString>

namespace waferscope::ui {

// The report as a PDF (QPdfWriter, A4): the same content as report.html (core/report/
// htmlreport.h): title, manifest, key figures, notes, the four charts (rendered from their SVG
// with QSvgRenderer, so they stay vector graphics), the region, system and layer tables, with
// page breaks between rows and a page footer. Returns the PDF's bytes; empty with `error` set
// when it cannot be made. Any thread (no widgets involved).
QByteArray reportPdf(const core::report::RunReport& report, QString* error = nullptr);

} // namespace waferscope::ui
