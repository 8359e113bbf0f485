#pragma once

#include "core/report/atomicfile.h"

#include <functional>
#include <string>
#include <utility>

namespace waferscope::core::report {

// One file of a run directory (rundirectorywriter.h): its name in the directory and its bytes,
// given whole or produced in pieces while it is staged.
struct ReportFile {
    ReportFile(std::string fileName, std::string text)
        : name(std::move(fileName))
        , content(std::move(text))
    {
    }
    ReportFile(std::string fileName, ContentWriter contentWriter)
        : name(std::move(fileName))
        , writer(std::move(contentWriter))
    {
    }
    std::string name; // file name inside the directory
    std::string content; // the bytes, unless `writer` produces them
    ContentWriter writer;
    // Files of the directory this one replaces under other names (an earlier run's event file):
    // removed in the same commit that puts this one in place.
    std::function<bool(const std::string& name)> supersedes;
};

} // namespace waferscope::core::report
