#include "testing.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <sstream>
#include <vector>

#include <unistd.h>

namespace waferscope::test {

namespace {

struct TestCase {
    const char* name;
    const char* file; // the source file that defines it
    std::function<void()> body;
};

bool endsWith(const char* text, const char* suffix)
{
    const std::size_t length = std::strlen(text), suffixLength = std::strlen(suffix);
    return length >= suffixLength && std::strcmp(text + length - suffixLength, suffix) == 0;
}

std::vector<TestCase>& registry()
{
    static std::vector<TestCase> tests;
    return tests;
}

int g_failuresInCurrentTest = 0;

} // namespace

void registerTest(const char* name, const char* file, std::function<void()> body)
{
    registry().push_back({ name, file, std::move(body) });
}

void reportFailure(const char* file, int line, const std::string& what)
{
    ++g_failuresInCurrentTest;
    std::printf("  %s:%d: %s\n", file, line, what.c_str());
}

std::string readFile(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::filesystem::path freshDirectory(const std::string& name)
{
    const std::filesystem::path dir
        = std::filesystem::temp_directory_path() / ("waferscope-test-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    return dir;
}

std::string dataDir()
{
    return WAFERSCOPE_TEST_DATA_DIR;
}
std::string sourceDir()
{
    return WAFERSCOPE_SOURCE_DIR;
}
std::string sharedDir()
{
    return std::string(WAFERSCOPE_SOURCE_DIR) + "/../shared";
}

} // namespace waferscope::test

// Runs every registered test; those whose name contains argv[1]; or, with `--file PATH`, those
// defined in the source file whose path ends with PATH (CTest has an entry per file, so that a
// failure is named by its file). A filter that selects nothing is a failure.
int main(int argc, char** argv)
{
    using namespace waferscope::test;
    const bool byFile = argc > 2 && std::strcmp(argv[1], "--file") == 0;
    const char* filter = byFile ? argv[2] : argc > 1 ? argv[1] : nullptr;
    int passed = 0, failed = 0, skipped = 0;
    for (const TestCase& test : registry()) {
        if (filter && (byFile ? !endsWith(test.file, filter) : std::strstr(test.name, filter) == nullptr))
            continue;
        g_failuresInCurrentTest = 0;
        std::printf("%s\n", test.name);
        try {
            test.body();
        } catch (const Skip& skip) {
            std::printf("  SKIP %s\n", skip.reason.c_str());
            ++skipped;
            continue;
        } catch (const Abort&) {
        } catch (const std::exception& error) {
            reportFailure(__FILE__, __LINE__, std::string("unexpected exception: ") + error.what());
        }
        (g_failuresInCurrentTest == 0 ? passed : failed)++;
        if (g_failuresInCurrentTest != 0)
            std::printf("  FAIL %s\n", test.name);
    }
    std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    if (filter && passed + failed + skipped == 0) {
        std::printf("no test matches '%s'\n", filter);
        return 1;
    }
    return failed == 0 ? 0 : 1;
}
