#include "prefillgemmruns.h"

#include "core/cyclelevel/kernels/batchedlinear.h"
#include "core/cyclelevel/kernels/prefillgemmkernel.h"
#include "core/cyclelevel/referenceops.h"

#include <algorithm>
#include <cmath>

namespace waferscope::test {

using namespace waferscope::core;
using namespace core::cyclelevel;

PrefillGemmRun runPrefillGemm(const PrefillGemmCase& shape, Storage storage)
{
    const int g = shape.grid;
    DecodeKernelHarness harness(g, g, storage, shape.simdWidth);
    PrefillGemmSpec spec;
    spec.name = shape.name;
    spec.frame = harness.frame();
    spec.tokens = shape.tokens;
    const float scale = std::sqrt(3.0f / float(shape.inFeatures));
    spec.weight = WeightTensor(501, 0.0f, scale, shape.outFeatures, shape.inFeatures, storage);
    spec.bias
        = shape.bias ? WeightTensor(502, 0.0f, 0.1f, 1, shape.outFeatures, storage) : WeightTensor::absent(storage);
    spec.activation = shape.activation;
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
    run.colors = harness.book().maxColorsAtARouter();
    const Frame& frame = harness.frame();
    for (int v = 0; v < frame.h; ++v) {
        for (int u = 0; u < frame.w; ++u) {
            const core::fabric::PeState& pe = harness.fabric().pe(frame.x(u), frame.y(v));
            run.fmacs += pe.fmacs;
            run.peakSramBytes = std::max(run.peakSramBytes, pe.sramBytes());
        }
    }
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

    // The reference, and the bound: both orders add the same float products (the 16-bit weight
    // times the float input) and the bias; each sum is within gamma_k * sum |terms| of the exact
    // one, k = inFeatures + 1 additions.
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
    return run;
}

} // namespace waferscope::test
