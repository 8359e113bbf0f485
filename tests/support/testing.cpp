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
    std::function<void()> body;
};

std::vector<TestCase>& registry()
{
    static std::vector<TestCase> tests;
    return tests;
}

int g_failuresInCurrentTest = 0;

} // namespace

void registerTest(const char* name, std::function<void()> body)
{
    registry().push_back({ name, std::move(body) });
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

// Runs every registered test, or those whose name contains argv[1].
int main(int argc, char** argv)
{
    using namespace waferscope::test;
    int passed = 0, failed = 0, skipped = 0;
    for (const TestCase& test : registry()) {
        if (argc > 1 && std::strstr(test.name, argv[1]) == nullptr)
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
    return failed == 0 ? 0 : 1;
}
