// Behaviour digests: the CLI's --json output for every sample and a few fabric runs, with the keys that time the
// host removed, numbers rounded to 9 significant digits and source paths made relative, hashed with SHA-256. The
// table (tests/data/digests/cli_outputs.tsv) was taken before the refactoring of issue 26, so that it can show the
// refactoring changed no result. An intended change of results rewrites it with
//   WAFERSCOPE_WRITE_DIGESTS=1 build/dev/bin/test_cli --file cli/test_clidigests.cpp
// and the commit says why.
#include "testing.h"

#include "clirunner.h"

#include "core/common/sha256.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace {

using Json = nlohmann::json;

const char* const kHostTimedKeys[] = { "compile_ms", "wall_s", "router_cycles_per_s" };

void canonicalize(Json& value, const std::string& sourceDir)
{
    if (value.is_object()) {
        for (const char* key : kHostTimedKeys)
            value.erase(key);
        for (auto& [key, item] : value.items())
            canonicalize(item, sourceDir);
    } else if (value.is_array()) {
        for (Json& item : value)
            canonicalize(item, sourceDir);
    } else if (value.is_number_float()) {
        const double number = value.get<double>();
        if (std::isfinite(number) && number != 0.0) {
            char text[32];
            std::snprintf(text, sizeof text, "%.9g", number);
            value = std::strtod(text, nullptr);
        }
    } else if (value.is_string()) {
        std::string text = value.get<std::string>();
        for (std::size_t at = text.find(sourceDir); at != std::string::npos; at = text.find(sourceDir, at))
            text.replace(at, sourceDir.size(), "<src>");
        value = text;
    }
}

struct Case {
    std::string name; // "gpt2_small.yaml run cs3 train"
    std::vector<std::string> args;
};

std::vector<Case> cases()
{
    std::vector<Case> all;
    const std::string samples = waferscope::test::sourceDir() + "/samples/";
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(samples))
        if (entry.path().extension() == ".yaml")
            files.push_back(entry.path().filename().string());
    std::sort(files.begin(), files.end());
    for (const std::string& file : files) {
        const std::string path = samples + file;
        all.push_back({ file + " inspect", { "inspect", "--params", path, "--json" } });
        for (const char* system : { "cs2", "cs3" })
            all.push_back(
                { file + " compile " + system, { "compile", "--params", path, "--system", system, "--json" } });
        all.push_back({ file + " compile cs3 inference",
            { "compile", "--params", path, "--system", "cs3", "--mode", "inference", "--json" } });
        all.push_back({ file + " run cs2 train",
            { "run", "--params", path, "--system", "cs2", "--num_csx", "2", "--max_steps", "2", "--json" } });
        all.push_back({ file + " run cs3 inference",
            { "run", "--params", path, "--system", "cs3", "--mode", "inference", "--json" } });
        all.push_back(
            { file + " scale cs2", { "scale", "--params", path, "--system", "cs2", "--num_csx", "1,2,4", "--json" } });
    }
    all.push_back(
        { "fabric uniform 16x16", { "fabric", "--mesh", "16x16", "--rate", "0.05", "--cycles", "2000", "--json" } });
    all.push_back({ "fabric transpose 16x16",
        { "fabric", "--mesh", "16x16", "--traffic", "transpose", "--rate", "0.05", "--cycles", "2000", "--json" } });
    all.push_back({ "fabric gemv 256x256",
        { "fabric", "--kernel", "gemv", "--matrix", "256x256", "--region", "16x16", "--json" } });
    all.push_back({ "fabric gemm_stream 256x256",
        { "fabric", "--kernel", "gemm_stream", "--matrix", "256x256", "--region", "16x16", "--json" } });
    return all;
}

// Exit code and digest of one case, as "code<TAB>sha256" (the digest of stdout when it is not JSON).
std::string outcome(const Case& c)
{
    const waferscope::test::CliResult result = waferscope::test::runCliCaptured(c.args);
    std::string canonical = result.out;
    try {
        Json document = Json::parse(result.out);
        canonicalize(document, waferscope::test::sourceDir());
        canonical = document.dump();
    } catch (const Json::exception&) {
    }
    return std::to_string(result.code) + "\t" + waferscope::core::sha256Hex(canonical);
}

std::filesystem::path table()
{
    return std::filesystem::path(waferscope::test::dataDir()) / "digests" / "cli_outputs.tsv";
}

} // namespace

WS_TEST(cliOutputsMatchTheirRecordedDigests)
{
    const std::vector<Case> all = cases();
    if (std::getenv("WAFERSCOPE_WRITE_DIGESTS")) {
        std::ofstream out(table());
        out << "case\texit\tsha256\n";
        for (const Case& c : all)
            out << c.name << "\t" << outcome(c) << "\n";
        WS_SKIP("digests written to " + table().string());
    }
    std::ifstream in(table());
    WS_REQUIRE(in.good());
    std::map<std::string, std::string> recorded;
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
        const std::size_t tab = line.find('\t');
        if (tab != std::string::npos)
            recorded[line.substr(0, tab)] = line.substr(tab + 1);
    }
    WS_CHECK_EQ(recorded.size(), all.size());
    for (const Case& c : all) {
        const auto found = recorded.find(c.name);
        if (found == recorded.end()) {
            waferscope::test::reportFailure(__FILE__, __LINE__, c.name + ": no recorded digest");
            continue;
        }
        const std::string now = outcome(c);
        if (now != found->second)
            waferscope::test::reportFailure(
                __FILE__, __LINE__, c.name + ": output changed (" + now + ", recorded " + found->second + ")");
    }
}
