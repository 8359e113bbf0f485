// report.html: the report document as one self-contained page (inline CSS and SVG, no script, no
// URL) that reads well printed.
#include "core/report/htmlreport.h"

#include "core/report/reportformat.h"

#include <string>

namespace waferscope::core::report {

namespace {

using namespace cells;

constexpr const char* kStyle = R"(
body { font-family: "DejaVu Sans", sans-serif; color: #1a202c; background: #ffffff; margin: 24px; font-size: 13px; }
h1 { font-size: 20px; margin-bottom: 4px; } p.meta, p.caption { color: #4a5568; }
h2 { font-size: 16px; margin-top: 28px; border-bottom: 1px solid #cbd5e0; }
table { border-collapse: collapse; margin: 8px 0; } thead { display: table-header-group; }
th, td { border: 1px solid #cbd5e0; padding: 2px 6px; text-align: left; vertical-align: top; } th { background: #edf2f7; }
td.num { text-align: right; font-variant-numeric: tabular-nums; } .chart svg { max-width: 100%; height: auto; }
@page { margin: 15mm; } @media print { body { margin: 0; font-size: 10pt; }
  h2 { break-after: avoid; page-break-after: avoid; } .chart, table, tr { break-inside: avoid; page-break-inside: avoid; } }
)";

std::string keyValueTable(const ReportTable& table)
{
    std::string html = "<table class=\"compact\"><tbody>\n";
    for (const std::vector<std::string>& row : table.rows)
        html += "<tr><th>" + escape(row.empty() ? std::string() : row[0]) + "</th><td>"
            + escape(row.size() < 2 ? std::string() : row[1]) + "</td></tr>\n";
    return html + "</tbody></table>\n";
}

std::string dataTable(const ReportTable& table)
{
    if (table.rows.empty())
        return "<p>" + escape(table.whenEmpty) + "</p>\n";
    std::string html = "<table><thead><tr>";
    for (const std::string& header : table.headers)
        html += "<th>" + escape(header) + "</th>";
    html += "</tr></thead><tbody>\n";
    for (const std::vector<std::string>& row : table.rows) {
        html += "<tr>";
        for (std::size_t i = 0; i < row.size(); ++i)
            html += (i < table.align.size() && table.align[i] == 'n' ? "<td class=\"num\">" : "<td>") + escape(row[i])
                + "</td>";
        html += "</tr>\n";
    }
    return html + "</tbody></table>\n";
}

std::string listHtml(const ReportSection& section)
{
    if (section.items.empty())
        return "<p>" + escape(section.whenEmpty) + "</p>\n";
    std::string html = "<ul>\n";
    for (const std::string& item : section.items)
        html += "<li>" + escape(item) + "</li>\n";
    return html + "</ul>\n";
}

std::string sectionHtml(const ReportSection& section)
{
    switch (section.kind) {
    case ReportSection::Kind::Chart:
        return "<section class=\"chart\" id=\"chart-" + escape(section.id) + "\">\n<h2>" + escape(section.title)
            + "</h2>\n<p class=\"caption\">" + escape(section.chart.caption) + "</p>\n" + section.chart.svg
            + "\n</section>\n";
    case ReportSection::Kind::List:
        return "<h2>" + escape(section.title) + "</h2>\n" + listHtml(section);
    case ReportSection::Kind::Table:
        break;
    }
    return "<h2>" + escape(section.title) + "</h2>\n"
        + (section.table.headers.empty() ? keyValueTable(section.table) : dataTable(section.table));
}

} // namespace

std::string reportHtml(const ReportDocument& document)
{
    std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
        + escape(document.title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
    html += "<h1>" + escape(document.title) + "</h1>\n";
    html += "<p class=\"meta\">" + escape(document.subtitle) + "</p>\n";
    for (const ReportSection& section : document.sections)
        html += sectionHtml(section);
    return html + "<p class=\"meta\">" + escape(document.closing) + "</p>\n</body>\n</html>\n";
}

std::string reportHtml(const RunReport& report)
{
    return reportHtml(reportDocument(report));
}

} // namespace waferscope::core::report
