#pragma once

#include "core/common/diagnostic.h"
#include "core/common/expected.h"
#include "core/report/commitjournal.h"
#include "core/report/reportfile.h"
#include "core/report/rundirectorylock.h"

#include <atomic>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::core::report {

// The one writer of run directories that every front end uses (`run --model_dir`, `cluster
// --model_dir`, Python's write_report, the GUI's File > Export report). Opened when a run starts,
// before it computes: it takes the directory's lock (rundirectorylock.h; a second writer is
// refused at once), creates the directory, and makes whole a set a killed writer left
// (commitjournal.h). write() then stages the files and commits them all or none. While it is open
// no other WaferScope process touches the directory, so removing leftover temporaries is safe.
// Files not named in a write (nor superseded by one) are left alone. Any thread, one at a time;
// movable, not copyable.
class RunDirectoryWriter {
public:
    // Refusals are located at `directory`: not a directory, cannot be created, another writer
    // holds it, or a journal it cannot read (commitjournal.h recoverFileSet).
    static Expected<RunDirectoryWriter> open(const std::string& directory);

    // Stages every file completely (a reader or a crash finds each file as it was or as it is now,
    // never truncated), then commits them as one set: on any failure, the files of the directory
    // are all as they were. Setting `*cancelled` stops the write within one piece of a file (about
    // 1 MB): nothing is replaced, no temporary stays, and the error says "cancelled". `hook`
    // injects faults into the commit, for tests.
    std::optional<Diagnostic> write(const std::vector<ReportFile>& files, const std::atomic<bool>* cancelled = nullptr,
        const CommitHook& hook = {});

    const std::string& directory() const { return m_directory; }

    RunDirectoryWriter(RunDirectoryWriter&& other) noexcept;
    RunDirectoryWriter& operator=(RunDirectoryWriter&& other) noexcept;
    RunDirectoryWriter(const RunDirectoryWriter&) = delete;
    RunDirectoryWriter& operator=(const RunDirectoryWriter&) = delete;
    // Releases the lock; directories open() created are removed again if no write landed and
    // they are empty.
    ~RunDirectoryWriter();

private:
    RunDirectoryWriter(std::string directory, RunDirectoryLock lock, std::vector<std::string> created);
    void close();

    std::string m_directory; // as the caller named it; "." for ""
    RunDirectoryLock m_lock; // held for the writer's lifetime
    std::vector<std::string> m_created; // directories open() made, deepest first, until a write lands
};

} // namespace waferscope::core::report
