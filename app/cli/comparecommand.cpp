// No header of its own: defines runCompareCommand, declared with every subcommand in app/cli/commands.h.
// `compare`: two run directories written by `run --model_dir` (or the GUI's Export report),
// lined up by layer and metric.
#include "app/cli/argparser.h"
#include "app/cli/commands.h"
#include "app/cli/exitcode.h"

#include "core/report/reportcompare.h"
#include "core/report/rundirectory.h"

#include <algorithm>
#include <ostream>

namespace waferscope::cli {

int runCompareCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err)
{
    ArgParser parser("waferscope-cli compare",
        "Lines up two runs written by 'run --model_dir' (a run directory or its report.json each): step time,\n"
        "throughput, MFU and utilization, then every layer matched by name with its time and bound in both.");
    parser.addPositional("DIR_A", "the first run (the baseline)");
    parser.addPositional("DIR_B", "the second run");
    parser.addFlag("json", "print one JSON object on stdout");
    if (!parser.parse(args)) {
        out << parser.helpText();
        return kExitOk;
    }
    if (parser.positionals().size() != 2)
        throw UsageError { "expects two run directories: compare DIR_A DIR_B" };
    const std::string& pathA = parser.positionals()[0];
    const std::string& pathB = parser.positionals()[1];
    const core::Expected<core::report::RunReport> a = core::report::readReportFile(pathA);
    const core::Expected<core::report::RunReport> b = core::report::readReportFile(pathB);
    if (!a || !b) {
        int exitCode = kExitOk;
        if (!a)
            exitCode = printDiagnostic(err, a.error());
        if (!b)
            exitCode = std::max(exitCode, int(printDiagnostic(err, b.error())));
        return exitCode;
    }
    const core::report::ReportComparison comparison = core::report::compareReports(*a, *b);
    if (parser.has("json"))
        out << core::report::comparisonToJson(comparison, *a, *b, pathA, pathB) << "\n";
    else
        out << core::report::comparisonText(comparison, *a, *b, pathA, pathB);
    return kExitOk;
}

} // namespace waferscope::cli
