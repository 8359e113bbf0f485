#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace waferscope::core {

// The closed sets a result or an option is made of, and their one name table. The names are a
// contract: the CLI's options and --json, report.json and report.csv, the GUI's saved session all
// spell them so. Code compares the enums; only the edges convert, through the functions below.

// What a run does (`run --mode`, a jobs file's mode, "mode" in --json and report.json): eval runs
// the forward pass only, on a plan compiled as for training. A plan is compiled for Train or
// Inference only (compileModeFor); `compile --mode` and the GUI's mode box offer those two.
enum class RunMode { Train, Eval, Inference }; // "train", "eval", "inference"

// The execution asked for (`--execution`) and the one the compiler chose.
enum class ExecutionChoice { Auto, Pipelined, WeightStreaming }; // "auto", "pipelined", "weight_streaming"
enum class ExecutionMode { Pipelined, WeightStreaming, Inference }; // "pipelined", "weight_streaming", "inference"

// What limits a layer (and, for the run's bottleneck, the most layer time): the wafer's FMACs
// (compute), its links (fabric), hops and launches (latency), the weight stream's narrowest part
// (io, swarmx, memoryx), or, in a layer pipeline, waiting for the slowest stage (pipeline). None
// is "" (a region no layer ran on). Declared in name order, so that a std::map keyed by Bound
// iterates as one keyed by the names does: ties between bounds resolve the same way.
enum class Bound { None, Compute, Fabric, Io, Latency, MemoryX, Pipeline, SwarmX };

// The mode of the plan a run in `mode` needs: eval's is training's.
constexpr RunMode compileModeFor(RunMode mode)
{
    return mode == RunMode::Inference ? RunMode::Inference : RunMode::Train;
}

template <typename Enum>
struct EnumName {
    Enum value;
    const char* name;
};

// Every value of a set with its name, in declaration order. Defined for the enums above.
template <typename Enum>
std::span<const EnumName<Enum>> nameTable();
template <>
std::span<const EnumName<RunMode>> nameTable<RunMode>();
template <>
std::span<const EnumName<ExecutionChoice>> nameTable<ExecutionChoice>();
template <>
std::span<const EnumName<ExecutionMode>> nameTable<ExecutionMode>();
template <>
std::span<const EnumName<Bound>> nameTable<Bound>();

const char* toString(RunMode mode);
const char* toString(ExecutionChoice execution);
const char* toString(ExecutionMode mode);
const char* toString(Bound bound);

// The name of `value` in its table, "" for a value outside it. Every table lists each value once, at
// the index of its value (a static_assert of inDeclarationOrder where the table is defined).
template <typename Enum>
const char* nameOf(Enum value)
{
    const std::span<const EnumName<Enum>> table = nameTable<Enum>();
    const auto index = std::size_t(value);
    return index < table.size() ? table[index].name : "";
}

// For a table's static_asserts: each value at the index of its value, and no name twice.
template <typename Enum, std::size_t N>
constexpr bool inDeclarationOrder(const EnumName<Enum> (&table)[N])
{
    for (std::size_t i = 0; i < N; ++i)
        if (std::size_t(table[i].value) != i)
            return false;
    return true;
}
template <typename Enum, std::size_t N>
constexpr bool namesUnique(const EnumName<Enum> (&table)[N])
{
    for (std::size_t i = 0; i < N; ++i)
        for (std::size_t j = i + 1; j < N; ++j)
            if (std::string_view(table[i].name) == std::string_view(table[j].name))
                return false;
    return true;
}

// The value spelled `name`, or nothing for a name not in the table.
template <typename Enum>
std::optional<Enum> fromName(std::string_view name)
{
    for (const EnumName<Enum>& entry : nameTable<Enum>())
        if (name == entry.name)
            return entry.value;
    return std::nullopt;
}

// The names of a set, for help texts and option lists.
template <typename Enum>
std::vector<std::string> allNames()
{
    std::vector<std::string> names;
    for (const EnumName<Enum>& entry : nameTable<Enum>())
        names.emplace_back(entry.name);
    return names;
}

// JSON spells these sets by name (toString), never by number: a JSON library that would write an
// enum as its integer finds these deleted overloads by argument-dependent lookup and fails to compile.
template <typename Json>
void to_json(Json&, RunMode) = delete;
template <typename Json>
void to_json(Json&, ExecutionChoice) = delete;
template <typename Json>
void to_json(Json&, ExecutionMode) = delete;
template <typename Json>
void to_json(Json&, Bound) = delete;

// The modes a plan is compiled for, by name ("train", "inference"), and the one spelled `name`
// among them: what `compile --mode` and the GUI's --mode accept.
std::vector<std::string> compileModeNames();
std::optional<RunMode> compileModeFromName(std::string_view name);

// "a, b or c": what an error message says was expected.
std::string choiceList(const std::vector<std::string>& names);

} // namespace waferscope::core
