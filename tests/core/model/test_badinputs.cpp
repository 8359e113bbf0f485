// The bad-input corpus (tests/data/bad): every file must be rejected by readParamsFile with the located error that
// expected.tsv lists (line, column, and a keyword the message must contain).
#include "testing.h"

#include "core/model/modelloader.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

using namespace waferscope::core;
using waferscope::test::dataDir;
using waferscope::test::reportFailure;

namespace {

struct BadCase {
    std::string file;
    int line = 0;
    int column = 0;
    std::string keyword;
};

std::string lowercase(std::string text)
{
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return text;
}

std::vector<std::string> splitTabs(const std::string& line)
{
    std::vector<std::string> fields;
    std::size_t start = 0;
    while (true) {
        const std::size_t tab = line.find('\t', start);
        fields.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
        if (tab == std::string::npos)
            return fields;
        start = tab + 1;
    }
}

std::string badDir()
{
    return dataDir() + "/bad";
}

std::vector<BadCase> readExpectations()
{
    std::ifstream stream(badDir() + "/expected.tsv");
    WS_REQUIRE(stream.good());
    std::string line;
    WS_REQUIRE(std::getline(stream, line));
    if (!line.empty() && line.back() == '\r')
        line.pop_back();
    WS_CHECK_EQ(line, std::string("file\tline\tcolumn\tkeyword"));

    std::vector<BadCase> cases;
    int row = 1;
    while (std::getline(stream, line)) {
        ++row;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.empty())
            continue;
        const std::vector<std::string> fields = splitTabs(line);
        if (fields.size() != 4) {
            reportFailure(__FILE__, __LINE__, "expected.tsv row " + std::to_string(row) + " has not 4 fields: " + line);
            continue;
        }
        try {
            cases.push_back({ fields[0], std::stoi(fields[1]), std::stoi(fields[2]), fields[3] });
        } catch (const std::exception&) {
            reportFailure(__FILE__, __LINE__, "expected.tsv row " + std::to_string(row) + " is malformed: " + line);
        }
    }
    return cases;
}

} // namespace

WS_TEST(badCorpusIsFullyListed)
{
    const std::vector<BadCase> cases = readExpectations();
    WS_CHECK(cases.size() >= 25);

    std::set<std::string> listed;
    for (const BadCase& bad : cases) {
        if (!listed.insert(bad.file).second)
            reportFailure(__FILE__, __LINE__, "expected.tsv lists " + bad.file + " twice");
        if (!std::filesystem::exists(badDir() + "/" + bad.file))
            reportFailure(__FILE__, __LINE__, "expected.tsv lists " + bad.file + ", which is not in " + badDir());
        WS_CHECK(bad.line >= 1);
        WS_CHECK(bad.column >= 1);
        WS_CHECK(!bad.keyword.empty());
    }

    // Every entry of the folder (files, and the directory that poses as a .yaml) needs a row.
    for (const auto& entry : std::filesystem::directory_iterator(badDir())) {
        const std::string name = entry.path().filename().string();
        if (name == "expected.tsv" || name.rfind("README", 0) == 0)
            continue;
        if (!listed.count(name))
            reportFailure(__FILE__, __LINE__, name + " is in " + badDir() + " but has no row in expected.tsv");
    }
}

WS_TEST(badInputsFailWithLocatedErrors)
{
    const std::vector<BadCase> cases = readExpectations();
    WS_REQUIRE(!cases.empty());
    for (const BadCase& bad : cases) {
        const std::string path = badDir() + "/" + bad.file;
        const Expected<ModelConfig> config = readParamsFile(path);
        if (config.hasValue()) {
            reportFailure(__FILE__, __LINE__, bad.file + ": accepted, expected an error about '" + bad.keyword + "'");
            continue;
        }
        const Diagnostic& error = config.error();
        const std::string where = bad.file + " (" + error.format() + "): ";
        if (error.line != bad.line || error.column != bad.column)
            reportFailure(__FILE__, __LINE__,
                where + "located at " + std::to_string(error.line) + ":" + std::to_string(error.column) + ", expected "
                    + std::to_string(bad.line) + ":" + std::to_string(bad.column));
        if (lowercase(error.message).find(lowercase(bad.keyword)) == std::string::npos)
            reportFailure(__FILE__, __LINE__, where + "message lacks '" + bad.keyword + "'");
        // The diagnostic names the file as given and formats as FILE:LINE:COL: error: MESSAGE.
        WS_CHECK_EQ(error.file, path);
        WS_CHECK_CONTAINS(
            error.format(), path + ":" + std::to_string(bad.line) + ":" + std::to_string(bad.column) + ": error: ");
    }
}
