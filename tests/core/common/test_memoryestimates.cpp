// The memory budget's estimates held to what the work really takes: each estimated allocation
// (a JSON document, a params file's YAML tree, the graph of a large mixture of experts, a run's
// timeline, the fabric of a kernel and of synthetic traffic) done at three sizes, each in a child
// process (waferscope-memoryprobe), whose peak resident set wait4() reports. What a size takes
// beyond a small baseline of the same work must be within half as much again of what the
// estimates say it adds, either way: higher, the budget would let work through that does not
// fit; lower, it would refuse work that does.
//
// Sanitizers change resident memory (shadow memory, quarantine, redzones), so these checks are
// skipped under them; RelWithDebInfo (the dev preset) allocates as a release build does.
#include "memoryprobe.h"
#include "sanitizer.h"
#include "testing.h"

#include <iostream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>
namespace {

constexpr double kTolerance = 1.5;

void checkEstimates(const std::string& kind, long baseline, const std::vector<long>& sizes)
{
    if (waferscope::test::kUnderSanitizer)
        WS_SKIP("a sanitizer changes resident memory");
    const std::vector<waferscope::test::EstimateRatio> ratios
        = waferscope::test::memoryEstimateRatios(WAFERSCOPE_MEMORYPROBE_PATH, kind, baseline, sizes);
    WS_REQUIRE(ratios.size() == sizes.size());
    for (const waferscope::test::EstimateRatio& ratio : ratios) {
        std::cout << "  " << kind << " " << ratio.size << ": " << ratio.measuredBytes / 1e6 << " MB measured, "
                  << ratio.estimatedBytes / 1e6 << " MB estimated, ratio " << ratio.ratio << "\n";
        if (!ratio.error.empty())
            waferscope::test::reportFailure(__FILE__, __LINE__, ratio.error);
        else if (ratio.ratio < 1.0 / kTolerance || ratio.ratio > kTolerance)
            waferscope::test::reportFailure(__FILE__, __LINE__,
                kind + " " + std::to_string(ratio.size) + ": the peak grew by " + std::to_string(ratio.measuredBytes)
                    + " bytes, the estimate by " + std::to_string(ratio.estimatedBytes));
    }
}

// Runs the CLI with one more environment variable; returns its exit status and stderr.
std::pair<int, std::string> runCli(const std::vector<std::string>& args, const std::string& variable)
{
    std::vector<std::string> environment = waferscope::test::currentEnvironment();
    environment.push_back(variable);
    std::vector<std::string> argv { WAFERSCOPE_CLI_PATH };
    argv.insert(argv.end(), args.begin(), args.end());
    const waferscope::test::ChildOutput child = waferscope::test::runChild(argv, environment, STDERR_FILENO);
    if (!child.started)
        return { -1, "cannot start the CLI" };
    return { WIFEXITED(child.status) ? WEXITSTATUS(child.status) : -1, child.text };
}

} // namespace

WS_TEST(aJsonDocumentTakesWhatItsEstimateSays)
{
    // Report-like layer rows, 10 to 40 MB of text: the tree nlohmann builds, about six times it.
    checkEstimates("json", 1, { 10, 20, 40 });
}

WS_TEST(aParamsFileTreeTakesWhatItsEstimateSays)
{
    // A flow sequence of 100,000 to 400,000 small scalars, a node for every two bytes.
    checkEstimates("yaml", 1, { 100, 200, 400 });
}

WS_TEST(aLargeMixtureOfExpertsGraphTakesWhatItsEstimateSays)
{
    // 32 to 128 blocks of 1,024 SwiGLU experts: 98,000 to 393,000 expert tensors.
    checkEstimates("moe", 2, { 32, 64, 128 });
}

WS_TEST(aRunTimelineTakesWhatItsEstimateSays)
{
    // GPT-3 XL by weight streaming on CS-2, 10 to 40 steps of some 14,000 events each, with the
    // FrameSource of the run.
    checkEstimates("timeline", 1, { 10, 20, 40 });
}

WS_TEST(aKernelRegionTakesWhatItsEstimateSays)
{
    // row_broadcast on regions of 128 x 128 to 512 x 512 PEs: the fabric's state, not the
    // operands (16 floats a PE), is what grows.
    checkEstimates("kernel", 8, { 128, 256, 512 });
}

WS_TEST(aTrafficMeshTakesWhatItsEstimateSays)
{
    checkEstimates("traffic", 8, { 256, 512, 1024 });
}

WS_TEST(theFabricCommandRefusesAtTheOptionUnderALowerBudget)
{
    // 100 MB is less than a 1024 x 1024 region's state (about 700 bytes a PE) and than a
    // 1024 x 1024 mesh's (about 300), more than 32 x 32's.
    const std::string limit = "WAFERSCOPE_MEMORY_LIMIT_MB=100";
    const auto [kernelStatus, kernelError]
        = runCli({ "fabric", "--kernel", "row_broadcast", "--region", "1024x1024", "--length", "16" }, limit);
    WS_CHECK_EQ(kernelStatus, 3);
    WS_CHECK_CONTAINS(kernelError, "--region: error: row_broadcast on a 1024x1024 region (its fabric state ");
    WS_CHECK_CONTAINS(kernelError, "more than the 100 MB a model or run may use (WAFERSCOPE_MEMORY_LIMIT_MB=100)");
    const auto [trafficStatus, trafficError]
        = runCli({ "fabric", "--mesh", "1024x1024", "--cycles", "10", "--queue-depth", "8" }, limit);
    WS_CHECK_EQ(trafficStatus, 3);
    WS_CHECK_CONTAINS(trafficError, "--mesh: error: the fabric state of a 1024x1024 mesh (queue depth 8) would need ");
    WS_CHECK_CONTAINS(trafficError, "use a smaller --mesh or --queue-depth");
    const auto [smallStatus, smallError] = runCli({ "fabric", "--mesh", "32x32", "--cycles", "100" }, limit);
    WS_CHECK_EQ(smallStatus, 0);
    WS_CHECK_EQ(smallError, std::string());
}
