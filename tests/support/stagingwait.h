#pragma once

// For tests and benchmarks that stop a report write midway: waits until a writer is staging a
// given file (core/report/atomicfile.h) with at least some bytes in it.
#include "core/report/atomicfile.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

namespace waferscope::test {

// Whether `dir` came to hold a temporary of `file` of at least `minBytes` before `timeout`
// passed (or `gaveUp` returned true).
inline bool waitForStaging(const std::filesystem::path& dir, const std::string& file, std::uintmax_t minBytes,
    std::chrono::milliseconds timeout, const std::function<bool()>& gaveUp = {})
{
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until && !(gaveUp && gaveUp())) {
        std::error_code error;
        for (const std::filesystem::directory_entry& entry : std::filesystem::directory_iterator(dir, error))
            if (core::report::isTemporaryOf(entry.path().filename().string(), file)
                && std::filesystem::file_size(entry.path(), error) >= minBytes && !error)
                return true;
        std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    return false;
}

} // namespace waferscope::test
