// core/common/names: the names of modes, executions and bounds are a shipped contract (CLI
// options and --json, report.json and report.csv, the GUI's session); each is spelled here as
// docs/CLI.md gives it, and every name reads back as its value.
#include "testing.h"

#include "core/common/names.h"

#include <string>
#include <vector>

using namespace waferscope::core;

namespace {

template <typename Enum>
void checkTable(const std::vector<std::string>& contract)
{
    WS_CHECK(allNames<Enum>() == contract);
    for (const EnumName<Enum>& entry : nameTable<Enum>()) {
        WS_CHECK_EQ(std::string(toString(entry.value)), std::string(entry.name));
        WS_CHECK(fromName<Enum>(entry.name) == entry.value);
    }
    WS_CHECK(!fromName<Enum>("Inference").has_value()); // names are exact: no case folding
    WS_CHECK(!fromName<Enum>("weight streaming").has_value());
}

} // namespace

WS_TEST(namesAreTheShippedStrings)
{
    checkTable<RunMode>({ "train", "inference" });
    checkTable<RunKind>({ "train", "eval", "inference" });
    checkTable<ExecutionChoice>({ "auto", "pipelined", "weight_streaming" });
    checkTable<ExecutionMode>({ "pipelined", "weight_streaming", "inference" });
    // "" is a region no layer ran on; "pipeline" a pipelined stage waiting for the slowest.
    checkTable<Bound>({ "", "compute", "fabric", "io", "latency", "memoryx", "pipeline", "swarmx" });
}

WS_TEST(aRunKindCompilesForItsModeAndBack)
{
    WS_CHECK(compileModeFor(RunKind::Train) == RunMode::Train);
    WS_CHECK(compileModeFor(RunKind::Eval) == RunMode::Train);
    WS_CHECK(compileModeFor(RunKind::Inference) == RunMode::Inference);
    WS_CHECK(runKindFor(RunMode::Train) == RunKind::Train);
    WS_CHECK(runKindFor(RunMode::Inference) == RunKind::Inference);
}

WS_TEST(choiceListsReadAsEnglish)
{
    WS_CHECK_EQ(choiceList(allNames<ExecutionChoice>()), std::string("auto, pipelined or weight_streaming"));
    WS_CHECK_EQ(choiceList({ "train" }), std::string("train"));
    WS_CHECK_EQ(choiceList({}), std::string());
}
