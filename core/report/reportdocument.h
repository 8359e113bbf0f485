#pragma once

#include "core/report/reportcharts.h"
#include "core/report/runreport.h"

#include <string>
#include <vector>

namespace waferscope::core::report {

// A table of a report, as text cells. Without headers it is a key-value table (the first column
// reads as a header).
struct ReportTable {
    std::vector<std::string> headers;
    std::string align; // one letter per column: 'n' right-aligns a number column
    std::vector<std::vector<std::string>> rows;
    std::string whenEmpty; // said instead of a table without rows
};

// One section of a report: a table, a list, or a chart.
struct ReportSection {
    enum class Kind { Table, List, Chart };
    Kind kind = Kind::Table;
    // "manifest", "key_figures", "notes", "sensitivity", "cycle_level..." (cyclelevelsections.h), a chart's id,
    // "steps", "regions", "systems", "layers"
    std::string id;
    std::string title;
    ReportTable table; // Kind::Table
    std::vector<std::string> items; // Kind::List
    std::string whenEmpty; // Kind::List: said instead of an empty list
    ReportChart chart; // Kind::Chart (its title is the section's)
};

// A table section.
ReportSection tableSection(std::string id, std::string title, ReportTable table);

// What a report says, apart from how it is drawn: report.html (reportHtml, here in core) and
// report.pdf (ui/reportpdf, with Qt) are two renderings of the same document, so they cannot
// drift apart.
struct ReportDocument {
    std::string title; // "WaferScope report: llama on 4 x cs3"
    std::string subtitle; // "Created ... from ..."
    // manifest, key figures, notes, what the result depends on, the cycle-level run's, the charts, steps, regions,
    // systems, layers
    std::vector<ReportSection> sections;
    std::string closing; // "Written by WaferScope 0.1.0."
    std::string pageFooter; // for paged renderings: the title and when it was created
};

ReportDocument reportDocument(const RunReport& report);

// A sensitivity figure's name for people: "samples_per_s" -> "samples/s", "tokens_per_s" ->
// "tokens/s per user".
std::string figureUnit(const std::string& figure);

} // namespace waferscope::core::report
