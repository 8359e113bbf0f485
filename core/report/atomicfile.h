#pragma once

#include "core/common/diagnostic.h"
#include "core/common/expected.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace waferscope::core::report {

// Writes `content` to `path` atomically: into a temporary file beside it, flushed, then renamed
// over the target, so a reader (or a crash) sees the previous file or the new one, never a
// truncated one. Returns the error (naming the path) when it cannot, and leaves no temporary.
std::optional<Diagnostic> writeFileAtomically(const std::string& path, const std::string& content);

// The two halves of writeFileAtomically, for writing several files with the shortest window
// between the first and the last replacement: stage all (the slow part), then commit all
// (commitjournal.h puts a set of them in place all or nothing).
struct StagedFile {
    std::string temporary; // ".NAME.tmpNNNNNN" beside the target, complete and flushed
    std::string target;
};
Expected<StagedFile> stageFile(const std::string& path, const std::string& content);
// Produces a file's bytes in pieces through `sink`, so a large file is never held whole.
using ContentWriter = std::function<void(const std::function<void(std::string_view)>& sink)>;
Expected<StagedFile> stageFile(const std::string& path, const ContentWriter& writer);
std::optional<Diagnostic> commitFile(const StagedFile& staged); // removes the temporary on failure
// Runs `commit`, which puts `files` in place or removes them (commitFileSet), as one step that
// abandonStagedFiles() waits for, so an interrupt never stops a set midway; then forgets their
// temporaries, whatever became of them. Once the process is stopping it removes them and refuses,
// with nothing replaced.
std::optional<Diagnostic> commitStagedGroup(
    const std::vector<StagedFile>& files, const std::function<std::optional<Diagnostic>()>& commit);
void discardFile(const StagedFile& staged);

// For a process that is being stopped (Ctrl-C, SIGTERM): removes every temporary staged and not
// yet committed or discarded, in this process, and refuses all later staging, so the process can
// end with no partial file left behind. Waits for a commitStagedGroup in progress. Thread-safe;
// call it from a normal thread (the CLI's signal thread), not from a signal handler.
void abandonStagedFiles();
// Directories a writer created for files it has not committed yet, deepest first: removed by
// abandonStagedFiles() (only while empty), so an interrupted first write leaves no empty
// directory behind. The writer forgets them once its files are committed, or removes them itself
// when its write fails.
void registerCreatedDirectories(const std::vector<std::string>& deepestFirst);
void forgetCreatedDirectories(const std::vector<std::string>& deepestFirst);
// Lock files this process holds (rundirectorylock.h): removed by abandonStagedFiles() before the
// created directories, while the process still holds their locks. registerLockFile() refuses
// (false) once the process is stopping; removeLockFile() unlinks the file unless
// abandonStagedFiles() did already, so a lock file is removed once and only by its holder.
bool registerLockFile(const std::string& path);
void removeLockFile(const std::string& path);
// How many temporaries are staged now (for tests).
std::size_t stagedFileCount();

// Thrown by a ContentWriter's sink, or by the writer itself, to stop staging a file: stageFile
// removes the temporary and returns the error "cancelled".
struct StagingCancelled { };

// Writes all of `bytes` to `fd` (retrying interrupted and partial writes): 0, or the errno of the
// failure (ENOSPC for a write that made no progress).
int writeAll(int fd, std::string_view bytes);

// Whether `name` is a temporary that stageFile made for `target` (a leftover of a killed writer).
bool isTemporaryOf(const std::string& name, const std::string& target);
// The target a temporary named `name` was staged for; empty when `name` is not a temporary.
std::string temporaryTarget(const std::string& name);

} // namespace waferscope::core::report
