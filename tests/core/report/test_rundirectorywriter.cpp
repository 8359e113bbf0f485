// core/report RunDirectoryWriter: a run directory's files are committed all or none. A failure at
// any file of the set leaves the old set byte for byte; a writer killed at any point of a commit
// is made whole by the next one to open the directory; a second writer is refused at once, with
// the holder's pid, and touches nothing of the first's.
#include "testing.h"

#include "core/report/commitjournal.h"
#include "core/report/rundirectory.h"
#include "core/report/rundirectorylock.h"
#include "core/report/rundirectorywriter.h"
#include "core/report/tfevents.h"

#include <filesystem>
#include <fstream>
#include <map>

#include <sys/wait.h>
#include <unistd.h>

using namespace waferscope::core;
namespace fs = std::filesystem;

namespace {

using Contents = std::map<std::string, std::string>; // every entry of a directory: name -> bytes

// Every entry, hidden ones too; a directory reads as "<directory>".
Contents contentsOf(const fs::path& dir)
{
    Contents contents;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir))
        contents[entry.path().filename().string()]
            = entry.is_directory() ? std::string("<directory>") : waferscope::test::readFile(entry.path());
    return contents;
}

void put(const fs::path& path, const std::string& bytes)
{
    std::ofstream(path, std::ios::binary) << bytes;
}

const std::string kOldEvents = "events.out.tfevents.1000.host.waferscope";
const std::string kNewEvents = "events.out.tfevents.2000.host.waferscope";

// The directory before: two files the new set replaces, an earlier event file it supersedes, and
// a file of the user's.
Contents oldSet()
{
    return { { "a.txt", "old a" }, { "b.txt", "old b" }, { kOldEvents, "old events" }, { "notes.txt", "mine" } };
}

// The set written: a.txt and b.txt replaced, c.txt new, the event file under a new name.
std::vector<report::ReportFile> newFiles()
{
    std::vector<report::ReportFile> files { { "a.txt", std::string("new a") }, { "b.txt", std::string("new b") },
        { "c.txt", std::string("new c") }, { kNewEvents, std::string("new events") } };
    files.back().supersedes = [](const std::string& name) { return report::isWaferScopeEventFile(name); };
    return files;
}

// The directory after the set is committed, as the set above defines it.
Contents newSet()
{
    return { { "a.txt", "new a" }, { "b.txt", "new b" }, { "c.txt", "new c" }, { kNewEvents, "new events" },
        { "notes.txt", "mine" } };
}

fs::path directoryHolding(const std::string& name, const Contents& contents)
{
    const fs::path dir = waferscope::test::freshDirectory(name);
    fs::create_directories(dir);
    for (const auto& [file, bytes] : contents)
        put(dir / file, bytes);
    return dir;
}

std::string refusal(pid_t holder)
{
    return "another WaferScope run is writing this directory (pid " + std::to_string(holder)
        + "); wait for it or choose another directory";
}

// A one-byte message through a pipe: how a child and the test wait for each other.
void signalPipe(int fd)
{
    const char byte = 1;
    while (::write(fd, &byte, 1) < 0 && errno == EINTR) { }
}

bool awaitPipe(int fd)
{
    char byte = 0;
    ssize_t n = 0;
    while ((n = ::read(fd, &byte, 1)) < 0 && errno == EINTR) { }
    return n == 1;
}

int exitStatusOf(pid_t child)
{
    int status = 0;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace

WS_TEST(aFailureAtAnyFileOfTheSetLeavesTheOldSetWhole)
{
    const std::vector<report::ReportFile> files = newFiles();
    for (std::size_t failAt = 0; failAt < files.size(); ++failAt) {
        const fs::path dir = directoryHolding("failat", oldSet());
        {
            Expected<report::RunDirectoryWriter> writer = report::RunDirectoryWriter::open(dir.string());
            WS_REQUIRE(writer.hasValue());
            report::RunDirectoryWriter open = std::move(writer).value();
            std::size_t calls = 0;
            const std::optional<Diagnostic> failed = open.write(files, nullptr, [&](std::size_t index) {
                ++calls;
                return index == failAt;
            });
            WS_REQUIRE(failed.has_value());
            WS_CHECK_EQ(failed->file, (dir / files[failAt].name).string());
            WS_CHECK_CONTAINS(failed->message, "no file of the set was replaced");
            WS_CHECK_EQ(calls, failAt + 1);
            // Byte for byte the old set and nothing else (no journal, backup or temporary) but the
            // lock file, still held.
            Contents after = contentsOf(dir);
            WS_CHECK_EQ(after.erase(std::string(report::RunDirectoryLock::kFileName)), std::size_t(1));
            WS_CHECK(after == oldSet());
            // The same writer again, without the fault: the new set.
            WS_REQUIRE(!open.write(files));
        }
        WS_CHECK(contentsOf(dir) == newSet()); // and the lock file gone with the writer
        fs::remove_all(dir);
    }
}

WS_TEST(aDirectoryInTheWayOfOneTargetFailsTheWholeSet)
{
    // c.txt is a directory of the user's: the set cannot be committed, and a.txt and b.txt,
    // before it in the set, keep their old bytes.
    Contents before = oldSet();
    const fs::path dir = directoryHolding("inway", before);
    fs::create_directories(dir / "c.txt");
    put(dir / "c.txt" / "inside", "x");
    before["c.txt"] = "<directory>";
    const std::optional<Diagnostic> failed = report::writeRunDirectory(dir.string(), newFiles());
    WS_REQUIRE(failed.has_value());
    WS_CHECK_EQ(failed->file, (dir / "c.txt").string());
    WS_CHECK_CONTAINS(failed->message, "a directory has its name");
    WS_CHECK(contentsOf(dir) == before);
    WS_CHECK_EQ(waferscope::test::readFile(dir / "c.txt" / "inside"), std::string("x"));
    fs::remove_all(dir);
}

WS_TEST(aWriterKilledMidCommitIsMadeWholeByTheNextOne)
{
    // The writer dies (in a child, _exit from the commit's hook) before each rename of the set,
    // and once after the last: the next writer's open() restores the old set when any file was
    // still to be renamed, and finishes the new one when none was.
    const std::size_t count = newFiles().size();
    for (std::size_t crashAt = 0; crashAt <= count; ++crashAt) {
        const fs::path dir = directoryHolding("crash", oldSet());
        const pid_t child = ::fork();
        WS_REQUIRE(child >= 0);
        if (child == 0) {
            Expected<report::RunDirectoryWriter> writer = report::RunDirectoryWriter::open(dir.string());
            if (!writer)
                ::_exit(10);
            report::RunDirectoryWriter open = std::move(writer).value();
            open.write(newFiles(), nullptr, [crashAt](std::size_t index) {
                if (index == crashAt)
                    ::_exit(0);
                return false;
            });
            ::_exit(11); // not reached: the hook ends the process
        }
        WS_REQUIRE(exitStatusOf(child) == 0);
        // What a crash leaves: the journal, and (midway) a directory half old, half new.
        const Contents left = contentsOf(dir);
        WS_CHECK(left.count(std::string(report::kCommitJournalName)) == 1);
        if (crashAt == 1) {
            WS_CHECK_EQ(left.at("a.txt"), std::string("new a"));
            WS_CHECK_EQ(left.at("b.txt"), std::string("old b"));
        }
        {
            Expected<report::RunDirectoryWriter> next = report::RunDirectoryWriter::open(dir.string());
            WS_REQUIRE(next.hasValue());
            Contents recovered = contentsOf(dir);
            recovered.erase(std::string(report::RunDirectoryLock::kFileName));
            WS_CHECK(recovered == (crashAt < count ? oldSet() : newSet()));
        }
        const Contents released = contentsOf(dir);
        WS_CHECK(released == (crashAt < count ? oldSet() : newSet()));
        fs::remove_all(dir);
    }
}

WS_TEST(aDamagedJournalIsRefusedAndNothingIsTouched)
{
    Contents before = oldSet();
    before[std::string(report::kCommitJournalName)] = "waferscope-commit 1\nreplace\t../a.txt\tx\t\nend\n";
    const fs::path dir = directoryHolding("journal", before);
    Expected<report::RunDirectoryWriter> writer = report::RunDirectoryWriter::open(dir.string());
    WS_REQUIRE(!writer.hasValue());
    WS_CHECK_EQ(writer.error().file, (dir / std::string(report::kCommitJournalName)).string());
    WS_CHECK_EQ(writer.error().line, 2);
    WS_CHECK_CONTAINS(writer.error().message, "remove it");
    WS_CHECK(contentsOf(dir) == before);
    fs::remove_all(dir);
}

WS_TEST(aSecondWriterIsRefusedAndLeavesTheFirstsFilesAlone)
{
    const fs::path dir = directoryHolding("second", oldSet());
    int toParent[2], toChild[2];
    WS_REQUIRE(::pipe(toParent) == 0 && ::pipe(toChild) == 0);
    const pid_t child = ::fork();
    WS_REQUIRE(child >= 0);
    if (child == 0) {
        // The first writer stops halfway through staging b.txt until the test lets it go on.
        std::vector<report::ReportFile> files = newFiles();
        files[1] = report::ReportFile("b.txt", report::ContentWriter([&](const auto& sink) {
            sink("new ");
            signalPipe(toParent[1]);
            if (!awaitPipe(toChild[0]))
                ::_exit(12);
            sink("b");
        }));
        bool written = false;
        {
            Expected<report::RunDirectoryWriter> writer = report::RunDirectoryWriter::open(dir.string());
            if (!writer)
                ::_exit(10);
            report::RunDirectoryWriter open = std::move(writer).value();
            written = !open.write(files);
        } // released here: _exit runs no destructor
        ::_exit(written ? 0 : 11);
    }
    WS_REQUIRE(awaitPipe(toParent[0]));
    const Contents staging = contentsOf(dir);
    std::size_t temporaries = 0;
    for (const auto& [name, bytes] : staging)
        temporaries += !report::temporaryTarget(name).empty();
    WS_CHECK_EQ(temporaries, std::size_t(2)); // a.txt's, whole, and b.txt's, half written
    WS_CHECK_EQ(staging.at(std::string(report::RunDirectoryLock::kFileName)), std::to_string(child) + "\n");

    // Refused at once, by open() and by the convenience writer, naming the first writer's pid.
    const Expected<report::RunDirectoryWriter> second = report::RunDirectoryWriter::open(dir.string());
    WS_REQUIRE(!second.hasValue());
    WS_CHECK_EQ(second.error().format(), dir.string() + ": error: " + refusal(child));
    const std::optional<Diagnostic> convenience = report::writeRunDirectory(dir.string(), newFiles());
    WS_REQUIRE(convenience.has_value());
    WS_CHECK_EQ(convenience->message, refusal(child));
    WS_CHECK(contentsOf(dir) == staging); // not one of the first writer's temporaries removed

    signalPipe(toChild[1]);
    WS_CHECK_EQ(exitStatusOf(child), 0);
    WS_CHECK(contentsOf(dir) == newSet());
    for (const int fd : { toParent[0], toParent[1], toChild[0], toChild[1] })
        ::close(fd);
    fs::remove_all(dir);
}

WS_TEST(oneLockPerDirectoryEvenWithinAProcess)
{
    // open() creates the directory; released with nothing written, it is removed again.
    const fs::path parent = waferscope::test::freshDirectory("lock");
    fs::create_directories(parent);
    const fs::path dir = parent / "runs" / "a";
    {
        Expected<report::RunDirectoryWriter> first = report::RunDirectoryWriter::open(dir.string());
        WS_REQUIRE(first.hasValue());
        WS_CHECK(fs::is_directory(dir));
        const Expected<report::RunDirectoryLock> again = report::RunDirectoryLock::acquire(dir.string());
        WS_REQUIRE(!again.hasValue());
        WS_CHECK_EQ(again.error().message, refusal(::getpid()));
    }
    WS_CHECK(!fs::exists(parent / "runs"));
    // A lock file a killed writer left (no process holds it) is taken over and removed after.
    fs::create_directories(dir);
    put(dir / std::string(report::RunDirectoryLock::kFileName), "999999999\n");
    WS_REQUIRE(!report::writeRunDirectory(dir.string(), { { "a.txt", std::string("a") } }));
    WS_CHECK((contentsOf(dir) == Contents { { "a.txt", "a" } }));
    fs::remove_all(parent);
}
