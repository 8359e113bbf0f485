// The engine's closed-form kernel costs against the cycle-level fabric engine: the cost model
// must land within 15% of the simulated cycles for GEMV and streamed GEMM over a sweep of
// shapes (dense and sparse), and agree on link traffic and PE activity.
#include "testing.h"

#include "core/engine/calibration.h"
#include "core/engine/costmodel.h"
#include "core/fabric/kernels.h"

#include <cstdio>
#include <vector>

using namespace waferscope::core;
using namespace waferscope::core::engine;

namespace {

struct Shape {
    fabric::KernelKind kind;
    int m, n, rows, cols;
    double sparsity = 0.0;
    int tokens = 0;
    int simd = 8;
};

fabric::KernelConfig configOf(const Shape& s)
{
    fabric::KernelConfig config;
    config.kind = s.kind;
    config.matrixRows = s.m;
    config.matrixCols = s.n;
    config.regionRows = s.rows;
    config.regionCols = s.cols;
    config.sparsity = s.sparsity;
    config.tokensPerPe = s.tokens;
    config.simdWidth = s.simd;
    return config;
}

// Runs every shape on the fabric and returns the largest relative cycle error of the model.
double worstCycleError(const std::vector<Shape>& shapes, bool checkTraffic)
{
    double worst = 0.0;
    for (const Shape& shape : shapes) {
        const fabric::KernelConfig config = configOf(shape);
        const Expected<fabric::KernelResult> simulated = fabric::runKernel(config);
        WS_REQUIRE(simulated.hasValue());
        const KernelCost model = costKernel(config, builtinCalibration());
        const double error = std::fabs(model.cycles - double(simulated->cycles)) / double(simulated->cycles);
        std::printf("%-12s %5dx%-5d on %3dx%-3d s=%.2f t=%d simd=%d: fabric %7llu cycles, model %9.1f (%+.1f%%), "
                    "busy %.2f/%.2f\n",
            fabric::kernelName(shape.kind), shape.m, shape.n, shape.rows, shape.cols, shape.sparsity, shape.tokens,
            shape.simd, static_cast<unsigned long long>(simulated->cycles), model.cycles,
            100.0 * (model.cycles - double(simulated->cycles)) / double(simulated->cycles), model.peBusyFraction,
            simulated->peBusyFraction);
        WS_CHECK(error <= 0.15);
        worst = std::max(worst, error);
        WS_CHECK_NEAR(model.fmacs, double(simulated->fmacs), shape.sparsity > 0.0 ? 0.05 : 1e-9);
        WS_CHECK(std::fabs(model.peBusyFraction - simulated->peBusyFraction) <= 0.15);
        if (checkTraffic)
            WS_CHECK_NEAR(model.linkWavelets, double(simulated->linkWavelets), shape.sparsity > 0.0 ? 0.05 : 1e-9);
    }
    return worst;
}

} // namespace

WS_TEST(gemvCostModelTracksTheFabricWithin15Percent)
{
    using K = fabric::KernelKind;
    const std::vector<Shape> shapes {
        { K::Gemv, 256, 256, 8, 8 }, { K::Gemv, 1024, 1024, 32, 32 }, { K::Gemv, 768, 768, 16, 48 },
        { K::Gemv, 3072, 768, 48, 16 }, { K::Gemv, 512, 2048, 4, 64 }, { K::Gemv, 2048, 512, 64, 4 },
        { K::Gemv, 100, 300, 10, 10 }, { K::Gemv, 64, 64, 1, 1 }, { K::Gemv, 4096, 1024, 32, 32 },
        { K::Gemv, 1000, 1000, 7, 13 }, { K::Gemv, 333, 4096, 3, 96 }, { K::Gemv, 4096, 128, 128, 2 },
        { K::Gemv, 2048, 2048, 24, 40, 0.0, 0, 4 }, // WSE-2 SIMD width
    };
    const double worst = worstCycleError(shapes, true);
    std::printf("GEMV: worst cycle error %.1f%% over %zu shapes\n", 100.0 * worst, shapes.size());
}

WS_TEST(treeReducedGemvCostModelTracksTheFabricWithin15Percent)
{
    using K = fabric::KernelKind;
    const std::vector<Shape> shapes {
        { K::GemvTree, 256, 256, 8, 8 },
        { K::GemvTree, 1024, 1024, 32, 32 },
        { K::GemvTree, 768, 768, 16, 48 },
        { K::GemvTree, 3072, 768, 48, 16 },
        { K::GemvTree, 512, 2048, 4, 64 },
        { K::GemvTree, 2048, 512, 64, 4 },
        { K::GemvTree, 100, 300, 10, 10 },
        { K::GemvTree, 64, 64, 1, 1 },
        { K::GemvTree, 1000, 1000, 7, 13 },
        { K::GemvTree, 333, 4096, 3, 96 },
        { K::GemvTree, 64, 4096, 8, 256 },
        { K::GemvTree, 50, 300, 64, 300 },
        { K::GemvTree, 64, 30, 4, 64 },
        { K::GemvTree, 2048, 2048, 24, 40, 0.0, 0, 4 },
    };
    const double worst = worstCycleError(shapes, true);
    std::printf("GEMV (tree): worst cycle error %.1f%% over %zu shapes\n", 100.0 * worst, shapes.size());
}

WS_TEST(aTreeReductionPaysWhereEachPeHoldsFewOutputRowsAcrossManyColumns)
{
    // The chain pays a hop and an add for every column; the tree, the hops and one add and a tile
    // of partial sums a level. With a few output rows per PE across hundreds of columns (the
    // shape of a decode layer spread over a wafer) the tree is the faster; with many rows per PE
    // over few columns, the chain, which streams its tile once, end to end.
    using K = fabric::KernelKind;
    const auto cycles = [](const Shape& shape) {
        const Expected<fabric::KernelResult> run = fabric::runKernel(configOf(shape));
        WS_REQUIRE(run.hasValue());
        WS_CHECK(run->maxAbsError < 1e-4);
        const double model = costKernel(configOf(shape), builtinCalibration()).cycles;
        return std::pair { double(run->cycles), model };
    };
    const auto [wideTree, wideTreeModel] = cycles({ K::GemvTree, 50, 300, 64, 300 });
    const auto [wideChain, wideChainModel] = cycles({ K::Gemv, 50, 300, 64, 300 });
    WS_CHECK(wideTree < wideChain);
    WS_CHECK(wideTreeModel < wideChainModel);
    const auto [tallTree, tallTreeModel] = cycles({ K::GemvTree, 3072, 768, 48, 16 });
    const auto [tallChain, tallChainModel] = cycles({ K::Gemv, 3072, 768, 48, 16 });
    WS_CHECK(tallTree > tallChain);
    WS_CHECK(tallTreeModel > tallChainModel);
}

WS_TEST(streamedGemmCostModelTracksTheFabricWithin15PercentDenseAndSparse)
{
    using K = fabric::KernelKind;
    const std::vector<Shape> shapes {
        { K::GemmStream, 256, 256, 8, 8 },
        { K::GemmStream, 1024, 512, 16, 32 },
        { K::GemmStream, 1024, 512, 16, 32, 0.9 },
        { K::GemmStream, 512, 512, 8, 16, 0.5, 16 },
        { K::GemmStream, 512, 512, 8, 16, 0.0, 32 },
        { K::GemmStream, 300, 200, 7, 9, 0.75 },
        { K::GemmStream, 2048, 256, 64, 8, 0.95 },
        { K::GemmStream, 128, 1024, 4, 24, 0.25, 4 },
        { K::GemmStream, 640, 640, 20, 20, 0.5, 12 },
        { K::GemmStream, 96, 2000, 3, 5, 0.0, 8, 4 },
        { K::GemmStream, 1200, 300, 40, 6, 0.8, 20, 4 },
    };
    const double worst = worstCycleError(shapes, false);
    std::printf("streamed GEMM: worst cycle error %.1f%% over %zu shapes\n", 100.0 * worst, shapes.size());
}

WS_TEST(collectivesCostModelTracksTheFabric)
{
    using K = fabric::KernelKind;
    const std::vector<Shape> shapes {
        { K::RowBroadcast, 1, 1024, 4, 32 },
        { K::ColumnBroadcast, 1, 512, 64, 3 },
        { K::RowReduce, 1, 1024, 8, 16 },
        { K::ColumnReduce, 1, 256, 40, 2 },
    };
    worstCycleError(shapes, true);
}

WS_TEST(streamedGemmOnTheWaferApproachesPeakWhenEveryPeHasASimdTile)
{
    // GPT-3 XL's ffn.up on a CS-2 program rectangle with a micro-batch of 88 x 2048 tokens: the
    // FMACs spread over every PE, so the cycles approach FMACs / (PEs x SIMD).
    const StreamedGemmShape shape { 8192, 2048, 88 * 2048, 1.0 };
    const StreamedGemmCost cost = costStreamedGemm(shape, 994, 750, 4, builtinCalibration());
    const double ideal
        = double(shape.outFeatures) * double(shape.inFeatures) * double(shape.tokens) / (994.0 * 750 * 4);
    WS_CHECK(cost.cycles >= ideal);
    WS_CHECK(cost.cycles <= 1.1 * ideal);
    WS_CHECK_EQ(cost.tokenTile, std::int64_t(4));
    WS_CHECK(cost.pesUsed <= 994 * 750);
    // 90% sparse: a tenth of the FMACs; the per-row markers and the partial-sum chains keep it
    // from a full 10x.
    const StreamedGemmCost sparse = costStreamedGemm({ 8192, 2048, 88 * 2048, 0.1 }, 994, 750, 4, builtinCalibration());
    WS_CHECK_NEAR(sparse.fmacs, cost.fmacs * 0.1, 1e-9);
    WS_CHECK(sparse.cycles < cost.cycles / 3.0);
    WS_CHECK(sparse.cycles > cost.cycles / 10.0);
}

WS_TEST(calibrationFileIsValidAndEveryConstantNamesItsFigure)
{
    const Calibration& calibration = builtinCalibration();
    WS_CHECK(!calibration.version.empty());
    WS_CHECK_EQ(calibration.fittedTo.size(), std::size_t(3)); // two shared, the profile's overhead
    for (const auto& [name, figure] : calibration.fittedTo)
        WS_CHECK(figure.size() > 20);
    const auto broken = parseCalibration("{\"schema\": \"waferscope-calibration/1\", \"constants\": {\n"
                                         "  \"reduce_add_cycles\": {\"value\": -1, \"fitted_to\": \"x\"}}}",
        "cal.json");
    WS_REQUIRE(!broken.hasValue());
    WS_CHECK_EQ(broken.error().file, std::string("cal.json"));
    WS_CHECK(broken.error().line > 0);
    WS_CHECK(!parseCalibration("{", "cal.json").hasValue());
}
