#pragma once

#include "core/common/diagnostic.h"
#include "core/report/atomicfile.h"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace waferscope::core::report {

// The journal a commit of several files keeps in their directory while it runs (and a killed
// writer leaves behind): which targets it replaces, with what, and where their previous versions
// are kept.
inline constexpr std::string_view kCommitJournalName = ".waferscope-commit";

// Fault injection for tests: called before the rename of file `index` (0-based, in order) and once
// more, with index == files.size(), when every file is in place and before the cleanup. Returning
// true before a rename fails the commit there as a failed rename would; at the end it is ignored
// (the set is committed). A hook that ends the process (a test's child calling _exit) is a crash
// at that point.
using CommitHook = std::function<bool(std::size_t index)>;

// Puts `files` (staged in `directory`, each target a name directly in it) in place as one set
// and removes the files `superseded` names (names in `directory`; one already gone is no error).
// Afterwards either every target holds its new bytes and the superseded files are gone, or, on any
// failure at any file, every target and superseded file is as it was (a target that did not exist
// does not) and the error names the file that failed. The temporaries are consumed either way.
//
// How: the journal (kCommitJournalName, itself written whole or not at all) lists each target,
// its temporary and its backup, a hard link to its previous version made before any rename (a
// copy where the file system has no hard links); then the temporaries are renamed over the
// targets in order, so a reader always finds each file whole. A failure renames the backups back;
// success removes them, the superseded files and the journal. A process killed midway leaves the
// journal, and recoverFileSet() finishes the set or undoes it.
//
// The caller holds the directory's RunDirectoryLock and has run recoverFileSet(): one set at a
// time, and no other writer's temporaries or backups in the directory.
std::optional<Diagnostic> commitFileSet(const std::string& directory, const std::vector<StagedFile>& files,
    const std::vector<std::string>& superseded, const CommitHook& hook = {});

// Makes whole a set that a killed writer left in `directory` (see commitFileSet): when every
// temporary had been renamed, the commit is finished (the new set stays, the superseded files go);
// otherwise it is undone (the old set is restored). Either way the backups, the leftover
// temporaries of that set and the journal are removed. No journal, nothing to do. A journal that
// cannot be read is an error naming it, and nothing is touched. The caller holds the lock.
std::optional<Diagnostic> recoverFileSet(const std::string& directory);

} // namespace waferscope::core::report
