// waferscope-cli: the exit code comes from the kind of the Diagnostic (bad input, cannot map,
// internal), never from its text or the option it names, and every error is printed located.
#include "testing.h"

#include "clirunner.h"

#include "app/cli/exitcode.h"
#include "core/engine/calibration.h"
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
    waferscope::core::report::RunReport fixture;
    fixture.metrics.stepTimeS = 1.0; // a step takes time: a report with none is refused before its bound
    std::string text = waferscope::core::report::reportToJson(fixture);
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

WS_TEST(moreSystemsThanSwarmXJoinsAreRefusedAtNumCsxInEveryCommand)
{
    // CS-1 has no SwarmX (MemoryX and SwarmX arrived with CS-2): one system only. SwarmX joins up
    // to 192 CS-2 and 2,048 CS-3 (Cerebras, as the presets cite it).
    const std::string gpt2 = sample("gpt2_small.yaml");
    for (const char* command : { "run", "compile", "sensitivity" }) {
        const Result result = run({ command, "--params", gpt2, "--system", "cs1", "--num_csx", "192" });
        WS_CHECK_EQ(result.code, 2);
        WS_CHECK_CONTAINS(result.err, "--num_csx: error: num_csx is 192, expected 1 for CS-1: CS-1 has no SwarmX");
    }
    const Result scaled = run({ "scale", "--params", gpt2, "--system", "cs1", "--num_csx", "1,2" });
    WS_CHECK_EQ(scaled.code, 2);
    WS_CHECK_CONTAINS(scaled.err, "--num_csx: error: each system count must be between 1 and 1 for CS-1, got 2");
    WS_CHECK_CONTAINS(scaled.err, "no SwarmX");
    const Result swept = run({ "run", "--params", gpt2, "--system", "cs1", "--sweep", "1,2" });
    WS_CHECK_EQ(swept.code, 2);
    WS_CHECK_CONTAINS(swept.err, "--sweep: error: system count 2 is more than CS-1 runs: it has no SwarmX");
    const Result cs2 = run({ "compile", "--params", sample("gpt3_xl.yaml"), "--system", "cs2", "--num_csx", "193" });
    WS_CHECK_EQ(cs2.code, 2);
    WS_CHECK_CONTAINS(cs2.err, "--num_csx: error: num_csx is 193, expected 1 to 192 for CS-2");
    const Result cs3 = run({ "compile", "--params", sample("gpt3_xl.yaml"), "--system", "cs3", "--num_csx", "2049" });
    WS_CHECK_EQ(cs3.code, 2);
    WS_CHECK_CONTAINS(cs3.err, "--num_csx: error: num_csx is 2049, expected 1 to 2048 for CS-3");
    // The config's own num_csx (4 in the GPT-3 6.7B sample) is valid for a cluster, not for CS-1:
    // the system chosen cannot run it.
    const Result config = run({ "compile", "--params", sample("gpt3_6p7b.yaml"), "--system", "cs1" });
    WS_CHECK_EQ(config.code, 3);
    WS_CHECK_CONTAINS(config.err, "--system: error: ");
    WS_CHECK_CONTAINS(config.err, "the config's num_csx is 4, but CS-1 has no SwarmX");
    // Inference places a model on the wafers it needs: a count of systems means nothing there.
    const Result inference
        = run({ "compile", "--params", sample("llama3_8b.yaml"), "--mode", "inference", "--num_csx", "4" });
    WS_CHECK_EQ(inference.code, 2);
    WS_CHECK_CONTAINS(inference.err, "--num_csx: error: --num_csx is for training and eval");
}

WS_TEST(aDraftModelMustBeALanguageModelOfTheTargetsVocabulary)
{
    // A software profile that drafts with fc_mnist (an MNIST classifier) is refused where the
    // calibration file names it; one drafting with Llama 3 8B (a vocabulary of 128,256 tokens, as
    // its sample says) for GPT-3 XL (50,257) is refused at --calibration or at the file.
    const fs::path dir = waferscope::test::freshDirectory("draft-model");
    fs::create_directories(dir);
    const auto calibrationFile = [&](const std::string& name, const std::string& draft) {
        std::string text(waferscope::core::engine::builtinCalibrationText());
        const std::string defaultProfile = "\"default_profile\": \"2024-08-launch\"";
        WS_REQUIRE(text.find(defaultProfile) != std::string::npos);
        text.replace(text.find(defaultProfile), defaultProfile.size(), "\"default_profile\": \"2024-11\"");
        const std::string written = "\"draft_params\": \"llama3_8b.yaml\"";
        const std::size_t at = text.find(written);
        WS_REQUIRE(at != std::string::npos);
        text.replace(at, written.size(), "\"draft_params\": \"" + draft + "\"");
        const fs::path file = dir / name;
        std::ofstream(file) << text;
        const int line = 1 + int(std::count(text.begin(), text.begin() + std::ptrdiff_t(at), '\n'));
        const int column = int(at - text.rfind('\n', at)) + int(std::string("\"draft_params\": ").size());
        return std::pair { file.string(), file.string() + ":" + std::to_string(line) + ":" + std::to_string(column) };
    };
    const auto [mnist, mnistAt] = calibrationFile("mnist.json", "fc_mnist.yaml");
    const Result classifier
        = run({ "run", "--params", sample("llama3_8b.yaml"), "--mode", "inference", "--calibration", mnist });
    WS_CHECK_EQ(classifier.code, 2);
    WS_CHECK_CONTAINS(classifier.err,
        mnistAt
            + ": error: speculative.draft_params must name a decoder-only language "
              "model (the draft proposes the tokens its target checks), not "
              "\"fc_mnist.yaml\" (family fc_mnist)");
    const Result builtin
        = run({ "run", "--params", sample("gpt3_xl.yaml"), "--mode", "inference", "--calibration", "2024-11" });
    WS_CHECK_EQ(builtin.code, 2);
    WS_CHECK_CONTAINS(builtin.err,
        "--calibration: error: the draft model llama3_8b.yaml of software profile 2024-11 "
        "cannot draft for gpt3");
    WS_CHECK_CONTAINS(builtin.err,
        "vocabulary sizes must match (the target checks the draft's tokens), got 128256 "
        "and 50257");
    const auto [llama, llamaAt] = calibrationFile("llama.json", "llama3_8b.yaml");
    const Result file
        = run({ "run", "--params", sample("llama2_70b.yaml"), "--mode", "inference", "--calibration", llama });
    WS_CHECK_EQ(file.code, 2);
    WS_CHECK_CONTAINS(file.err, llamaAt + ": error: the draft model llama3_8b.yaml");
    WS_CHECK_CONTAINS(file.err, "got 128256 and 32000");
    fs::remove_all(dir);
}

WS_TEST(anImpossibleFigureInAReportIsRefusedWhereItIs)
{
    // compare read a negative step time and printed its ratios; it is bad input, located.
    const fs::path dir = waferscope::test::freshDirectory("negative-step");
    fs::create_directories(dir);
    waferscope::core::report::RunReport written;
    written.metrics.stepTimeS = 0.75;
    std::string text = waferscope::core::report::reportToJson(written);
    const fs::path good = dir / "good.json";
    std::ofstream(good) << text;
    const std::string key = "\"step_time_s\": ";
    const std::size_t at = text.find(key + "0.75");
    WS_REQUIRE(at != std::string::npos);
    text.replace(at + key.size(), 4, "-0.75");
    const fs::path bad = dir / "bad.json";
    std::ofstream(bad) << text;
    WS_CHECK_EQ(run({ "compare", good.string(), good.string() }).code, 0);
    const Result result = run({ "compare", good.string(), bad.string() });
    WS_CHECK_EQ(result.code, 2);
    const int line = 1 + int(std::count(text.begin(), text.begin() + std::ptrdiff_t(at), '\n'));
    const int column = int(at - text.rfind('\n', at)) + int(key.size());
    WS_CHECK_CONTAINS(result.err,
        bad.string() + ":" + std::to_string(line) + ":" + std::to_string(column)
            + ": error: 'step_time_s' is -0.75, expected a finite time above 0");
    fs::remove_all(dir);
}

WS_TEST(aKernelRegionItsMatrixCannotFillIsRefusedAtTheOption)
{
    // gemm_stream gives each row of PEs a band of W's rows: 100 rows of PEs for 64 of W used to end
    // in "<kernel gemm_stream>: error: internal route error", exit 2, as if it were located.
    const Result tall = run({ "fabric", "--kernel", "gemm_stream", "--matrix", "64x64", "--region", "100x4" });
    WS_CHECK_EQ(tall.code, 2);
    WS_CHECK_CONTAINS(tall.err,
        "--region: error: gemm_stream streams each row of PEs its own rows of the 64x64 "
        "weights, so the region needs at most M = 64 rows, got 100; use --region 64x4");
    WS_CHECK_EQ(run({ "fabric", "--kernel", "gemm_stream", "--matrix", "64x64", "--region", "64x4" }).code, 0);
    WS_CHECK_EQ(run({ "fabric", "--kernel", "gemv", "--matrix", "64x64", "--region", "100x4" }).code, 0);
    // Options the run would ignore are refused at the option.
    const struct {
        std::vector<std::string> args;
        std::string error;
    } ignored[] = {
        { { "--kernel", "gemv", "--length", "64" },
            "--length: error: --length is the vector length of the collectives" },
        { { "--kernel", "row_reduce", "--matrix", "4x4" }, "--matrix: error: --matrix is for gemv, gemv_tree and" },
        { { "--kernel", "gemv", "--tokens", "4" }, "--tokens: error: --tokens (activation columns per PE) is for" },
        { { "--kernel", "gemv", "--rate", "0.1" }, "--rate: error: --rate is for synthetic traffic" },
        { { "--region", "4x4" }, "--region: error: --region is for a kernel run" },
    };
    for (const auto& c : ignored) {
        std::vector<std::string> args { "fabric" };
        args.insert(args.end(), c.args.begin(), c.args.end());
        const Result result = run(args);
        WS_CHECK_EQ(result.code, 2);
        WS_CHECK_CONTAINS(result.err, c.error);
    }
}
