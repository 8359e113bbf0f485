// libFuzzer target for `waferscope-cli compare`: two report.json texts (the input split at its
// first form feed, or in halves) read, lined up and printed. Each read is a RunReport or a located
// refusal; two reports compare whatever their layers, and the text table holds no raw control
// character and keeps one row a line (user text is shown through displayText).
#include "core/report/reportcompare.h"
#include "core/report/runreport.h"

#include <cstdint>
#include <cstdlib>
#include <string>

namespace report = waferscope::core::report;

namespace {

bool located(const waferscope::core::Diagnostic& error, const char* file)
{
    return error.file == file && error.line >= 1 && error.column >= 1 && !error.message.empty();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string input(reinterpret_cast<const char*>(data), size);
    std::size_t split = input.find('\f');
    const std::size_t skip = split == std::string::npos ? 0 : 1;
    if (split == std::string::npos)
        split = input.size() / 2;
    const auto a = report::reportFromJson(input.substr(0, split), "a.json");
    const auto b = report::reportFromJson(input.substr(split + skip), "b.json");
    if ((!a && !located(a.error(), "a.json")) || (!b && !located(b.error(), "b.json")))
        std::abort(); // every refusal must be located and explained
    if (!a || !b)
        return 0;
    const report::ReportComparison comparison = report::compareReports(a.value(), b.value());
    if (comparison.layers.size() + comparison.onlyInA.size() < a->metrics.layers.size())
        std::abort(); // every layer of A is matched or listed as A's alone
    const std::string text = report::comparisonText(comparison, a.value(), b.value(), "a.json", "b.json");
    for (const char c : text)
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7f)
            std::abort(); // user text reached the table raw
    if (report::comparisonToJson(comparison, a.value(), b.value(), "a.json", "b.json").empty())
        std::abort();
    return 0;
}
