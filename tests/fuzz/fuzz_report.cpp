// libFuzzer target for the report.json reader: any bytes must yield a RunReport or a located
// diagnostic, never a crash, a hang or unbounded memory. An accepted report then goes through
// everything `waferscope-cli compare` and a rewritten run directory do with a report read back:
// the JSON writer, the CSV and summary writers and the comparison.
#include "core/report/reportcompare.h"
#include "core/report/runreport.h"

#include <cstdint>
#include <cstdlib>
#include <string>

namespace report = waferscope::core::report;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    const waferscope::core::Expected<report::RunReport> read = report::reportFromJson(text, "fuzz.json");
    if (!read) {
        const waferscope::core::Diagnostic& error = read.error();
        if (error.file != "fuzz.json" || error.line < 1 || error.column < 1 || error.message.empty())
            std::abort(); // every refusal must be located and explained
        return 0;
    }
    // The reader and the writer round-trip exactly (runreport.h): what is written from a report
    // read back is read back to the same report, so writing it again gives the same bytes. (The
    // input itself need not be reproduced: its layout, key order and number spelling are free.)
    const std::string written = report::reportToJson(read.value());
    const waferscope::core::Expected<report::RunReport> again = report::reportFromJson(written, "written.json");
    if (!again || report::reportToJson(again.value()) != written)
        std::abort();

    if (report::reportCsv(read.value()).empty() || report::reportSummary(read.value()).empty())
        std::abort();
    const report::ReportComparison comparison = report::compareReports(read.value(), again.value());
    if (comparison.layers.size() != read->metrics.layers.size() || !comparison.onlyInA.empty())
        std::abort(); // a report lines up with itself layer by layer
    if (report::comparisonText(comparison, read.value(), again.value(), "a.json", "b.json").empty()
        || report::comparisonToJson(comparison, read.value(), again.value(), "a.json", "b.json").empty())
        std::abort();
    return 0;
}
