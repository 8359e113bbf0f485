#pragma once

// A minimal test harness for the Qt-free suites (core, CLI): they must build and run with
// WAFERSCOPE_BUILD_GUI=OFF, where Qt Test is not available. GUI suites use Qt Test.
//
//   WS_TEST(presetsLoad) { WS_CHECK_EQ(spec.fabricWidth, 757); }
//
// Each test runs in registration order; a failed WS_REQUIRE ends that test, WS_CHECK goes on.
// The runner prints one line per failure and closes with "N passed, N failed, N skipped".

#include <cmath>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>

namespace waferscope::test {

struct Skip {
    std::string reason;
};
struct Abort { };

void registerTest(const char* name, const char* file, std::function<void()> body);
void reportFailure(const char* file, int line, const std::string& what);

// Directory holding tests/data, the project root and ../shared, set by CMake.
std::string dataDir();
std::string sourceDir();
std::string sharedDir();

// The whole file as bytes; empty when it cannot be read.
std::string readFile(const std::filesystem::path& path);
// A scratch path for this test process, "<temp>/waferscope-test-NAME-PID", removed first (it does
// not exist on return).
std::filesystem::path freshDirectory(const std::string& name);

struct Registrar {
    Registrar(const char* name, const char* file, std::function<void()> body)
    {
        registerTest(name, file, std::move(body));
    }
};

template <typename A, typename B>
std::string describe(const A& actual, const B& expected)
{
    std::ostringstream text;
    text.precision(17);
    text << "got " << actual << ", expected " << expected;
    return text.str();
}

} // namespace waferscope::test

#define WS_TEST(name)                                                                                                  \
    static void name();                                                                                                \
    static ::waferscope::test::Registrar name##Registrar(#name, __FILE__, name);                                       \
    static void name()

#define WS_CHECK(condition)                                                                                            \
    do {                                                                                                               \
        if (!(condition))                                                                                              \
            ::waferscope::test::reportFailure(__FILE__, __LINE__, "check failed: " #condition);                        \
    } while (0)

#define WS_REQUIRE(condition)                                                                                          \
    do {                                                                                                               \
        if (!(condition)) {                                                                                            \
            ::waferscope::test::reportFailure(__FILE__, __LINE__, "requirement failed: " #condition);                  \
            throw ::waferscope::test::Abort {};                                                                        \
        }                                                                                                              \
    } while (0)

#define WS_CHECK_EQ(actual, expected)                                                                                  \
    do {                                                                                                               \
        const auto& wsActual = (actual);                                                                               \
        const auto& wsExpected = (expected);                                                                           \
        if (!(wsActual == wsExpected))                                                                                 \
            ::waferscope::test::reportFailure(__FILE__, __LINE__,                                                      \
                #actual " == " #expected ": " + ::waferscope::test::describe(wsActual, wsExpected));                   \
    } while (0)

#define WS_CHECK_NEAR(actual, expected, relativeTolerance)                                                             \
    do {                                                                                                               \
        const double wsActual = (actual);                                                                              \
        const double wsExpected = (expected);                                                                          \
        if (!(std::fabs(wsActual - wsExpected) <= (relativeTolerance)*std::fabs(wsExpected)))                          \
            ::waferscope::test::reportFailure(__FILE__, __LINE__,                                                      \
                #actual " ~= " #expected ": " + ::waferscope::test::describe(wsActual, wsExpected));                   \
    } while (0)

#define WS_CHECK_CONTAINS(haystack, needle)                                                                            \
    do {                                                                                                               \
        const std::string wsHaystack = (haystack);                                                                     \
        const std::string wsNeedle = (needle);                                                                         \
        if (wsHaystack.find(wsNeedle) == std::string::npos)                                                            \
            ::waferscope::test::reportFailure(                                                                         \
                __FILE__, __LINE__, #haystack " contains " #needle ": '" + wsHaystack + "' lacks '" + wsNeedle + "'"); \
    } while (0)

#define WS_SKIP(reason)                                                                                                \
    throw ::waferscope::test::Skip                                                                                     \
    {                                                                                                                  \
        reason                                                                                                         \
    }
