// waferscope-cli: the exit code comes from the kind of the Diagnostic (bad input, cannot map,
// internal), never from its text or the option it names, and every error is printed located.
#include "testing.h"

#include "clirunner.h"

#include "app/cli/exitcode.h"
#include "core/report/runreport.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Result = waferscope::test::CliResult;
namespace fs = std::filesystem;

Result run(const std::vector<std::string>& args)
{
    return waferscope::test::runCliCaptured(args);
}

std::string sample(const char* name)
{
    return waferscope::test::sourceDir() + "/samples/" + name;
}

} // namespace

WS_TEST(eachDiagnosticKindSelectsItsExitCode)
{
    using Kind = waferscope::core::Diagnostic::Kind;
    WS_CHECK_EQ(int(waferscope::cli::exitCodeFor(Kind::BadInput)), 2);
    WS_CHECK_EQ(int(waferscope::cli::exitCodeFor(Kind::CannotMap)), 3);
    WS_CHECK_EQ(int(waferscope::cli::exitCodeFor(Kind::Internal)), 1);
    // The same file and message, of another kind, exit differently.
    std::ostringstream err;
    waferscope::core::Diagnostic diagnostic { "--num_csx", 0, 0, "does not fit" };
    WS_CHECK_EQ(int(waferscope::cli::printDiagnostic(err, diagnostic)), 2);
    diagnostic.kind = Kind::CannotMap;
    WS_CHECK_EQ(int(waferscope::cli::printDiagnostic(err, diagnostic)), 3);
    WS_CHECK_EQ(err.str(), std::string("--num_csx: error: does not fit\n--num_csx: error: does not fit\n"));
}

WS_TEST(aBatchTooSmallForTheSystemsCannotBeMappedInRunAndScaleAlike)
{
    // 2 samples over 4 systems: valid options that cannot be run together. The engine names
    // --num_csx; run and scale used to disagree on its exit code (3 and 2) because scale guessed
    // "bad input" from that name.
    const Result ran = run({ "run", "--params", sample("gpt3_xl.yaml"), "--system", "cs2", "--num_csx", "4",
        "--batch_size", "2", "--execution", "weight_streaming" });
    WS_CHECK_EQ(ran.code, 3);
    WS_CHECK_CONTAINS(ran.err, "--num_csx: error: the global batch of 2 samples cannot be split over 4 systems");
    const Result swept = run({ "scale", "--params", sample("gpt3_xl.yaml"), "--system", "cs2", "--num_csx", "1,4",
        "--batch_size", "2", "--execution", "weight_streaming" });
    WS_CHECK_EQ(swept.code, 3);
    WS_CHECK_CONTAINS(swept.err, "--num_csx: error: the global batch of 2 samples cannot be split over 4 systems");
    // A system count out of range is bad input, though it names the same option.
    const Result outOfRange
        = run({ "scale", "--params", sample("gpt3_xl.yaml"), "--system", "cs2", "--num_csx", "1,400" });
    WS_CHECK_EQ(outOfRange.code, 2);
    WS_CHECK_CONTAINS(outOfRange.err, "--num_csx: error: each system count must be between 1 and");
}

WS_TEST(aModelTheSystemCannotHoldNamesTheOptionAndExitsThree)
{
    // CS-1 has no MemoryX and GPT-3 XL does not fit its SRAM: the compiler's CannotMap.
    const Result result = run({ "compile", "--params", sample("gpt3_xl.yaml"), "--system", "cs1" });
    WS_CHECK_EQ(result.code, 3);
    WS_CHECK_CONTAINS(result.err, "--system: error: cannot map " + sample("gpt3_xl.yaml") + " onto ");
}

WS_TEST(locatedErrorsKeepTheirLineAndColumnInEveryCommand)
{
    const std::string path = waferscope::test::dataDir() + "/bad/legacy_num_heads_not_dividing_hidden.yaml";
    const std::string expected = path + ":15:16: error: num_heads must divide hidden_size (got 4096 and 30)\n";
    for (const char* command : { "compile", "run", "scale" }) {
        const Result result = run({ command, "--params", path });
        WS_CHECK_EQ(result.code, 2);
        WS_CHECK_EQ(result.err, expected);
    }
}

WS_TEST(aReportWithAnUnknownBoundIsALocatedError)
{
    // The names of bounds are a closed set: a report naming another is refused where it says so.
    const fs::path dir = waferscope::test::freshDirectory("unknown-bound");
    fs::create_directories(dir);
    std::string text = waferscope::core::report::reportToJson(waferscope::core::report::RunReport {});
    const std::string written = "\"stream_bound\": \"io\"";
    const std::size_t at = text.find(written);
    WS_REQUIRE(at != std::string::npos);
    text.replace(at, written.size(), "\"stream_bound\": \"disk\"");
    const int line = 1 + int(std::count(text.begin(), text.begin() + std::ptrdiff_t(at), '\n'));
    const int column = int(at - text.rfind('\n', at)) + int(std::string("\"stream_bound\": ").size());
    const fs::path report = dir / "report.json";
    std::ofstream(report) << text;
    const Result result = run({ "compare", report.string(), report.string() });
    WS_CHECK_EQ(result.code, 2);
    const std::string located = report.string() + ":" + std::to_string(line) + ":" + std::to_string(column)
        + ": error: 'stream_bound' is 'disk', expected ";
    WS_CHECK_CONTAINS(result.err, located);
    WS_CHECK_CONTAINS(result.err, "compute, fabric, io, latency, memoryx, pipeline or swarmx");
    fs::remove_all(dir);
}
