#pragma once

// Runs waferscope-cli in-process (runCli), as the CLI suites do, capturing both streams.
#include "app/cli/cli.h"

#include <sstream>
#include <string>
#include <vector>

namespace waferscope::test {

struct CliResult {
    int code = -1;
    std::string out;
    std::string err;
};

inline CliResult runCliCaptured(const std::vector<std::string>& args)
{
    std::ostringstream out, err;
    CliResult result;
    result.code = cli::runCli(args, out, err);
    result.out = out.str();
    result.err = err.str();
    return result;
}

} // namespace waferscope::test
