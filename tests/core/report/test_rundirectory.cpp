// core/report run directories: the five files of GPT-3 XL on 2 CS-2 for 2 steps, checked against
// the run and the weight-streaming schedule; report.json round trips; identical inputs give
// identical reports; writers killed mid-write leave whole files.
#include "corefixtures.h"
#include "testing.h"

#include "core/common/sha256.h"
#include "core/report/htmlreport.h"
#include "core/report/reportcompare.h"
#include "core/report/rundirectory.h"
#include "core/report/runreport.h"
#include "core/sweeps/scaling.h"
#include "core/sweeps/sensitivity.h"

#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

using namespace waferscope::core;
using namespace waferscope::test;
namespace fs = std::filesystem;

namespace {

struct Job {
    ModelGraph graph;
    SystemSpec system;
    CompileOptions compileOptions;
    ExecutionPlan plan;
    engine::RunOptions options;
    engine::RunResult run;
};

// The acceptance job: GPT-3 XL on 2 CS-2 for 2 steps.
Job gpt3XlOnTwoCs2(int numCsx = 2)
{
    Job job { load(sample("gpt3_xl.yaml")), preset("cs2"), {}, {}, {}, {} };
    job.compileOptions.numSystems = numCsx;
    job.plan = compile(job.graph, job.system, job.compileOptions).value();
    job.options.maxSteps = 2;
    job.run = engine::run(job.plan, job.graph, job.system, job.options).value();
    return job;
}

report::RunReport reportOf(const Job& job, const sweeps::ScalingSweep* sweep = nullptr)
{
    const std::string path = sample("gpt3_xl.yaml");
    const std::string bytes = waferscope::test::readFile(path);
    return report::buildReport({ path, bytes, job.graph, job.system, job.plan, job.run, job.compileOptions, job.options,
        engine::builtinCalibration(), sweep });
}

// RFC 4180 rows (quoted fields may hold commas and doubled quotes).
std::vector<std::vector<std::string>> parseCsv(const std::string& text)
{
    std::vector<std::vector<std::string>> rows(1);
    std::string field;
    bool quoted = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
                field += text[++i];
            else if (c == '"')
                quoted = false;
            else
                field += c;
        } else if (c == '"')
            quoted = true;
        else if (c == ',') {
            rows.back().push_back(field);
            field.clear();
        } else if (c == '\n') {
            rows.back().push_back(field);
            field.clear();
            rows.emplace_back();
        } else
            field += c;
    }
    if (rows.back().empty())
        rows.pop_back();
    return rows;
}

} // namespace

WS_TEST(sha256MatchesThePublishedVectors)
{
    // FIPS 180-4 examples (NIST CSRC "SHA256.pdf"): one block, two blocks, a million 'a'.
    WS_CHECK_EQ(sha256Hex(""), std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    WS_CHECK_EQ(sha256Hex("abc"), std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    WS_CHECK_EQ(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
        std::string("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    WS_CHECK_EQ(sha256Hex(std::string(1000000, 'a')),
        std::string("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
}

WS_TEST(runDirectoryHoldsTheFiveFilesOfTheRun)
{
    const Job job = gpt3XlOnTwoCs2();
    sweeps::ScalingOptions sweepOptions;
    sweepOptions.numCsx = { 1, 2, 4 };
    const sweeps::ScalingSweep sweep = sweeps::scale(job.graph, job.system, sweepOptions).value();
    const report::RunReport written = reportOf(job, &sweep);
    const fs::path dir = waferscope::test::freshDirectory("rundir");
    WS_REQUIRE(!report::writeRunDirectory(dir.string(), report::runDirectoryFiles(written, job.run, job.plan)));
    for (const char* name : { "report.json", "report.csv", "report.html", "trace.json", "summary.txt" })
        WS_CHECK(fs::is_regular_file(dir / name));

    const nlohmann::json json = nlohmann::json::parse(waferscope::test::readFile(dir / "report.json"));
    const nlohmann::json& layers = json["layers"];
    WS_REQUIRE(layers.size() == job.run.metrics.layers.size());
    WS_CHECK_EQ(json["manifest"]["input"]["sha256"].get<std::string>(),
        sha256Hex(waferscope::test::readFile(sample("gpt3_xl.yaml"))));
    WS_CHECK_EQ(json["manifest"]["options"]["num_csx"].get<int>(), 2);
    WS_CHECK_EQ(json["manifest"]["options"]["batch_size"].get<std::int64_t>(), job.graph.config.batchSize);
    WS_CHECK_EQ(json["scaling"]["points"].size(), std::size_t(3));

    // The CSV's rows are the JSON's layers, field for field.
    const auto rows = parseCsv(waferscope::test::readFile(dir / "report.csv"));
    WS_REQUIRE(rows.size() == layers.size() + 1);
    const std::vector<std::string> columns { "name", "kind", "params", "flops", "region", "time_s", "utilization",
        "bound" };
    WS_CHECK(rows[0] == columns);
    for (std::size_t i = 0; i < layers.size(); ++i) {
        WS_REQUIRE(rows[i + 1].size() == columns.size());
        for (std::size_t c = 0; c < columns.size(); ++c) {
            const nlohmann::json& value = layers[i][columns[c]];
            if (value.is_string())
                WS_CHECK_EQ(rows[i + 1][c], value.get<std::string>());
            else
                WS_CHECK_EQ(nlohmann::json::parse(rows[i + 1][c]), value);
        }
    }

    // The trace: every (layer, phase, iteration, micro-batch) the weight-streaming schedule has
    // (forward and both backward passes on the wafer; the layer's weights in through MemoryX,
    // SwarmX and the CS-X I/O; its gradients out and reduced), and a span of the two steps.
    const nlohmann::json trace = nlohmann::json::parse(waferscope::test::readFile(dir / "trace.json"));
    std::map<int, std::string> processes;
    std::map<std::pair<int, int>, std::string> threads;
    std::set<std::string> seen, seenAnyMicroBatch;
    double first = 1e300, last = -1e300;
    for (const nlohmann::json& e : trace["traceEvents"]) {
        if (e["ph"] == "M" && e["name"] == "process_name")
            processes[e["pid"].get<int>()] = e["args"]["name"].get<std::string>();
        if (e["ph"] == "M" && e["name"] == "thread_name")
            threads[{ e["pid"].get<int>(), e["tid"].get<int>() }] = e["args"]["name"].get<std::string>();
    }
    for (const nlohmann::json& e : trace["traceEvents"]) {
        if (e["ph"] != "X")
            continue;
        const std::string lane
            = processes[e["pid"].get<int>()] + "/" + threads[{ e["pid"].get<int>(), e["tid"].get<int>() }];
        seen.insert(e["name"].get<std::string>() + "|" + e["cat"].get<std::string>() + "|"
            + std::to_string(e["args"]["iteration"].get<int>()) + "|"
            + std::to_string(e["args"]["micro_batch"].get<int>()) + "|" + lane);
        seenAnyMicroBatch.insert(e["name"].get<std::string>() + "|" + e["cat"].get<std::string>() + "|"
            + std::to_string(e["args"]["iteration"].get<int>()) + "|" + lane);
        first = std::min(first, e["ts"].get<double>());
        last = std::max(last, e["ts"].get<double>() + e["dur"].get<double>());
    }
    const std::string wafer = processes[10] + "/wafer", io = processes[10] + "/I/O";
    const std::string memoryx = "MemoryX/stream and optimizer", swarmx = "SwarmX/broadcast and reduce";
    const int microBatches = json["totals"]["micro_batches_per_step"].get<int>();
    WS_CHECK(microBatches > 1);
    std::size_t missing = 0;
    const auto expectIn = [&](const std::set<std::string>& set, const std::string& key) {
        if (!set.count(key) && ++missing <= 5)
            reportFailure(__FILE__, __LINE__, "no trace event " + key);
    };
    const auto expect = [&](const std::string& key) { expectIn(seen, key); };
    for (int iteration = 0; iteration < 2; ++iteration) {
        for (const nlohmann::json& layer : layers)
            if (layer["params"].get<std::int64_t>() > 0)
                expectIn(seenAnyMicroBatch,
                    layer["name"].get<std::string>() + "|optimizer_update|" + std::to_string(iteration) + "|"
                        + memoryx);
        for (int mb = 0; mb < microBatches; ++mb)
            for (const nlohmann::json& layer : layers) {
                const std::string at = "|" + std::to_string(iteration) + "|" + std::to_string(mb) + "|";
                const std::string name = layer["name"].get<std::string>();
                for (const char* phase : { "forward", "backward_delta", "backward_gradient" })
                    expect(name + "|" + phase + at + wafer);
                if (layer["params"].get<std::int64_t>() == 0)
                    continue;
                for (const std::string& lane : { memoryx, swarmx, io })
                    expect(name + "|stream_in" + at + lane);
                expect(name + "|gradient_out" + at + io);
                expect(name + "|reduce" + at + swarmx);
            }
    }
    WS_CHECK_EQ(missing, std::size_t(0));
    double steps = 0.0;
    for (const nlohmann::json& step : json["totals"]["step_times_s"])
        steps += step.get<double>();
    WS_CHECK_EQ(json["totals"]["step_times_s"].size(), std::size_t(2));
    WS_CHECK_NEAR(first, 0.0, 0.0);
    WS_CHECK_NEAR((last - first) * 1e-6, steps, 1e-9);

    // The page: its charts inline as SVG, nothing fetched from anywhere.
    const std::string html = waferscope::test::readFile(dir / "report.html");
    std::size_t charts = 0;
    for (std::size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1))
        ++charts;
    WS_CHECK_EQ(charts, std::size_t(4)); // layer utilization, timeline, scaling, placement
    for (const char* url : { "http:", "https:", "src=", "href=", "url(", "@import" })
        WS_CHECK(html.find(url) == std::string::npos);
    const std::string summary = waferscope::test::readFile(dir / "summary.txt");
    WS_CHECK(summary.find("weight_streaming") != std::string::npos);
    fs::remove_all(dir);
}

WS_TEST(reportJsonRoundTripsAndIsReproducible)
{
    const Job job = gpt3XlOnTwoCs2();
    report::RunReport first = reportOf(job);
    const std::string text = report::reportToJson(first);
    const Expected<report::RunReport> read = report::reportFromJson(text, "report.json");
    WS_REQUIRE(read.hasValue());
    WS_CHECK_EQ(report::reportToJson(*read), text);
    WS_CHECK_EQ(read->metrics.stepTimeS, job.run.metrics.stepTimeS);
    WS_CHECK_EQ(read->metrics.layers.size(), job.run.metrics.layers.size());
    WS_CHECK_EQ(read->metrics.layers[5].timeS, job.run.metrics.layers[5].timeS);
    WS_CHECK_EQ(read->regions.size(), job.plan.regions.size());
    WS_CHECK(!read->scaling.has_value());
    WS_REQUIRE(read->steps.size() == 2);
    WS_CHECK_EQ(read->steps[1].samplesPerS, first.steps[1].samplesPerS);
    WS_CHECK_EQ(read->steps[1].utilization.memoryx, first.steps[1].utilization.memoryx);

    // The same inputs again, compiled and run afresh: the same report but for the time stamp.
    const Job again = gpt3XlOnTwoCs2();
    report::RunReport second = reportOf(again);
    second.manifest.createdUtc = first.manifest.createdUtc = "2026-01-01T00:00:00Z";
    WS_CHECK_EQ(report::reportToJson(second), report::reportToJson(first));
}

// What the headline figure depends on: report.json carries it under "sensitivity" and reads it
// back exactly; report.html gets a section with every factor; without one neither has it.
WS_TEST(reportCarriesWhatTheResultDependsOn)
{
    const Job job = gpt3XlOnTwoCs2();
    report::RunReport report = reportOf(job);
    const std::string plainHtml = report::reportHtml(report);
    WS_CHECK(plainHtml.find("What this result depends on") == std::string::npos);
    WS_CHECK(report::reportToJson(report).find("\"sensitivity\"") == std::string::npos);

    Expected<sweeps::Sensitivity> sensitivity
        = sweeps::runSensitivity(job.graph, job.system, job.compileOptions, job.options, engine::builtinCalibration());
    WS_REQUIRE(sensitivity.hasValue());
    WS_REQUIRE(!sensitivity->factors.empty());
    report.sensitivity = *sensitivity;

    const std::string text = report::reportToJson(report);
    const nlohmann::json json = nlohmann::json::parse(text);
    WS_CHECK(json["sensitivity"] == nlohmann::json::parse(sweeps::sensitivityToJson(*sensitivity)));
    const Expected<report::RunReport> read = report::reportFromJson(text, "report.json");
    WS_REQUIRE(read.hasValue());
    WS_REQUIRE(read->sensitivity.has_value());
    WS_CHECK_EQ(report::reportToJson(*read), text);
    WS_CHECK_EQ(read->sensitivity->figure, std::string("samples_per_s"));
    WS_CHECK_EQ(read->sensitivity->baseline, job.run.metrics.samplesPerS);
    WS_REQUIRE(read->sensitivity->factors.size() == sensitivity->factors.size());
    for (std::size_t i = 0; i < sensitivity->factors.size(); ++i) {
        WS_CHECK_EQ(read->sensitivity->factors[i].name, sensitivity->factors[i].name);
        WS_CHECK_EQ(read->sensitivity->factors[i].figureAtLow, sensitivity->factors[i].figureAtLow);
        WS_CHECK_EQ(read->sensitivity->factors[i].figureAtHigh, sensitivity->factors[i].figureAtHigh);
    }

    const std::string html = report::reportHtml(report);
    const std::size_t section = html.find("<h2>What this result depends on</h2>");
    WS_REQUIRE(section != std::string::npos);
    const std::size_t end = html.find("</table>", section);
    WS_REQUIRE(end != std::string::npos);
    const std::string table = html.substr(section, end - section);
    WS_CHECK(table.find("samples/s at low") != std::string::npos);
    for (const sweeps::FactorEffect& factor : sensitivity->factors)
        WS_CHECK(table.find("<td>" + factor.name + "</td>") != std::string::npos);
    WS_CHECK_EQ(std::size_t(std::count(table.begin(), table.end(), '\n')) - 2, sensitivity->factors.size());
}

WS_TEST(reportReaderLocatesWhatIsWrong)
{
    const Job job = gpt3XlOnTwoCs2();
    std::string text = report::reportToJson(reportOf(job));
    const std::size_t at = text.find("\"time_s\"", text.find("\"layers\""));
    const std::size_t line = std::size_t(std::count(text.begin(), text.begin() + std::ptrdiff_t(at), '\n')) + 1;
    const std::size_t valueEnd = text.find(',', at);
    text.replace(at, valueEnd - at, "\"time_s\": \"fast\"");
    const Expected<report::RunReport> bad = report::reportFromJson(text, "a/report.json");
    WS_REQUIRE(!bad.hasValue());
    WS_CHECK_EQ(bad.error().file, std::string("a/report.json"));
    WS_CHECK_EQ(std::size_t(bad.error().line), line);
    WS_CHECK(bad.error().message.find("time_s") != std::string::npos);
    const Expected<report::RunReport> truncated = report::reportFromJson(text.substr(0, 200), "b.json");
    WS_REQUIRE(!truncated.hasValue());
    WS_CHECK(truncated.error().line > 0);
}

WS_TEST(comparisonLinesUpLayersAndTotals)
{
    const Job two = gpt3XlOnTwoCs2(2), four = gpt3XlOnTwoCs2(4);
    report::RunReport a = reportOf(two), b = reportOf(four);
    b.metrics.layers.back().name = "renamed";
    const report::ReportComparison c = report::compareReports(a, b);
    WS_CHECK(c.sameInput);
    WS_CHECK_EQ(c.layers.size(), a.metrics.layers.size() - 1);
    WS_CHECK(c.onlyInA == std::vector<std::string> { a.metrics.layers.back().name });
    WS_CHECK(c.onlyInB == std::vector<std::string> { "renamed" });
    WS_REQUIRE(!c.totals.empty() && c.totals[0].metric == "step_time_s");
    WS_CHECK_EQ(c.totals[0].a, two.run.metrics.stepTimeS);
    WS_CHECK_EQ(c.totals[0].b, four.run.metrics.stepTimeS);
    for (std::size_t i = 0; i < c.layers.size(); ++i) {
        WS_CHECK_EQ(c.layers[i].aTimeS, two.run.metrics.layers[i].timeS);
        WS_CHECK_EQ(c.layers[i].bTimeS, four.run.metrics.layers[i].timeS);
    }
    const nlohmann::json json = nlohmann::json::parse(report::comparisonToJson(c, a, b, "A", "B"));
    WS_CHECK_NEAR(
        json["totals"][0]["change"].get<double>(), four.run.metrics.stepTimeS / two.run.metrics.stepTimeS - 1.0, 1e-12);
}

WS_TEST(runDirectoryKeepsForeignFilesAndClearsLeftovers)
{
    const fs::path dir = waferscope::test::freshDirectory("foreign");
    fs::create_directories(dir);
    std::ofstream(dir / "notes.txt") << "mine";
    std::ofstream(dir / ".report.json.tmp123456") << "half";
    std::ofstream(dir / ".report.json.tmpx") << "not ours";
    WS_REQUIRE(!report::writeRunDirectory(dir.string(), { { "report.json", "{}" } }));
    WS_CHECK_EQ(waferscope::test::readFile(dir / "notes.txt"), std::string("mine"));
    WS_CHECK_EQ(waferscope::test::readFile(dir / "report.json"), std::string("{}"));
    WS_CHECK(!fs::exists(dir / ".report.json.tmp123456"));
    WS_CHECK(fs::exists(dir / ".report.json.tmpx"));
    // A file where the directory should be: a located error, nothing written.
    const std::optional<Diagnostic> error = report::writeRunDirectory((dir / "notes.txt").string(), { { "a", "b" } });
    WS_REQUIRE(error.has_value());
    WS_CHECK(error->message.find("not a directory") != std::string::npos);
    fs::remove_all(dir);
}

WS_TEST(killedWriterLeavesTheOldFileOrTheNew)
{
    // A writer killed while it stages a large report, found by watching for its temporary:
    // the previous files are intact and the next writer clears the leftover.
    const fs::path dir = waferscope::test::freshDirectory("kill");
    const std::vector<report::ReportFile> before { { "report.json", "{\"old\": true}\n" }, { "trace.json", "[]\n" } };
    WS_REQUIRE(!report::writeRunDirectory(dir.string(), before));
    const std::vector<report::ReportFile> after { { "report.json", std::string(96u << 20, ' ') + "{}" },
        { "trace.json", std::string(96u << 20, ' ') + "[1]" } };
    const pid_t child = ::fork();
    WS_REQUIRE(child >= 0);
    if (child == 0) {
        report::writeRunDirectory(dir.string(), after);
        ::_exit(0);
    }
    bool staging = false;
    for (int poll = 0; poll < 20000 && !staging; ++poll) {
        for (const fs::directory_entry& entry : fs::directory_iterator(dir))
            if (entry.path().filename().string().rfind(".report.json.tmp", 0) == 0 && fs::file_size(entry) > 0)
                staging = true;
        if (!staging)
            std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    WS_CHECK(staging);
    WS_CHECK(WIFSIGNALED(status));
    WS_CHECK_EQ(waferscope::test::readFile(dir / "report.json"), before[0].content);
    WS_CHECK_EQ(waferscope::test::readFile(dir / "trace.json"), before[1].content);
    WS_REQUIRE(!report::writeRunDirectory(dir.string(), before));
    std::size_t entries = 0;
    for ([[maybe_unused]] const fs::directory_entry& entry : fs::directory_iterator(dir))
        ++entries;
    WS_CHECK_EQ(entries, std::size_t(2));
    fs::remove_all(dir);
}
