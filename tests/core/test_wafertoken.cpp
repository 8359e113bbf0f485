// Whole tokens of small decoders on a small wafer at cycle level: every region's kernel on the
// fabric, the streams between them, the argmax fed back to the embedding; the tokens and
// logits against the reference forward pass.
#include "corefixtures.h"
#include "testing.h"

#include "core/cyclelevel/cyclerun.h"
#include "core/cyclelevel/waferdecoder.h"

#include <cmath>
#include <iostream>

using namespace waferscope::core;
using namespace waferscope::core::cyclelevel;

namespace {

// CS-2 with a small program rectangle: the same PE, a fabric small enough for a test.
SystemSpec smallWafer(int width, int height)
{
    SystemSpec system = waferscope::test::preset("cs2");
    system.wafer.usableWidth = width;
    system.wafer.usableHeight = height;
    system.wafer.fabricWidth = width + 7;
    system.wafer.fabricHeight = height + 2;
    return system;
}

std::string data(const std::string& name)
{
    return waferscope::test::dataDir() + "/cyclelevel/" + name;
}

} // namespace

WS_TEST(tinyLlamaGeneratesTheReferenceTokensOnTheFabric)
{
    const ModelGraph graph = waferscope::test::load(data("tiny_llama.yaml"));
    const SystemSpec system = smallWafer(96, 96);
    const ExecutionPlan plan = waferscope::test::plan(graph, system, RunMode::Inference);
    for (const Region& region : plan.regions)
        std::cerr << region.opName << " " << region.rect.x << "," << region.rect.y << " " << region.rect.w << "x"
                  << region.rect.h << "\n";
    CycleRunOptions options;
    options.tokens = 3;
    options.promptTokens = 4;
    options.maxCyclesPerToken = 200000;
    const Expected<CycleRunResult> result = runCycleLevel(graph, plan, system, options);
    if (!result)
        std::cerr << result.error().format() << "\n";
    WS_REQUIRE(result.hasValue());
    std::cerr << cycleRunToJson(*result) << "\n";
    WS_CHECK(result->tokensMatchReference);
    WS_CHECK(result->maxAbsLogitError < 0.05);
}
