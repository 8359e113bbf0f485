#include "testing.h"

#include "app/cli/argparser.h"

using waferscope::cli::ArgParser;
using waferscope::cli::UsageError;

WS_TEST(parsesFlagsOptionsAndRepeats)
{
    ArgParser parser("t", "test");
    parser.addFlag("json", "");
    parser.addOption("system", "NAME", "");
    parser.addOption("num_csx", "N", "", true);
    const std::vector<std::string> args { "--json", "--system=cs3", "--num_csx", "4", "--num_csx", "8" };
    WS_REQUIRE(parser.parse(args));
    WS_CHECK(parser.has("json"));
    WS_CHECK_EQ(parser.value("system").value_or(""), std::string("cs3"));
    WS_CHECK((parser.values("num_csx") == std::vector<std::string> { "4", "8" }));
    WS_CHECK(!parser.value("missing").has_value());
}

WS_TEST(rejectsMalformedCommandLines)
{
    const std::vector<std::vector<std::string>> bad { { "--nope" }, { "--system" }, { "--json=1" }, { "stray" },
        { "--system", "a", "--system", "b" } };
    for (const auto& args : bad) {
        ArgParser parser("t", "test");
        parser.addFlag("json", "");
        parser.addOption("system", "NAME", "");
        bool threw = false;
        try {
            parser.parse(args);
        } catch (const UsageError&) {
            threw = true;
        }
        WS_CHECK(threw);
    }
}

WS_TEST(helpListsEveryOption)
{
    ArgParser parser("waferscope-cli x", "does x");
    parser.addOption("params", "FILE", "the params YAML");
    const std::vector<std::string> args { "--help" };
    WS_CHECK(!parser.parse(args));
    WS_CHECK_CONTAINS(parser.helpText(), "--params FILE");
    WS_CHECK_CONTAINS(parser.helpText(), "the params YAML");
    WS_CHECK_CONTAINS(parser.helpText(), "--help");
}

WS_TEST(helpOfSeveralLinesContinuesUnderItsFirst)
{
    ArgParser parser("waferscope-cli x", "does x");
    parser.addOption("level", "LEVEL", "model or cycle;\nthe second line");
    // "  --level LEVEL" padded to the help column, 26 characters from the left.
    const std::string first = "  --level LEVEL";
    WS_CHECK_CONTAINS(parser.helpText(),
        first + std::string(26 - first.size(), ' ') + "model or cycle;\n" + std::string(26, ' ') + "the second line\n");
}
