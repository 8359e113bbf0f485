#include "core/report/commitjournal.h"

#include "core/common/expected.h"
#include "core/common/textfile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace waferscope::core::report {

namespace {

namespace fs = std::filesystem;

// One target of a set: names in the directory. `backup` is empty when the target did not exist.
struct Replacement {
    std::string target;
    std::string temporary;
    std::string backup;
};

struct Journal {
    std::vector<Replacement> replacements; // in rename order
    std::vector<std::string> removals; // superseded files, removed once every target is in place
};

constexpr std::string_view kHeader = "waferscope-commit 1";
constexpr std::string_view kEnd = "end";

Diagnostic systemError(const fs::path& path, const std::string& what)
{
    return Diagnostic { path.string(), 0, 0, what + ": " + std::strerror(errno) };
}

bool present(const fs::path& path)
{
    struct stat info { };
    return ::lstat(path.c_str(), &info) == 0;
}

void syncDirectory(const fs::path& directory)
{
    const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

// Where a target's previous version is kept while the set is committed. One set at a time holds
// the directory (the caller's lock), so the name need not be unique.
std::string backupName(const std::string& target)
{
    return "." + target + ".waferscope-old";
}

// A name the journal may act on: one entry directly in the directory, so a damaged journal can
// never rename or remove anything elsewhere.
bool isPlainName(const std::string& name)
{
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos
        && name.find('\0') == std::string::npos;
}

// Fields are tab-separated, one entry a line; a name's backslashes, tabs and newlines are escaped.
std::string escaped(const std::string& name)
{
    std::string out;
    for (const char c : name)
        out += c == '\\' ? std::string("\\\\") : c == '\t' ? std::string("\\t") : c == '\n' ? "\\n" : std::string(1, c);
    return out;
}

std::optional<std::string> unescaped(const std::string& field)
{
    std::string out;
    for (std::size_t i = 0; i < field.size(); ++i) {
        if (field[i] != '\\') {
            out += field[i];
            continue;
        }
        if (++i == field.size())
            return std::nullopt;
        if (field[i] == '\\')
            out += '\\';
        else if (field[i] == 't')
            out += '\t';
        else if (field[i] == 'n')
            out += '\n';
        else
            return std::nullopt;
    }
    return out;
}

std::string journalText(const Journal& journal)
{
    std::string text = std::string(kHeader) + "\n";
    for (const Replacement& r : journal.replacements)
        text += "replace\t" + escaped(r.target) + "\t" + escaped(r.temporary) + "\t" + escaped(r.backup) + "\n";
    for (const std::string& name : journal.removals)
        text += "remove\t" + escaped(name) + "\n";
    return text + std::string(kEnd) + "\n";
}

Expected<Journal> parseJournal(const std::string& text, const std::string& path)
{
    const auto bad = [&path](int line, const std::string& what) {
        return Diagnostic { path, line, 1,
            what
                + "; this is WaferScope's record of an unfinished commit: check the files of the directory, then "
                  "remove it" };
    };
    Journal journal;
    std::istringstream in(text);
    std::string line;
    int number = 0;
    bool ended = false;
    while (std::getline(in, line)) {
        ++number;
        if (ended)
            return bad(number, "text after the end");
        if (number == 1) {
            if (line != kHeader)
                return bad(number, "expected '" + std::string(kHeader) + "'");
            continue;
        }
        if (line == kEnd) {
            ended = true;
            continue;
        }
        std::vector<std::string> fields;
        for (std::size_t begin = 0;;) {
            const std::size_t tab = line.find('\t', begin);
            const std::optional<std::string> field = unescaped(line.substr(begin, tab - begin));
            if (!field)
                return bad(number, "a malformed escape");
            fields.push_back(*field);
            if (tab == std::string::npos)
                break;
            begin = tab + 1;
        }
        const bool backupOk = fields.size() == 4 && (fields[3].empty() || isPlainName(fields[3]));
        if (fields[0] == "replace" && backupOk && isPlainName(fields[1]) && isPlainName(fields[2]))
            journal.replacements.push_back({ fields[1], fields[2], fields[3] });
        else if (fields[0] == "remove" && fields.size() == 2 && isPlainName(fields[1]))
            journal.removals.push_back(fields[1]);
        else
            return bad(number, "expected 'replace TARGET TEMPORARY BACKUP' or 'remove NAME'");
    }
    if (!ended)
        return bad(number + 1, "the journal is incomplete");
    return journal;
}

// The journal itself is staged and renamed into place, so it is whole or absent.
std::optional<Diagnostic> writeJournal(const fs::path& directory, const Journal& journal)
{
    const fs::path path = directory / std::string(kCommitJournalName);
    const fs::path temporary = directory / (std::string(kCommitJournalName) + ".tmp");
    const std::string text = journalText(journal);
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return systemError(path, "cannot write the commit journal");
    int failure = writeAll(fd, text);
    if (failure == 0 && ::fsync(fd) != 0)
        failure = errno;
    if (::close(fd) != 0 && failure == 0)
        failure = errno;
    if (failure == 0 && std::rename(temporary.c_str(), path.c_str()) != 0)
        failure = errno;
    if (failure != 0) {
        ::unlink(temporary.c_str());
        errno = failure;
        return systemError(path, "cannot write the commit journal");
    }
    syncDirectory(directory);
    return std::nullopt;
}

// A copy of `from` at `to`, flushed: the backup on a file system without hard links.
bool copyFile(const fs::path& from, const fs::path& to)
{
    std::error_code error;
    if (!fs::copy_file(from, to, fs::copy_options::overwrite_existing, error))
        return false;
    const int fd = ::open(to.c_str(), O_RDONLY | O_CLOEXEC);
    const bool synced = fd >= 0 && ::fsync(fd) == 0;
    if (fd >= 0)
        ::close(fd);
    return synced;
}

std::optional<Diagnostic> makeBackup(const fs::path& directory, const Replacement& replacement)
{
    const fs::path target = directory / replacement.target;
    const fs::path backup = directory / replacement.backup;
    struct stat info { };
    if (::lstat(target.c_str(), &info) != 0)
        return systemError(target, "cannot keep the previous file");
    if (S_ISDIR(info.st_mode))
        return Diagnostic { target.string(), 0, 0, "cannot replace the file: a directory has its name" };
    if (::linkat(AT_FDCWD, target.c_str(), AT_FDCWD, backup.c_str(), 0) == 0)
        return std::nullopt;
    const int linkErrno = errno;
    const bool noHardLinks = linkErrno == EPERM || linkErrno == EXDEV || linkErrno == EMLINK || linkErrno == ENOTSUP
        || linkErrno == ENOSYS;
    if (noHardLinks && S_ISREG(info.st_mode) && copyFile(target, backup))
        return std::nullopt;
    errno = linkErrno;
    return systemError(target, "cannot keep the previous file");
}

// Puts the old set back: each backup renamed over its target (a no-op when the target was never
// replaced: the two are links of one file) and new targets that had no previous version removed;
// then the temporaries and the journal. A restore that fails keeps both, so the next writer finds
// a temporary (the set unfinished) and undoes again: every step can be repeated.
std::optional<Diagnostic> undo(const fs::path& directory, const Journal& journal)
{
    std::optional<Diagnostic> failed;
    for (auto it = journal.replacements.rbegin(); it != journal.replacements.rend(); ++it) {
        const fs::path target = directory / it->target;
        const bool renamed = !present(directory / it->temporary);
        if (it->backup.empty()) {
            if (renamed)
                ::unlink(target.c_str());
            continue;
        }
        const fs::path backup = directory / it->backup;
        if (!present(backup))
            continue; // never made, so its target was never replaced
        if (std::rename(backup.c_str(), target.c_str()) != 0) {
            if (!failed)
                failed = systemError(target, "cannot restore the previous file");
            continue;
        }
        ::unlink(backup.c_str()); // still there when the rename was a no-op
    }
    syncDirectory(directory);
    if (failed) {
        failed->message += "; the next WaferScope writer of this directory tries again";
        return failed;
    }
    for (const Replacement& replacement : journal.replacements)
        ::unlink((directory / replacement.temporary).c_str());
    syncDirectory(directory);
    ::unlink((directory / std::string(kCommitJournalName)).c_str());
    syncDirectory(directory);
    return std::nullopt;
}

// Completes a set whose targets are all in place: the superseded files and the backups go, the
// journal last, so a crash here is finished by the next recovery.
void finish(const fs::path& directory, const Journal& journal)
{
    syncDirectory(directory);
    for (const std::string& name : journal.removals)
        ::unlink((directory / name).c_str());
    for (const Replacement& replacement : journal.replacements)
        if (!replacement.backup.empty())
            ::unlink((directory / replacement.backup).c_str());
    syncDirectory(directory);
    ::unlink((directory / std::string(kCommitJournalName)).c_str());
    syncDirectory(directory);
}

void discardAll(const std::vector<StagedFile>& files)
{
    for (const StagedFile& file : files)
        ::unlink(file.temporary.c_str());
}

std::optional<Diagnostic> commitLocked(const fs::path& directory, const std::vector<StagedFile>& files,
    const std::vector<std::string>& superseded, const CommitHook& hook)
{
    Journal journal;
    std::set<std::string> targets;
    std::error_code error;
    for (const StagedFile& file : files) {
        const fs::path target(file.target), temporary(file.temporary);
        Replacement replacement { target.filename().string(), temporary.filename().string(), {} };
        if (!fs::equivalent(target.parent_path().empty() ? "." : target.parent_path(), directory, error)
            || temporary.parent_path() != target.parent_path() || !targets.insert(replacement.target).second) {
            discardAll(files);
            return Diagnostic { file.target, 0, 0, "internal error: not one set of files in " + directory.string(),
                Diagnostic::Kind::Internal };
        }
        if (present(target)) {
            replacement.backup = backupName(replacement.target);
            // Under the lock, after recovery, only a stray has this name; were it left, undoing
            // this set could restore it.
            ::unlink((directory / replacement.backup).c_str());
        }
        journal.replacements.push_back(std::move(replacement));
    }
    for (const std::string& name : superseded)
        if (isPlainName(name) && !targets.count(name))
            journal.removals.push_back(name);
    if (std::optional<Diagnostic> failed = writeJournal(directory, journal)) {
        discardAll(files);
        return failed;
    }
    // Every previous version is kept before the first one is replaced.
    std::optional<Diagnostic> failed;
    for (const Replacement& replacement : journal.replacements)
        if (!replacement.backup.empty() && (failed = makeBackup(directory, replacement)))
            break;
    if (!failed) {
        syncDirectory(directory);
        for (std::size_t i = 0; i < files.size() && !failed; ++i) {
            if (hook && hook(i))
                failed = Diagnostic { files[i].target, 0, 0, "cannot replace the file: failure injected by a test" };
            else if (std::rename(files[i].temporary.c_str(), files[i].target.c_str()) != 0)
                failed = systemError(files[i].target, "cannot replace the file");
        }
    }
    if (failed) {
        if (const std::optional<Diagnostic> stuck = undo(directory, journal))
            failed->message += "; and " + stuck->message + " (" + stuck->file + ")";
        else
            failed->message += "; no file of the set was replaced";
        return failed;
    }
    if (hook)
        hook(files.size());
    finish(directory, journal);
    return std::nullopt;
}

} // namespace

std::optional<Diagnostic> commitFileSet(const std::string& directory, const std::vector<StagedFile>& files,
    const std::vector<std::string>& superseded, const CommitHook& hook)
{
    const fs::path path(directory.empty() ? "." : directory);
    return commitStagedGroup(files, [&] { return commitLocked(path, files, superseded, hook); });
}

std::optional<Diagnostic> recoverFileSet(const std::string& directory)
{
    const fs::path path(directory.empty() ? "." : directory);
    ::unlink((path / (std::string(kCommitJournalName) + ".tmp")).c_str()); // a journal never put in place
    const fs::path journalPath = path / std::string(kCommitJournalName);
    if (!present(journalPath))
        return std::nullopt;
    const Expected<std::string> text = readTextFile(journalPath.string(), std::size_t(16) << 20, "commit journal");
    if (!text)
        return text.error();
    const Expected<Journal> journal = parseJournal(*text, journalPath.string());
    if (!journal)
        return journal.error();
    bool allRenamed = true;
    for (const Replacement& replacement : journal->replacements)
        allRenamed = allRenamed && !present(path / replacement.temporary);
    if (!allRenamed)
        return undo(path, *journal);
    finish(path, *journal);
    return std::nullopt;
}

} // namespace waferscope::core::report
