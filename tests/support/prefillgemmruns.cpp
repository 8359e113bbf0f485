#include "prefillgemmruns.h"

#include "core/cyclelevel/kernels/batchedlinear.h"
#include "core/cyclelevel/kernels/prefillgemmkernel.h"
#include "core/cyclelevel/referenceops.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace waferscope::test {

using namespace waferscope::core;
using namespace core::cyclelevel;

namespace {

PrefillGemmSpec gemmSpec(const PrefillGemmCase& shape, const Frame& frame, Storage storage, std::uint64_t seed)
{
    PrefillGemmSpec spec;
    spec.name = shape.name;
    spec.frame = frame;
    spec.tokens = shape.tokens;
    const float scale = std::sqrt(3.0f / float(shape.inFeatures));
    spec.weight = WeightTensor(seed, 0.0f, scale, shape.outFeatures, shape.inFeatures, storage);
    spec.bias = shape.bias ? WeightTensor(seed + 1, 0.0f, 0.1f, 1, shape.outFeatures, storage)
                           : WeightTensor::absent(storage);
    spec.activation = shape.activation;
    return spec;
}

// The block PEs' multiply-adds so far, and their peak SRAM.
std::uint64_t blockFmacs(DecodeKernelHarness& harness)
{
    std::uint64_t fmacs = 0;
    const Frame& frame = harness.frame();
    for (int v = 0; v < frame.h; ++v)
        for (int u = 0; u < frame.w; ++u)
            fmacs += harness.fabric().pe(frame.x(u), frame.y(v)).fmacs;
    return fmacs;
}

// The block PEs' multiply-adds since `fmacsBefore`, peak SRAM and the colors at the busiest router.
void measureBlock(PrefillGemmRun& run, DecodeKernelHarness& harness, std::uint64_t fmacsBefore)
{
    run.colors = harness.book().maxColorsAtARouter();
    run.fmacs = blockFmacs(harness) - fmacsBefore;
    const Frame& frame = harness.frame();
    for (int v = 0; v < frame.h; ++v)
        for (int u = 0; u < frame.w; ++u)
            run.peakSramBytes = std::max(run.peakSramBytes, harness.fabric().pe(frame.x(u), frame.y(v)).sramBytes());
}

// The outputs as the kernel left them, tokens x outFeatures, and how many tiles hold each.
void readOutputs(PrefillGemmRun& run, const DecodeKernelHarness& harness, const PrefillGemmKernel& kernel,
    const PrefillGemmCase& shape)
{
    const auto outs = std::size_t(shape.outFeatures);
    run.out.assign(std::size_t(shape.tokens) * outs, std::nanf(""));
    run.writes.assign(run.out.size(), 0);
    for (const PrefillOutputTile& tile : kernel.outputTiles()) {
        const std::vector<float> values = harness.read(tile.pe, tile.offset, std::size_t(tile.tokens) * tile.dims);
        for (std::uint32_t t = 0; t < tile.tokens; ++t)
            for (std::uint32_t i = 0; i < tile.dims; ++i) {
                run.out[(tile.firstToken + t) * outs + tile.firstDim + i] = values[t * tile.dims + i];
                ++run.writes[(tile.firstToken + t) * outs + tile.firstDim + i];
            }
    }
}

// The reference, and the bound: both orders add the same float products (the 16-bit weight
// times the float input) and the bias; each sum is within gamma_k * sum |terms| of the exact
// one, k = inFeatures + 1 additions.
void fillReference(PrefillGemmRun& run, const PrefillGemmSpec& spec, const TokenMatrix& x, const PrefillGemmCase& shape,
    Storage storage)
{
    TokenMatrix reference;
    linearOverTokens(spec.weight, spec.bias, x, storage, reference);
    run.reference = reference.values;
    if (shape.activation)
        for (float& value : run.reference)
            value = ffnHidden(*shape.activation, value, 0.0f, storage);
    TokenMatrix sums;
    logitsOverTokens(spec.weight, spec.bias, x, sums);
    run.sums = sums.values;
    const double additions = double(shape.inFeatures + 1);
    const double gamma = additions * 0x1p-24 / (1.0 - additions * 0x1p-24);
    for (int t = 0; t < shape.tokens; ++t) {
        for (int i = 0; i < shape.outFeatures; ++i) {
            double magnitude = std::fabs(double(spec.bias.at(0, i)));
            for (int j = 0; j < shape.inFeatures; ++j)
                magnitude += std::fabs(double(spec.weight.at(i, j) * x.values[std::size_t(t * shape.inFeatures + j)]));
            run.sumBounds.push_back(float(2.0 * gamma * magnitude));
        }
    }
}

} // namespace

PrefillGemmRun runPrefillGemm(const PrefillGemmCase& shape, Storage storage)
{
    const int g = shape.grid;
    DecodeKernelHarness harness(g, g, storage, shape.simdWidth);
    const PrefillGemmSpec spec = gemmSpec(shape, harness.frame(), storage, 501);
    PrefillGemmKernel kernel(spec, harness.context());
    kernel.route(harness.book());
    TokenMatrix x(shape.tokens, shape.inFeatures);
    WeightTensor(503, 0.0f, 1.0f, 1, std::int64_t(x.values.size()), storage).row(0, x.values);
    std::vector<std::vector<Pe>> taps;
    for (std::size_t lane = 0; lane < kernel.lanes().size(); ++lane)
        taps.push_back(kernel.taps(lane));
    const int color = harness.addFeed("x", kernel.lanes(), taps);
    kernel.load(harness.fabric());
    harness.setFeed(color, kernel.feed(x.values));

    PrefillGemmRun run;
    run.measure = harness.run([&](ProgramWriter& writer) { kernel.program(writer, color); });
    measureBlock(run, harness, 0);
    readOutputs(run, harness, kernel, shape);
    fillReference(run, spec, x, shape, storage);
    return run;
}

std::vector<PrefillGemmRun> runPrefillGemmChain(const std::vector<PrefillGemmCase>& stages, Storage storage)
{
    const PrefillGemmCase& first = stages.front();
    const int g = first.grid;
    DecodeKernelHarness harness(g, g, storage, first.simdWidth);
    std::vector<std::unique_ptr<PrefillGemmKernel>> kernels;
    for (std::size_t k = 0; k < stages.size(); ++k) {
        PrefillGemmSpec spec = gemmSpec(stages[k], harness.frame(), storage, 601 + 2 * k);
        spec.tokens = first.tokens;
        spec.transposed = k % 2 == 1;
        spec.bandOffset = -int(k);
        if (k > 0)
            spec.inputInPlace = kernels.back()->outputTiles();
        kernels.push_back(std::make_unique<PrefillGemmKernel>(spec, harness.context()));
        kernels.back()->load(harness.fabric());
    }
    // One set of ring colors for the block, which the stages take turns on.
    PrefillRings rings("block", harness.frame(), g);
    for (const auto& kernel : kernels)
        kernel->needRings(rings);
    rings.place(harness.book());
    for (const auto& kernel : kernels)
        kernel->useRings(rings);
    TokenMatrix x(first.tokens, first.inFeatures);
    WeightTensor(603, 0.0f, 1.0f, 1, std::int64_t(x.values.size()), storage).row(0, x.values);
    std::vector<std::vector<Pe>> taps;
    for (std::size_t lane = 0; lane < kernels.front()->lanes().size(); ++lane)
        taps.push_back(kernels.front()->taps(lane));
    const int color = harness.addFeed("x", kernels.front()->lanes(), taps);
    harness.setFeed(color, kernels.front()->feed(x.values));

    harness.validateRoutes([&](ProgramWriter& writer) {
        for (const auto& kernel : kernels)
            kernel->program(writer, color);
    });
    std::vector<PrefillGemmRun> runs;
    for (std::size_t k = 0; k < stages.size(); ++k) {
        PrefillGemmCase shape = stages[k];
        shape.tokens = first.tokens;
        PrefillGemmRun run;
        const std::uint64_t fmacsBefore = blockFmacs(harness);
        run.measure = harness.run([&](ProgramWriter& writer) { kernels[k]->program(writer, color); });
        if (k == 0)
            harness.setFeed(color, {}); // the later stages take nothing from the feeder
        measureBlock(run, harness, fmacsBefore);
        readOutputs(run, harness, *kernels[k], shape);
        fillReference(run, kernels[k]->spec(), x, shape, storage);
        x = TokenMatrix(shape.tokens, shape.outFeatures);
        x.values = run.out;
        runs.push_back(std::move(run));
    }
    return runs;
}

} // namespace waferscope::test
