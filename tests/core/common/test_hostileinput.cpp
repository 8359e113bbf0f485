// Hostile input at the readers' doors (issue 39): the one way in for files (special files, read
// errors, sizes), text shown safely, YAML line breaks, documents, merge keys and repeated keys
// with bounded work, and config patterns on a linear-time engine. Every expectation is written
// out from the rule (the escape of a byte, the line of a marker), not read back from the code.
#include "sanitizer.h"
#include "testing.h"

#include "core/cluster/jobsfile.h"
#include "core/common/diagnostic.h"
#include "core/common/displaytext.h"
#include "core/common/jsondocument.h"
#include "core/common/textfile.h"
#include "core/model/modelloader.h"

#include <filesystem>
#include <fstream>

#include <cerrno>
#include <csignal>

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace waferscope;
using namespace waferscope::core;
namespace fs = std::filesystem;

namespace {

std::string sample(const std::string& name)
{
    return test::readFile(fs::path(test::sourceDir()) / "samples" / name);
}

void writeFile(const fs::path& path, const std::string& bytes)
{
    std::ofstream(path, std::ios::binary) << bytes;
}

std::string replaceAll(std::string text, const std::string& from, const std::string& to)
{
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

// The address space this process has mapped, in bytes (/proc/self/statm counts pages).
std::size_t mappedBytes()
{
    std::ifstream statm("/proc/self/statm");
    std::size_t pages = 0;
    statm >> pages;
    return pages * std::size_t(::sysconf(_SC_PAGESIZE));
}

// Runs `work` in a forked child whose address space may grow by `headroom` bytes past what it has
// mapped when `work` starts, and returns the child's wait status. `work` returns the exit code.
template <typename Work>
int statusUnderAddressLimit(std::size_t headroom, Work work)
{
    const pid_t child = ::fork();
    if (child == 0) {
        const auto lower = [headroom] {
            const rlim_t bytes = mappedBytes() + headroom;
            const rlimit limit { bytes, bytes };
            return ::setrlimit(RLIMIT_AS, &limit) == 0;
        };
        ::_exit(work(lower));
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) { }
    return status;
}

} // namespace

// ---- the one way in ------------------------------------------------------------------------------

WS_TEST(specialFilesAreRefusedWithoutBlocking)
{
    const fs::path dir = test::freshDirectory("specialfiles");
    fs::create_directories(dir);
    const std::string fifo = (dir / "pipe").string();
    WS_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    // No writer ever opens the FIFO: a blocking open or read would hang here (the test's watchdog).
    const Expected<std::string> fromFifo = readTextFile(fifo, 1024, "params file");
    WS_REQUIRE(!fromFifo);
    WS_CHECK_EQ(fromFifo.error().format(), fifo + ":1:1: error: is a FIFO (named pipe), expected a params file");
    const Expected<std::string> fromZero = readTextFile("/dev/zero", 1024, "calibration JSON file");
    WS_REQUIRE(!fromZero);
    WS_CHECK_EQ(fromZero.error().message, std::string("is a character device, expected a calibration JSON file"));
    const Expected<std::string> fromDirectory = readTextFile(dir.string(), 1024, "jobs file");
    WS_REQUIRE(!fromDirectory);
    WS_CHECK_EQ(fromDirectory.error().message, std::string("is a directory, expected a jobs file"));
    const Expected<std::string> prefix = readTextPrefix(fifo, 64, "jobs file");
    WS_CHECK(!prefix && prefix.error().message.find("FIFO") != std::string::npos);
    fs::remove_all(dir);
}

WS_TEST(readErrorsAndOddPathsAreLocated)
{
    // /proc/self/mem is a regular file whose first page is unmapped: read() answers EIO.
    const Expected<std::string> mem = readTextFile("/proc/self/mem", 1 << 20, "params file");
    WS_REQUIRE(!mem);
    WS_CHECK_EQ(mem.error().format(), std::string("/proc/self/mem:1:1: error: read error: input/output error (EIO)"));
    const Expected<std::string> empty = readTextFile("", 1024, "params file");
    WS_CHECK(!empty && empty.error().message.find("empty path") != std::string::npos);
    const std::string withNul = std::string("samples/gpt2_small.yaml") + '\0' + "junk";
    const Expected<std::string> nul = readTextFile(withNul, 1024, "params file");
    WS_CHECK(!nul && nul.error().message.find("NUL") != std::string::npos);
    // The location is one line even when the path holds a newline.
    WS_CHECK(nul.error().format().find('\n') == std::string::npos);
}

WS_TEST(sizeCapHoldsWhateverTheFileSystemReports)
{
    const fs::path dir = test::freshDirectory("sizecap");
    fs::create_directories(dir);
    writeFile(dir / "exact", std::string(100, 'a'));
    writeFile(dir / "over", std::string(101, 'a'));
    const Expected<std::string> exact = readTextFile((dir / "exact").string(), 100, "file");
    WS_CHECK(exact && exact->size() == 100);
    const Expected<std::string> over = readTextFile((dir / "over").string(), 100, "file");
    WS_CHECK(!over && over.error().message == "file is 101 bytes; a file is at most 100 bytes");
    // /proc files report a size of 0; the cap is held by the bytes actually read.
    const Expected<std::string> status = readTextFile("/proc/self/status", 16, "file");
    WS_CHECK(!status && status.error().message == "file is over 16 bytes; a file is at most 16 bytes");
    const Expected<std::string> prefix = readTextPrefix((dir / "over").string(), 10, "file");
    WS_CHECK(prefix && *prefix == std::string(10, 'a'));
    fs::remove_all(dir);
}

// ---- JSON trees when memory runs out -----------------------------------------------------------

WS_TEST(aJsonTreeIsTakenApartWithoutAllocating)
{
    if (test::kUnderAsan)
        WS_SKIP("AddressSanitizer maps terabytes of shadow memory and cannot run under an address-space limit");
    // A flat array of a million numbers: nlohmann's destructor first reserves a vector of a million
    // 16-byte values, 16 MB, which the limit of 1 MB beyond what is mapped refuses, inside a
    // destructor: std::terminate. A JsonTree frees its parts and allocates nothing.
    const auto wide = [] {
        nlohmann::json json = nlohmann::json::array();
        for (int i = 0; i < 1'000'000; ++i)
            json.push_back(i);
        return json;
    };
    const int plain = statusUnderAddressLimit(1 << 20, [&](auto limit) {
        nlohmann::json json = wide();
        if (!limit())
            return 9;
        json = nullptr;
        return 0;
    });
    WS_CHECK(WIFSIGNALED(plain) && WTERMSIG(plain) == SIGABRT); // what the test guards against
    const int tree = statusUnderAddressLimit(1 << 20, [&](auto limit) {
        JsonTree json(wide());
        if (!limit())
            return 9;
        json = JsonTree();
        return json.is_null() ? 0 : 8;
    });
    WS_CHECK(WIFEXITED(tree));
    WS_CHECK_EQ(WEXITSTATUS(tree), 0);
}

WS_TEST(aJsonParseThatRunsOutOfMemoryIsRefusedWithoutAborting)
{
    if (test::kUnderAsan)
        WS_SKIP("AddressSanitizer maps terabytes of shadow memory and cannot run under an address-space limit");
    // 3 million small objects in one array: about 500 MB of tree from 24 MB of text, with 64 MB to
    // grow into. 4 GB of address space reserved beforehand (mapped, never usable) lifts the
    // budget, half the limit, above the tree's estimate, so the counting pass lets the text
    // through and the allocation fails half way: the partial tree is taken apart while the
    // exception unwinds (nlohmann's destructor would abort there) and the answer is exit 3.
    std::string text = "[";
    for (int i = 0; i < 3'000'000; ++i)
        text += i > 0 ? ",{\"a\":1}" : "{\"a\":1}";
    text += "]";
    const int status = statusUnderAddressLimit(64 << 20, [&](auto limit) {
        if (::mmap(nullptr, std::size_t(4) << 30, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
            == MAP_FAILED)
            return 9;
        if (!limit())
            return 9;
        try {
            const Expected<JsonTree> tree = parseJsonDocument(text, "big.json", 8, "not valid JSON: ", "deep");
            if (tree)
                return 4;
            const bool ranOut = tree.error().message.rfind("ran out of memory reading this JSON document", 0) == 0;
            return tree.error().kind == Diagnostic::Kind::CannotMap && ranOut ? 0 : 3;
        } catch (...) {
            return 5;
        }
    });
    WS_CHECK(WIFEXITED(status));
    WS_CHECK_EQ(WEXITSTATUS(status), 0);
}

WS_TEST(aJsonDocumentIsReadAsNlohmannReadsIt)
{
    // The SAX-built tree against nlohmann's own parser, on a text with every kind of value, nesting,
    // a repeated key (the last wins) and escapes.
    const std::string text = R"({"a": [1, -2, 3.5, true, false, null, "x\u00e9", [], {}], "b": {"c": {"d": [[0]]}},
        "a2": 18446744073709551615, "e": "first", "e": "last", "": 0})";
    const Expected<JsonTree> tree = parseJsonDocument(text, "t.json", 8, "not valid JSON: ", "deep");
    WS_REQUIRE(tree);
    WS_CHECK(static_cast<const nlohmann::json&>(*tree) == nlohmann::json::parse(text));
    WS_CHECK_EQ((*tree)["e"].get<std::string>(), std::string("last"));
    const Expected<JsonTree> scalar = parseJsonDocument(" 42 ", "t.json", 8, "not valid JSON: ", "deep");
    WS_CHECK(scalar && scalar->get<int>() == 42);
    // Depth is held before anything is built; a syntax error anywhere still comes first.
    const Expected<JsonTree> deep = parseJsonDocument("[[[[1]]]]", "t.json", 3, "not valid JSON: ", "too deep");
    WS_CHECK(!deep && deep.error().format() == "t.json:1:4: error: nested deeper than 3 levels; too deep");
    const Expected<JsonTree> both = parseJsonDocument("[[[[1]]]],", "t.json", 3, "not valid JSON: ", "too deep");
    WS_CHECK(!both && both.error().message.rfind("not valid JSON: ", 0) == 0);
}

// ---- text shown safely ---------------------------------------------------------------------------

WS_TEST(displayTextEscapesWhatATerminalWouldHide)
{
    WS_CHECK_EQ(displayText("768"), std::string("768"));
    WS_CHECK_EQ(displayText("768\r"), std::string("768\\x0D"));
    WS_CHECK_EQ(displayText("a\nb"), std::string("a\\x0Ab"));
    WS_CHECK_EQ(displayText("\x1b[31mred"), std::string("\\x1B[31mred"));
    WS_CHECK_EQ(displayText("x\x7f"), std::string("x\\x7F"));
    WS_CHECK_EQ(displayText("tab\there"), std::string("tab\\x09here"));
    // U+2028 LINE SEPARATOR is E2 80 A8; U+202E RIGHT-TO-LEFT OVERRIDE is E2 80 AE; U+200B is E2 80 8B.
    WS_CHECK_EQ(displayText("a\xe2\x80\xa8z"), std::string("a\\u{2028}z"));
    WS_CHECK_EQ(displayText("evil\xe2\x80\xaetxt.exe"), std::string("evil\\u{202E}txt.exe"));
    WS_CHECK_EQ(displayText("zero\xe2\x80\x8bwidth"), std::string("zero\\u{200B}width"));
    // U+0085 NEXT LINE (C2 85) is a C1 control; U+FEFF (EF BB BF) the byte-order mark.
    WS_CHECK_EQ(displayText("\xc2\x85"), std::string("\\u{0085}"));
    WS_CHECK_EQ(displayText("\xef\xbb\xbfkey"), std::string("\\u{FEFF}key"));
    // Bytes that are not UTF-8: a stray byte, an overlong form of '/', a surrogate.
    WS_CHECK_EQ(displayText("\xff"), std::string("\\xFF"));
    WS_CHECK_EQ(displayText("\xc0\xaf"), std::string("\\xC0\\xAF"));
    WS_CHECK_EQ(displayText("\xed\xa0\x80"), std::string("\\xED\\xA0\\x80"));
    // Other scripts and symbols stay as they are: é (C3 A9), × (C3 97), 日 (E6 97 A5).
    WS_CHECK_EQ(displayText("caf\xc3\xa9 4\xc3\x97 \xe6\x97\xa5"), std::string("caf\xc3\xa9 4\xc3\x97 \xe6\x97\xa5"));
    WS_CHECK_EQ(displayWidth("caf\xc3\xa9"), std::size_t(4));
}

WS_TEST(aDiagnosticIsOneLineAndItsLocationIsOurs)
{
    const Diagnostic forged { "model.yaml\n/etc/passwd", 3, 5, "got '1\n/etc/x.yaml:1:1: error: fake'" };
    const std::string line = forged.format();
    WS_CHECK(line.find('\n') == std::string::npos);
    WS_CHECK_EQ(line, std::string("model.yaml\\x0A/etc/passwd:3:5: error: got '1\\x0A/etc/x.yaml:1:1: error: fake'"));
    WS_CHECK_EQ((Diagnostic { "f.yaml", 2, 1, "w" }.format("warning")), std::string("f.yaml:2:1: warning: w"));
}

WS_TEST(aValueWithControlCharactersIsShownEscapedInItsError)
{
    const std::string text = replaceAll(sample("gpt2_small.yaml"), "hidden_size: 768", "hidden_size: \"768\\r\"");
    const Expected<ModelConfig> config = readParamsText(text, "gpt2.yaml");
    WS_REQUIRE(!config);
    WS_CHECK(config.error().format().find("got the string \"768\\x0D\"") != std::string::npos);
}

// ---- YAML structure ------------------------------------------------------------------------------

WS_TEST(everyLineBreakYamlAllowsReadsTheSame)
{
    const std::string lf = sample("gpt2_small.yaml");
    const Expected<ModelConfig> reference = readParamsText(lf, "lf.yaml");
    WS_REQUIRE(reference.hasValue());
    const ModelGraph referenceGraph = buildModelGraph(*reference);
    for (const std::string& lineBreak : { std::string("\r"), std::string("\r\n") }) {
        const Expected<ModelConfig> config = readParamsText(replaceAll(lf, "\n", lineBreak), "other.yaml");
        WS_REQUIRE(config.hasValue());
        const ModelGraph graph = buildModelGraph(*config);
        WS_CHECK_EQ(graph.totalParams, referenceGraph.totalParams);
        WS_CHECK_EQ(graph.ops.size(), referenceGraph.ops.size());
    }
    // A lone CR is a line break for locations too: the error sits on the line the user sees.
    const std::string bad = replaceAll(lf, "hidden_size: 768", "hidden_size: [1]");
    const int line = 1 + int(std::count(bad.begin(), bad.begin() + std::ptrdiff_t(bad.find("hidden_size: [1]")), '\n'));
    const Expected<ModelConfig> located = readParamsText(replaceAll(bad, "\n", "\r"), "cr.yaml");
    WS_REQUIRE(!located);
    WS_CHECK_EQ(located.error().line, line);
    WS_CHECK_EQ(located.error().column, 18);
}

WS_TEST(aSecondDocumentIsRefusedAtItsMarker)
{
    const std::string text = sample("gpt2_small.yaml");
    const int lines = int(std::count(text.begin(), text.end(), '\n'));
    const Expected<ModelConfig> two = readParamsText(text + "---\nmodel: {}\n", "two.yaml");
    WS_REQUIRE(!two);
    WS_CHECK_EQ(two.error().line, lines + 1);
    WS_CHECK(two.error().message.find("second YAML document") != std::string::npos);
    const Expected<ModelConfig> ended = readParamsText(text + "...\nextra: 1\n", "ended.yaml");
    WS_CHECK(!ended && ended.error().line == lines + 2);
    // One leading marker, a directive and a closing end marker are a single document.
    WS_CHECK(readParamsText("%YAML 1.1\n---\n" + text + "...\n# done\n", "one.yaml").hasValue());
    // A marker inside a line is text.
    WS_CHECK(readParamsText(text + "comment: a --- b\n", "inline.yaml").hasValue());
}

WS_TEST(mergeKeysMergeOnceAndStayBounded)
{
    // Own keys win over merged ones; earlier merged mappings win over later ones (PyYAML's rule).
    const std::string text = "first: &first {hidden_size: 1024, num_heads: 16}\n"
                             "second: &second {hidden_size: 2048, filter_size: 8192, num_heads: 32}\n"
        + replaceAll(replaceAll(sample("gpt2_small.yaml"), "model:\n", "model:\n    <<: [*first, *second]\n"),
            "    filter_size: 3072\n", "");
    const Expected<ModelConfig> merged = readParamsText(text, "merged.yaml");
    WS_REQUIRE(merged.hasValue());
    WS_CHECK_EQ(merged->hiddenSize, 768); // the model's own key
    WS_CHECK_EQ(merged->numHeads, 12); // own key again (gpt2_small sets num_heads)
    WS_CHECK_EQ(merged->filterSize, 8192); // only the second mapping has it
    // Thousands of keys merged into thousands of mappings: linear work, and a cap on the entries
    // all merges add together (3,000 keys into 400 mappings is 1.2 million entries).
    std::string bomb = "base: &a\n";
    for (int i = 0; i < 3000; ++i)
        bomb += "  k" + std::to_string(i) + ": " + std::to_string(i) + "\n";
    std::string many = bomb;
    for (int j = 0; j < 400; ++j)
        many += "m" + std::to_string(j) + ":\n  <<: *a\n";
    const Expected<ModelConfig> refused = readParamsText(many, "merges.yaml");
    WS_REQUIRE(!refused);
    WS_CHECK(refused.error().message.find("1,000,000") != std::string::npos);
}

WS_TEST(repeatedKeysKeepTheLastAndWarnOnce)
{
    std::string text = sample("gpt2_small.yaml");
    std::string repeats;
    for (int i = 0; i < 5000; ++i)
        repeats += "    filter_size: " + std::to_string(1000 + i) + "\n";
    text = replaceAll(text, "    filter_size: 3072\n", "    filter_size: 3072\n" + repeats);
    const Expected<ModelConfig> config = readParamsText(text, "repeats.yaml");
    WS_REQUIRE(config.hasValue());
    // The original filter_size and 5,000 more: 5,000 repeats, the last value 5999 kept.
    WS_CHECK_EQ(config->filterSize, 5999);
    WS_REQUIRE(config->warnings.size() == 1);
    WS_CHECK(config->warnings[0].message.find("duplicate key 'filter_size'") != std::string::npos);
    WS_CHECK(config->warnings[0].message.find("4,999 more repeated keys") != std::string::npos);
}

WS_TEST(nodesPastTheLimitAreNotBlamedOnAliases)
{
    std::string flat = "model:\n  x: [";
    for (int i = 0; i < 1'100'000; ++i)
        flat += "1,";
    flat += "1]\n";
    const Expected<ModelConfig> refused = readParamsText(flat, "flat.yaml");
    WS_REQUIRE(!refused);
    WS_CHECK(refused.error().message.find("holds more than 1,000,000 YAML nodes") != std::string::npos);
    WS_CHECK(refused.error().message.find("laughs") == std::string::npos);
    WS_CHECK_EQ(refused.error().line, 2);
}

// ---- patterns --------------------------------------------------------------------------------------

WS_TEST(freezePatternsRunInLinearTime)
{
    const std::string llava = test::readFile(fs::path(test::dataDir()) / "families" / "llava_tiny.yaml");
    const Expected<ModelConfig> plain = readParamsText(llava, "llava.yaml");
    WS_REQUIRE(plain.hasValue());
    const ModelGraph reference = buildModelGraph(*plain);
    WS_REQUIRE(reference.frozenParams > 0);
    // The same sets of weights, written with groups a backtracking matcher takes exponential time
    // over on a name that almost matches.
    const std::string groups = replaceAll(llava, R"(freeze: ["^image_model", "^text_model"])",
        R"(freeze: ["^(i|i)(m|m)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)x{0}", "^((t+)+e+)+xt_model", "(a+)+$"])");
    const Expected<ModelConfig> nested = readParamsText(groups, "llava_groups.yaml");
    WS_REQUIRE(nested.hasValue());
    const ModelGraph graph = buildModelGraph(*nested);
    WS_CHECK_EQ(graph.frozenParams, reference.frozenParams);
    WS_CHECK_EQ(graph.totalParams, reference.totalParams);
    // What RE2 cannot run (a backreference) is refused, located at the key.
    const Expected<ModelConfig> backreference
        = readParamsText(replaceAll(llava, R"("^image_model")", R"("(a)\\1")"), "llava_backref.yaml");
    WS_REQUIRE(!backreference);
    WS_CHECK(backreference.error().message.find("not a valid regular expression") != std::string::npos);
}

// ---- jobs files ------------------------------------------------------------------------------------

WS_TEST(aJobsFileOfTheMostJobsIsRead)
{
    // 100,000 jobs (kMaxJobs) in flow style, about 7 MB: within the jobs file's size and within the
    // node count that once refused far smaller files as a 'billion laughs'.
    const std::string params = test::sourceDir() + "/samples/fc_mnist.yaml";
    std::string text = "cluster: {system: cs2, systems: 4}\njobs:\n";
    for (int i = 0; i < cluster::kMaxJobs; ++i)
        text += "  - {name: j" + std::to_string(i) + ", params: " + params
            + ", mode: train, num_csx: 1, max_steps: 10}\n";
    const Expected<cluster::JobsFile> file = cluster::parseJobsFile(text, "many.yaml");
    WS_REQUIRE(file.hasValue());
    WS_CHECK_EQ(file->jobs.size(), std::size_t(cluster::kMaxJobs));
    WS_CHECK_EQ(file->jobs.back().name, "j" + std::to_string(cluster::kMaxJobs - 1));
}
