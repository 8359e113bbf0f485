#include "hostilecases.h"

#include "testing.h"

#include <array>
#include <fstream>

#include <sys/stat.h>

namespace fs = std::filesystem;

namespace waferscope::test {

namespace {

// Values a careless or hostile user puts where a YAML scalar belongs.
constexpr std::array kYamlScalars = { "-1", "0", "-0", "1e999", "-1e999", ".nan", ".inf", "-.inf",
    "99999999999999999999999", "0x7fffffff", "1_000", "2.5", "1e-320", "~", "''", "true", "[1, 2]", "{a: 1}",
    "\"768\\r\"", "\"768\\n/etc/x.yaml:1:1: error: fake\"", "\"\\e[31mred\\e[0m\"", "\"\\u2028\"", "\"a\\u202eb\"",
    "\"\\x7f\"", "\"\\0\"", "!!binary aGVsbG8=", "*undefined", "&x 5", "[[[[[[]]]]]]", "\"\"", "-", "?", "@", "`" };

// Bytes inserted anywhere in a text.
constexpr std::array kInsertions = { std::string_view("\0", 1), std::string_view("\x1b[2J"), std::string_view("\x7f"),
    std::string_view("\xff"), std::string_view("\r"), std::string_view("\t"), std::string_view("\xe2\x80\xae"),
    std::string_view("\xc0\xaf"), std::string_view("\n---\n"), std::string_view("\""), std::string_view("'"),
    std::string_view("{"), std::string_view("["), std::string_view("&a "), std::string_view("*zz "),
    std::string_view("<<: 1\n"), std::string_view("!!python/object:os.system "), std::string_view("\xef\xbb\xbf"),
    std::string_view("\n...\n"), std::string_view("%YAML 9.9\n") };

// Values where a JSON value belongs.
constexpr std::array kJsonValues = { "-1", "0", "1e999", "-1e308", "1e-400", "123456789012345678901234567890", "NaN",
    "\"1\"", "null", "[]", "{}", "true", "\"\\u0000\"", "\"\\u001b[2J\"", "\"a\\nb\"", "\"\\u2028\"", "-0", "1.5",
    "\"768\\r\"", "[[[[[[[[1]]]]]]]]", "\"\\ud800\"" };

// Values for command-line options.
const std::array<std::string, 24> kOptionValues = { "-1", "0", "", "1e309", "nan", "18446744073709551616", "1,2,,4",
    "cs9", "CS2", "\x1b[2J", "a\nb", "--json", "1x", "0x0", "100000x100000", "64x64", std::string(2000, '9'),
    std::string("1\0"
                "2",
        3),
    "inf", "-0", "2048", "1,2,4,8,16,32,64,128,256,512,1024,2048,4096", "0.5", "\xe2\x80\xae" };

std::vector<std::size_t> lineStarts(const std::string& text)
{
    std::vector<std::size_t> starts { 0 };
    for (std::size_t i = 0; i < text.size(); ++i)
        if (text[i] == '\n' && i + 1 < text.size())
            starts.push_back(i + 1);
    return starts;
}

std::string replaceAll(std::string text, const std::string& from, const std::string& to)
{
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

} // namespace

HostileCases::HostileCases(std::uint64_t seed, fs::path scratch, fs::path baseReport)
    : m_random(seed)
    , m_scratch(std::move(scratch))
    , m_baseReport(std::move(baseReport))
{
    const fs::path source = sourceDir();
    for (const char* name : { "samples/fc_mnist.yaml", "samples/gpt2_small.yaml", "samples/llama3_8b.yaml",
             "samples/gpt3_xl.yaml", "tests/data/families/llava_tiny.yaml", "tests/data/families/vit_tiny.yaml",
             "tests/data/families/mpt_small.yaml", "tests/data/models/mixtral_8x7b.yaml",
             "tests/data/models/t5_11b.yaml" }) {
        m_params.push_back(readFile(source / name));
        m_paramsNames.push_back(fs::path(name).stem().string());
    }
    m_preset = readFile(source / "resources/hardware/cs2.json");
    m_calibration = readFile(source / "resources/calibration/engine.json");
    // The jobs file names its params relative to itself: make them absolute for the scratch copy.
    m_jobs = replaceAll(readFile(source / "samples/cluster/inference.yaml"), "params: ../",
        "params: " + (source / "samples").string() + "/");
    m_report = readFile(m_baseReport);
}

std::size_t HostileCases::pick(std::size_t count)
{
    return std::uniform_int_distribution<std::size_t>(0, count - 1)(m_random);
}

std::string HostileCases::write(const std::string& name, const std::string& bytes)
{
    const fs::path path = m_scratch / name;
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
    return path.string();
}

std::string HostileCases::hostileScalar()
{
    return kYamlScalars[pick(kYamlScalars.size())];
}

std::string HostileCases::hostileJsonValue()
{
    return kJsonValues[pick(kJsonValues.size())];
}

std::string HostileCases::hostileOptionValue()
{
    return kOptionValues[pick(kOptionValues.size())];
}

std::string HostileCases::mutateYaml(std::string text, std::string& description)
{
    const std::vector<std::size_t> starts = lineStarts(text);
    const std::size_t line = starts[pick(starts.size())];
    const std::size_t lineEnd = std::min(text.find('\n', line), text.size());
    const std::string row = text.substr(line, lineEnd - line);
    const std::size_t colon = row.find(": ");
    switch (pick(14)) {
    case 0: {
        const std::string value = hostileScalar();
        description = "value on line at byte " + std::to_string(line) + " set to " + value;
        if (colon != std::string::npos && row.find('#') == std::string::npos)
            return text.replace(line + colon + 2, row.size() - colon - 2, value);
        return text.insert(line, "hidden_size: " + value + "\n");
    }
    case 1: {
        const std::string_view bytes = kInsertions[pick(kInsertions.size())];
        const std::size_t at = pick(text.size() + 1);
        description = "bytes inserted at " + std::to_string(at);
        return text.insert(at, bytes);
    }
    case 2: {
        const std::size_t at = pick(text.size());
        description = "truncated at " + std::to_string(at);
        return text.substr(0, at);
    }
    case 3:
        description = "line breaks made CR or CRLF";
        return replaceAll(text, "\n", pick(2) == 0 ? "\r" : "\r\n");
    case 4:
        description = "a second document";
        return text + (pick(2) == 0 ? "---\nmodel: {}\n" : "...\nextra: 1\n");
    case 5: {
        const std::size_t times = 2 + pick(3000);
        description = "line at byte " + std::to_string(line) + " repeated " + std::to_string(times) + " times";
        std::string repeated;
        for (std::size_t i = 0; i < times; ++i)
            repeated += row + "\n";
        return text.insert(line, repeated);
    }
    case 6: {
        description = "nested anchors and aliases";
        std::string bomb = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
        for (int level = 1; level < 9; ++level)
            bomb += "l" + std::to_string(level) + ": &l" + std::to_string(level) + " ["
                + replaceAll(std::string(10, 'A'), "A", "*l" + std::to_string(level - 1) + ", ") + "x]\n";
        return bomb + text;
    }
    case 7: {
        description = "merge keys over many keys";
        std::string merges = "base: &base\n";
        for (int i = 0; i < 2000; ++i)
            merges += "  k" + std::to_string(i) + ": " + std::to_string(i) + "\n";
        for (std::size_t j = 0, count = 1 + pick(600); j < count; ++j)
            merges += "m" + std::to_string(j) + ":\n  <<: *base\n";
        return merges + text;
    }
    case 8:
        description = "deep flow nesting";
        return text.insert(line, "deep: " + std::string(200 + pick(200), '[') + "\n");
    case 9:
        description = "line at byte " + std::to_string(line) + " removed";
        return text.erase(line, lineEnd - line);
    case 10:
        description = "tab in indentation at byte " + std::to_string(line);
        return text.insert(line, "\t");
    case 11: {
        description = "key with an invisible or control character";
        const std::string mark = pick(2) == 0 ? "\xe2\x80\x8b" : "\x1b[1m";
        if (colon != std::string::npos)
            return text.insert(line + colon, mark);
        return text.insert(line, "key" + mark + ": 1\n");
    }
    case 12:
        description = "a value of a million characters";
        if (colon != std::string::npos)
            return text.replace(line + colon + 2, row.size() - colon - 2, std::string(1'000'000, '7'));
        return text + "huge: " + std::string(1'000'000, 'x') + "\n";
    default: {
        const std::size_t times = 10000 + pick(40000);
        description = "a key repeated " + std::to_string(times) + " times";
        std::string repeats;
        for (std::size_t i = 0; i < times; ++i)
            repeats += "    num_heads: " + std::to_string(1 + i % 64) + "\n";
        const std::size_t model = text.find("model:\n");
        return model == std::string::npos ? text + repeats : text.insert(model + 7, repeats);
    }
    }
}

std::string HostileCases::mutateJson(std::string text, std::string& description)
{
    // A random value position: after a ':' or '[' or ','.
    std::size_t at = text.find_first_of(":[,", pick(text.size()));
    if (at == std::string::npos)
        at = text.find(':');
    std::size_t valueEnd = text.find_first_of(",}]\n", at + 1);
    if (valueEnd == std::string::npos)
        valueEnd = text.size();
    switch (pick(9)) {
    case 0:
    case 1: {
        const std::string value = hostileJsonValue();
        description = "value at byte " + std::to_string(at) + " set to " + value;
        return text.replace(at + 1, valueEnd - at - 1, " " + value);
    }
    case 2: {
        const std::size_t cut = pick(text.size());
        description = "truncated at " + std::to_string(cut);
        return text.substr(0, cut);
    }
    case 3: {
        const std::string_view bytes = kInsertions[pick(kInsertions.size())];
        const std::size_t where = pick(text.size() + 1);
        description = "bytes inserted at " + std::to_string(where);
        return text.insert(where, bytes);
    }
    case 4:
        description = "deep nesting";
        return text.replace(at + 1, valueEnd - at - 1, std::string(300 + pick(300), '['));
    case 5: {
        const std::size_t key = text.find('"', at);
        description = "a member repeated";
        if (key == std::string::npos)
            return text;
        const std::size_t keyEnd = text.find('"', key + 1);
        return text.insert(key, text.substr(key, keyEnd - key + 1) + ": 0, ");
    }
    case 6: {
        const std::size_t count = 50000 + pick(200000);
        description = "an array of " + std::to_string(count) + " empty objects";
        std::string many = "[";
        for (std::size_t i = 0; i < count; ++i)
            many += i ? ",{}" : "{}";
        return text.replace(at + 1, valueEnd - at - 1, many + "]");
    }
    case 7: {
        const std::size_t line = text.rfind('\n', at);
        const std::size_t end = text.find('\n', at);
        description = "a line removed";
        return line == std::string::npos || end == std::string::npos ? text : text.erase(line, end - line);
    }
    default: {
        const std::array<const char*, 5> others = { "[]", "1", "\"x\"", "null", "" };
        description = "a document of another type";
        return others[pick(others.size())];
    }
    }
}

HostileCase HostileCases::params(int index)
{
    const std::size_t base = pick(m_params.size());
    HostileCase result { "params", m_paramsNames[base] + ": ", {} };
    std::string description;
    const std::string path = write("params" + std::to_string(index) + ".yaml", mutateYaml(m_params[base], description));
    result.description += description;
    switch (pick(4)) {
    case 0:
        result.args = { "inspect", "--params", path };
        break;
    case 1:
        result.args = { "compile", "--params", path, "--system", pick(2) ? "cs2" : "cs3" };
        break;
    case 2:
        result.args = { "run", "--params", path, "--system", "cs3", "--mode", "inference", "--max_steps", "1" };
        break;
    default:
        result.args = { "run", "--params", path, "--system", "cs2", "--mode", "train", "--max_steps", "1" };
    }
    return result;
}

HostileCase HostileCases::preset(int index)
{
    HostileCase result { "preset", "", {} };
    const std::string path
        = write("preset" + std::to_string(index) + ".json", mutateJson(m_preset, result.description));
    result.args = { "hardware", "--preset", path };
    return result;
}

HostileCase HostileCases::calibration(int index)
{
    HostileCase result { "calibration", "", {} };
    const std::string path
        = write("calibration" + std::to_string(index) + ".json", mutateJson(m_calibration, result.description));
    result.args = { "run", "--params", sourceDir() + "/samples/fc_mnist.yaml", "--system", "cs2", "--max_steps", "1",
        "--calibration", path };
    return result;
}

HostileCase HostileCases::jobs(int index)
{
    HostileCase result { "jobs", "", {} };
    const std::string path = write("jobs" + std::to_string(index) + ".yaml", mutateYaml(m_jobs, result.description));
    result.args = { "cluster", "--jobs", path };
    return result;
}

HostileCase HostileCases::report(int index)
{
    HostileCase result { "report", "", {} };
    const std::string path
        = write("report" + std::to_string(index) + ".json", mutateJson(m_report, result.description));
    result.args = { "compare", m_baseReport.string(), path };
    if (pick(2) == 0)
        result.args.push_back("--json");
    return result;
}

HostileCase HostileCases::options(int)
{
    struct Command {
        std::vector<std::string> base;
        std::vector<const char*> options;
    };
    const std::string params = sourceDir() + "/samples/gpt2_small.yaml";
    const std::vector<Command> commands = {
        { { "run", "--params", params },
            { "--system", "--num_csx", "--mode", "--batch_size", "--users", "--prompt_tokens", "--max_steps",
                "--execution", "--calibration", "--tokens", "--sweep", "--level", "--threads", "--seed",
                "--micro_batch_size", "--layers", "--learning_rate", "--max_sequence_length" } },
        { { "compile", "--params", params }, { "--system", "--num_csx", "--mode", "--execution" } },
        { { "scale", "--params", params }, { "--system", "--num_csx", "--mode", "--batch_size", "--execution" } },
        { { "fabric" },
            { "--kernel", "--matrix", "--region", "--sparsity", "--tokens", "--threads", "--seed", "--system",
                "--traffic", "--rate", "--queue-depth", "--hotspot-fraction", "--length" } },
        { { "hardware" }, { "--system", "--preset" } },
        { { "inspect" }, { "--params" } },
        { { "cluster" }, { "--jobs", "--policy", "--what_if" } },
        { { "sensitivity", "--params", params }, { "--system", "--num_csx", "--mode" } },
    };
    const Command& command = commands[pick(commands.size())];
    HostileCase result { "options", "", command.base };
    for (std::size_t i = 0, count = 1 + pick(3); i < count; ++i) {
        const char* option = command.options[pick(command.options.size())];
        const std::string value = hostileOptionValue();
        result.args.push_back(option);
        result.args.push_back(value);
        result.description += std::string(option) + " '" + value + "' ";
    }
    if (pick(8) == 0)
        result.args.push_back("--bogus");
    return result;
}

HostileCase HostileCases::special(int index)
{
    static const std::array<const char*, 4> readers = { "params", "preset", "calibration", "jobs" };
    const fs::path fifo = m_scratch / "a fifo";
    if (!fs::exists(fifo))
        ::mkfifo(fifo.c_str(), 0600);
    const fs::path loop = m_scratch / "loop";
    if (!fs::is_symlink(loop))
        fs::create_symlink(loop, loop);
    const std::string strange = write("new\nline\x1b[1m" + std::to_string(index) + ".yaml", m_params[0]);
    const std::array<std::string, 9> paths = { fifo.string(), "/dev/zero", "/dev/null", m_scratch.string(),
        "/proc/self/mem", "/nonexistent/x.yaml", loop.string(), strange, std::string("a\0b", 3) };
    const std::string path = paths[pick(paths.size())];
    const std::string reader = readers[pick(readers.size())];
    HostileCase result { "special", reader + " at '" + path + "'", {} };
    if (reader == "params")
        result.args = { "inspect", "--params", path };
    else if (reader == "preset")
        result.args = { "hardware", "--preset", path };
    else if (reader == "calibration")
        result.args = { "run", "--params", sourceDir() + "/samples/fc_mnist.yaml", "--calibration", path };
    else
        result.args = { "cluster", "--jobs", path };
    return result;
}

HostileCase HostileCases::make(int index)
{
    // Params files are the most used door and have the most readers behind them.
    switch (index % 10) {
    case 0:
    case 1:
    case 2:
        return params(index);
    case 3:
        return preset(index);
    case 4:
        return calibration(index);
    case 5:
        return jobs(index);
    case 6:
        return report(index);
    case 7:
    case 8:
        return options(index);
    default:
        return special(index);
    }
}

} // namespace waferscope::test
