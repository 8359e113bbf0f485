// No header of its own: the CLI executable's main(), which hands its arguments to runCli (cli.h).
#include "app/cli/cli.h"
#include "app/cli/interrupt.h"

#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv)
{
    waferscope::cli::installInterruptHandling();
    std::ios::sync_with_stdio(false);
    const std::vector<std::string> args(argv + 1, argv + argc);
    const int code = waferscope::cli::runCli(args, std::cout, std::cerr);
    std::cout.flush();
    return code;
}
