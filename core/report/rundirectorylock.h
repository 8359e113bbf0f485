#pragma once

#include "core/common/expected.h"

#include <string>
#include <string_view>

namespace waferscope::core::report {

// One WaferScope writer at a time owns a run directory: flock(2) on DIR/.waferscope.lock, taken
// when a run starts (before it computes) and held until its files are committed, so two runs into
// one directory never mix their files or remove each other's temporaries. The kernel drops the
// lock when its process ends, however it ends: a killed run never leaves a directory locked (its
// lock file stays and is taken over). The file holds the holder's pid for the refusal message and
// is removed when the lock is released. flock locks are per open file, so a second lock of the
// same directory in the same process is refused too. Any thread; movable, not copyable.
class RunDirectoryLock {
public:
    static constexpr std::string_view kFileName = ".waferscope.lock";

    // Takes the lock of `directory` (which exists) at once, or refuses without waiting: when
    // another writer holds it, "DIR: error: another WaferScope run is writing this directory
    // (pid N); wait for it or choose another directory". Also refused once the process is
    // stopping (atomicfile.h abandonStagedFiles).
    static Expected<RunDirectoryLock> acquire(const std::string& directory);

    RunDirectoryLock(RunDirectoryLock&& other) noexcept;
    RunDirectoryLock& operator=(RunDirectoryLock&& other) noexcept;
    RunDirectoryLock(const RunDirectoryLock&) = delete;
    RunDirectoryLock& operator=(const RunDirectoryLock&) = delete;
    ~RunDirectoryLock();

    // Removes the lock file, then unlocks. Idempotent.
    void release();
    bool held() const { return m_fd >= 0; }

private:
    RunDirectoryLock(int fd, std::string path);

    int m_fd = -1; // the open, locked lock file; -1 once released or moved from
    std::string m_path; // its absolute path (so a later chdir cannot misdirect its removal)
};

} // namespace waferscope::core::report
