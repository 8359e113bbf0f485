// waferscope-cli validate: every published figure recomputed beside its published value; the
// JSON contract, the figures against what was published, the command each lists, the README's
// copy of the table.
#include "testing.h"

#include "clirunner.h"

#include "core/engine/calibration.h"
#include "core/validation/validation.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Result = waferscope::test::CliResult;

// One `validate --json` for the suite: it runs every figure's sensitivity sweep, which takes a
// while under the sanitizers.
const nlohmann::json& validateJson()
{
    static const nlohmann::json document = [] {
        const Result result = waferscope::test::runCliCaptured({ "validate", "--json", "--quiet" });
        if (result.code != 0)
            throw std::runtime_error("validate failed: " + result.err);
        return nlohmann::json::parse(result.out);
    }();
    return document;
}

} // namespace

WS_TEST(validateJsonHoldsTheContractKeysAndItsOwnArithmetic)
{
    const nlohmann::json& document = validateJson();
    const auto& figures = document.at("figures");
    WS_REQUIRE(figures.size() == 9);
    std::map<std::string, nlohmann::json> byId;
    for (const auto& figure : figures) {
        for (const char* key : { "id", "published", "unit", "source", "date", "conditions", "command", "profile",
                 "fitted", "reported_only", "predicted", "low", "high", "error_pct", "within_range" })
            WS_CHECK(figure.contains(key));
        byId[figure.at("id").get<std::string>()] = figure;
        const double predicted = figure.at("predicted").get<double>();
        const double low = figure.at("low").get<double>();
        const double high = figure.at("high").get<double>();
        WS_CHECK(low <= predicted && predicted <= high);
        if (figure.at("published").is_number()) { // error against the stated value
            const double published = figure.at("published").get<double>();
            WS_CHECK_NEAR(figure.at("error_pct").get<double>(), (predicted - published) / published * 100.0, 1e-9);
            WS_CHECK_EQ(figure.at("within_range").get<bool>(), low <= published && published <= high);
        } else { // a claimed range: the distance to it, 0 inside
            const double from = figure.at("published")[0].get<double>();
            const double to = figure.at("published")[1].get<double>();
            const double expected = predicted < from ? (predicted - from) / from * 100.0
                : predicted > to                     ? (predicted - to) / to * 100.0
                                                     : 0.0;
            WS_CHECK_NEAR(figure.at("error_pct").get<double>(), expected, 1e-9);
        }
    }
    // Each profile was fitted to one figure, and only those read as fitted: the launch profile to
    // 8B at 1,800 tokens/s, the 2024-11 profile to 405B at 969.
    int fitted = 0;
    for (const auto& figure : figures)
        fitted += figure.at("fitted").get<bool>() ? 1 : 0;
    WS_CHECK_EQ(fitted, 2);
    WS_CHECK(byId.at("llama3p1_8b_decode_cs3").at("fitted").get<bool>());
    WS_CHECK(byId.at("llama3p1_405b_decode_cs3").at("fitted").get<bool>());
    WS_CHECK_EQ(byId.at("llama3p1_405b_decode_cs3").at("profile").get<std::string>(), std::string("2024-11"));
    WS_CHECK_NEAR(byId.at("llama3p1_405b_decode_cs3").at("predicted").get<double>(), 969.0, 5.0);
    // The acceptance rate's range spans the 405B figure: fewer tokens a pass at its low end.
    WS_CHECK(byId.at("llama3p1_405b_decode_cs3").at("low").get<double>() < 900.0);
    WS_CHECK(byId.at("llama3p1_405b_decode_cs3").at("high").get<double>() > 1050.0);
    // The time to first token is a prediction of the same profile; its miss is explained.
    WS_CHECK(!byId.at("llama3p1_405b_ttft_cs3").at("fitted").get<bool>());
    WS_CHECK_EQ(byId.at("llama3p1_405b_ttft_cs3").at("unit").get<std::string>(), std::string("s"));
    WS_CHECK(byId.at("waferllm_llama3_8b_decode_wse2").at("reported_only").get<bool>());
    // Against what Cerebras published: the fit itself, the 70B rate within 15%, the wafer counts,
    // the claimed ranges of scaling and sparsity.
    WS_CHECK_NEAR(byId.at("llama3p1_8b_decode_cs3").at("predicted").get<double>(), 1800.0, 9.0);
    WS_CHECK(std::fabs(byId.at("llama3p1_70b_decode_4cs3").at("error_pct").get<double>()) <= 15.0);
    WS_CHECK_EQ(byId.at("llama3p1_70b_wafers").at("predicted").get<double>(), 4.0);
    WS_CHECK_EQ(byId.at("llama3p1_8b_wafers").at("predicted").get<double>(), 1.0);
    WS_CHECK_EQ(byId.at("gpt3_xl_16cs2_speedup").at("error_pct").get<double>(), 0.0);
    WS_CHECK_EQ(byId.at("gpt3_xl_sparse90_speedup").at("error_pct").get<double>(), 0.0);
}

WS_TEST(eachFigureIsWhatItsCommandPrints)
{
    // The listed command, run with the repository's samples, gives the predicted figure.
    const nlohmann::json& document = validateJson();
    for (const auto& figure : document.at("figures")) {
        if (figure.at("id") != "llama3p1_70b_decode_4cs3" && figure.at("id") != "gpt3_xl_16cs2_speedup"
            && figure.at("id") != "llama3p1_405b_decode_cs3")
            continue;
        std::istringstream words(figure.at("command").get<std::string>());
        std::vector<std::string> args;
        for (std::string word; words >> word;) {
            if (word == "waferscope-cli")
                continue;
            args.push_back(word.rfind("samples/", 0) == 0 ? waferscope::test::sourceDir() + "/" + word : word);
        }
        args.push_back("--json");
        const Result result = waferscope::test::runCliCaptured(args);
        WS_REQUIRE(result.code == 0);
        const nlohmann::json printed = nlohmann::json::parse(result.out);
        const double value = printed.contains("points") ? printed.at("points").back().at("speedup").get<double>()
                                                        : printed.at("tokens_per_s").get<double>();
        WS_CHECK_NEAR(value, figure.at("predicted").get<double>(), 1e-9 * value);
    }
}

WS_TEST(theReadmeCarriesTheValidationTable)
{
    const Result result = waferscope::test::runCliCaptured({ "validate", "--markdown", "--quiet" });
    WS_REQUIRE(result.code == 0);
    std::ifstream in(waferscope::test::sourceDir() + "/README.md");
    std::stringstream text;
    text << in.rdbuf();
    const std::string readme = text.str();
    const std::string begin = "<!-- validate:begin -->\n";
    const std::size_t from = readme.find(begin);
    const std::size_t to = readme.find("<!-- validate:end -->");
    WS_REQUIRE(from != std::string::npos && to != std::string::npos && to > from);
    const std::string copy = readme.substr(from + begin.size(), to - from - begin.size());
    WS_CHECK_EQ(copy, result.out); // regenerate with: waferscope-cli validate --markdown
}

WS_TEST(validateTakesACalibrationAndRefusesABadOne)
{
    // --calibration predicts every figure with that calibration (a cheap figure here: a wafer
    // count, compiled only).
    const auto& figures = waferscope::core::validation::builtinFigures();
    const auto figure
        = std::find_if(figures.begin(), figures.end(), [](const auto& f) { return f.id == "llama3p1_8b_wafers"; });
    WS_REQUIRE(figure != figures.end());
    const auto launch = waferscope::core::engine::resolveCalibration("2024-08-launch");
    WS_REQUIRE(launch.hasValue());
    const auto result = waferscope::core::validation::evaluate(*figure, &launch.value());
    WS_REQUIRE(result.hasValue());
    WS_CHECK_EQ(result->profile, std::string("2024-08-launch"));
    WS_CHECK(result->notes.empty()); // no fallback note: the named calibration was used
    WS_CHECK_EQ(result->predicted, 1.0);
    const Result unknown = waferscope::test::runCliCaptured({ "validate", "--calibration", "1999-01" });
    WS_CHECK_EQ(unknown.code, 2);
    WS_CHECK_CONTAINS(unknown.err, "2024-08-launch");
}

WS_TEST(sensitivityJsonHoldsTheContractKeys)
{
    // GPT-3 XL on 16 CS-2 and Llama 3.1 70B inference on 4 CS-3, as the users run them.
    const std::string samples = waferscope::test::sourceDir() + "/samples/";
    for (const std::vector<std::string>& args :
        { std::vector<std::string> {
              "sensitivity", "--params", samples + "gpt3_xl.yaml", "--system", "cs2", "--num_csx", "16", "--json" },
            std::vector<std::string> { "sensitivity", "--params", samples + "llama3p1_70b.yaml", "--system", "cs3",
                "--mode", "inference", "--json" } }) {
        const Result result = waferscope::test::runCliCaptured(args);
        WS_REQUIRE(result.code == 0);
        const nlohmann::json document = nlohmann::json::parse(result.out);
        for (const char* key : { "figure", "baseline", "factors" })
            WS_CHECK(document.contains(key));
        WS_REQUIRE(!document.at("factors").empty());
        double previous = 1e300;
        for (const auto& factor : document.at("factors")) {
            for (const char* key :
                { "name", "reason", "value", "low_value", "high_value", "figure_at_low", "figure_at_high" })
                WS_CHECK(factor.contains(key));
            const double impact
                = std::fabs(factor.at("figure_at_high").get<double>() - factor.at("figure_at_low").get<double>());
            WS_CHECK(impact <= previous);
            previous = impact;
        }
    }
    WS_CHECK_EQ(waferscope::test::runCliCaptured({ "sensitivity", "--params", samples + "missing.yaml" }).code, 2);
}

// A calibration file whose profile sets region_sizing "stacked": compile stacks Llama 3.1 70B's
// blocks in SRAM tiers on the same 4 wafers and says why; the cycle level refuses the stacked plan.
WS_TEST(aStackedProfileCompilesTiersAndTheCycleLevelRefusesThem)
{
    nlohmann::json calibration = nlohmann::json::parse(waferscope::core::engine::builtinCalibrationText());
    calibration["profiles"]["2024-08-launch"]["mechanisms"]["region_sizing"] = "stacked";
    const std::filesystem::path directory = waferscope::test::freshDirectory("stacked-calibration");
    std::filesystem::create_directories(directory);
    const std::string file = (directory / "stacked.json").string();
    std::ofstream(file) << calibration.dump(2);
    const std::string samples = waferscope::test::sourceDir() + "/samples/";
    const Result compiled = waferscope::test::runCliCaptured({ "compile", "--params", samples + "llama3p1_70b.yaml",
        "--system", "cs3", "--mode", "inference", "--calibration", file, "--json" });
    WS_REQUIRE(compiled.code == 0);
    const nlohmann::json plan = nlohmann::json::parse(compiled.out);
    WS_CHECK(plan.at("stacked_layers").get<bool>());
    WS_CHECK_EQ(plan.at("num_systems").get<int>(), 4);
    int deepest = 0;
    for (const auto& region : plan.at("regions"))
        deepest = std::max(deepest, region.at("tier").get<int>());
    WS_CHECK(deepest >= 2);
    const auto notes = plan.at("notes").get<std::vector<std::string>>();
    WS_CHECK(std::any_of(notes.begin(), notes.end(),
        [](const std::string& note) { return note.find("(stacked)") != std::string::npos; }));
    const Result cycle = waferscope::test::runCliCaptured({ "run", "--params", samples + "llama3_8b.yaml", "--system",
        "cs3", "--mode", "inference", "--level", "cycle", "--calibration", file });
    WS_CHECK_EQ(cycle.code, 3);
    WS_CHECK_CONTAINS(cycle.err, "stacks blocks in SRAM tiers");
    std::filesystem::remove_all(directory);
}
