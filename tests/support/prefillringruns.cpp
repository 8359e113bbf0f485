#include "prefillringruns.h"

#include "core/cyclelevel/decoder.h"
#include "core/cyclelevel/kernels/batchedlinear.h"
#include "core/cyclelevel/kernels/prefillgemmkernel.h"
#include "core/cyclelevel/kernels/prefillnormkernel.h"
#include "core/cyclelevel/kernels/prefillringattentionkernel.h"
#include "core/cyclelevel/referenceops.h"
#include "core/cyclelevel/tokenmatrix.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace waferscope::test {

using namespace waferscope::core;
using namespace core::cyclelevel;

// tokens x width from the tiles (tile.firstDim counts in width).
std::vector<float> gatherTiles(const DecodeKernelHarness& harness, const std::vector<PrefillOutputTile>& tiles,
    std::size_t tokens, std::size_t width, std::vector<int>* writes)
{
    std::vector<float> out(tokens * width, std::nanf(""));
    if (writes)
        writes->assign(out.size(), 0);
    for (const PrefillOutputTile& tile : tiles) {
        const std::vector<float> values = harness.read(tile.pe, tile.offset, std::size_t(tile.tokens) * tile.dims);
        for (std::uint32_t t = 0; t < tile.tokens; ++t)
            for (std::uint32_t i = 0; i < tile.dims; ++i) {
                out[(tile.firstToken + t) * width + tile.firstDim + i]
                    = values[tile.dimsMajor ? i * tile.tokens + t : t * tile.dims + i];
                if (writes)
                    ++(*writes)[(tile.firstToken + t) * width + tile.firstDim + i];
            }
    }
    return out;
}

RingAttentionRun runRingAttention(const RingAttentionCase& shape, Storage storage)
{
    const int g = shape.heads;
    DecodeKernelHarness harness(g, g, storage, shape.simdWidth);
    const std::int64_t width = std::int64_t(shape.heads) * shape.headDim;
    std::vector<std::unique_ptr<PrefillGemmKernel>> projections;
    for (int p = 0; p < 3; ++p) {
        PrefillGemmSpec spec;
        spec.name = std::string("qkv").substr(std::size_t(p), 1) + " projection";
        spec.frame = harness.frame();
        spec.tokens = shape.tokens;
        spec.weight = WeightTensor(
            701 + std::uint64_t(p), 0.0f, std::sqrt(3.0f / float(shape.hidden)), width, shape.hidden, storage);
        spec.bias = WeightTensor(711 + std::uint64_t(p), 0.0f, 0.1f, 1, width, storage);
        projections.push_back(std::make_unique<PrefillGemmKernel>(spec, harness.context()));
        projections.back()->load(harness.fabric());
    }
    PrefillRingAttentionSpec spec;
    spec.name = "attention";
    spec.frame = harness.frame();
    spec.headDim = shape.headDim;
    spec.tokens = shape.tokens;
    spec.query = projections[0]->outputTiles();
    spec.key = projections[1]->outputTiles();
    spec.value = projections[2]->outputTiles();
    PrefillRingAttentionKernel attention(spec, harness.context());
    attention.load(harness.fabric());
    PrefillRings rings("block", harness.frame(), g);
    for (const auto& projection : projections)
        projection->needRings(rings);
    attention.needRings(rings);
    rings.place(harness.book());
    for (const auto& projection : projections)
        projection->useRings(rings);
    attention.useRings(rings);

    TokenMatrix x(shape.tokens, shape.hidden);
    WeightTensor(721, 0.0f, 1.0f, 1, std::int64_t(x.values.size()), storage).row(0, x.values);
    const PrefillGemmKernel& first = *projections.front();
    std::vector<std::vector<Pe>> taps;
    for (std::size_t lane = 0; lane < first.lanes().size(); ++lane)
        taps.push_back(first.taps(lane));
    const int color = harness.addFeed("x", first.lanes(), taps);
    harness.validateRoutes([&](ProgramWriter& writer) {
        for (const auto& projection : projections)
            projection->program(writer, color);
        attention.program(writer, -1);
    });
    for (const auto& projection : projections) { // each takes the prompt from the feeders
        harness.setFeed(color, first.feed(x.values));
        harness.run([&](ProgramWriter& writer) { projection->program(writer, color); });
    }
    harness.setFeed(color, {});
    const auto tokens = std::size_t(shape.tokens);
    const auto w = std::size_t(width);
    const std::vector<float> q = gatherTiles(harness, projections[0]->outputTiles(), tokens, w);
    RingAttentionRun run;
    run.projectedKeys = gatherTiles(harness, projections[1]->outputTiles(), tokens, w);
    run.projectedValues = gatherTiles(harness, projections[2]->outputTiles(), tokens, w);
    std::uint64_t fmacsBefore = 0;
    const Frame& frame = harness.frame();
    for (int v = 0; v < frame.h; ++v)
        for (int u = 0; u < frame.w; ++u)
            fmacsBefore += harness.fabric().pe(frame.x(u), frame.y(v)).fmacs;
    run.measure = harness.run([&](ProgramWriter& writer) { attention.program(writer, -1); });
    run.model = attention.closedForm();
    for (int v = 0; v < frame.h; ++v)
        for (int u = 0; u < frame.w; ++u) {
            const core::fabric::PeState& pe = harness.fabric().pe(frame.x(u), frame.y(v));
            run.fmacs += pe.fmacs;
            run.peakSramBytes = std::max(run.peakSramBytes, pe.sramBytes());
        }
    run.fmacs -= fmacsBefore;
    run.colors = harness.book().maxColorsAtARouter();
    run.out = gatherTiles(harness, attention.outputTiles(), tokens, w, &run.writes);
    run.keys = gatherTiles(harness, attention.keyTiles(), tokens, w);
    run.values = gatherTiles(harness, attention.valueTiles(), tokens, w);

    // The reference from the projections' own outputs: token i attends the cache of tokens 0..i.
    DecoderShape model;
    model.storage = storage;
    model.heads = shape.heads;
    model.kvHeads = shape.heads;
    model.headDim = shape.headDim;
    model.positions = DecoderShape::Positions::Rotary;
    run.reference.resize(run.out.size());
    for (std::size_t i = 0; i < tokens; ++i)
        cyclelevel::attention(model, std::span<const float>(q).subspan(i * w, w),
            KvView { run.projectedKeys, run.projectedValues, std::int64_t(w) }, std::int64_t(i),
            std::span<float>(run.reference).subspan(i * w, w));
    return run;
}

PrefillNormRun runPrefillNorm(const PrefillNormCase& shape, Storage storage)
{
    const int g = shape.grid;
    DecodeKernelHarness harness(g, g, storage);
    const Frame& frame = harness.frame();
    const PrefillGrid grid(g, shape.tokens, shape.hidden);
    const auto hidden = std::size_t(shape.hidden);
    // The prompt, written into the block as a plain GEMM with the offset takes it.
    PrefillNormRun run;
    run.input.resize(std::size_t(shape.tokens) * hidden);
    WeightTensor(801, 0.5f, 2.0f, 1, std::int64_t(run.input.size()), storage).row(0, run.input);
    PrefillNormSpec spec;
    spec.name = "norm";
    spec.frame = frame;
    spec.tokens = shape.tokens;
    spec.norm = shape.layerNorm ? DecoderShape::Norm::LayerNorm : DecoderShape::Norm::RmsNorm;
    spec.epsilon = 1e-5f;
    spec.weight = WeightTensor(802, 1.0f, 0.2f, 1, shape.hidden, storage);
    spec.bias = shape.bias ? WeightTensor(803, 0.0f, 0.1f, 1, shape.hidden, storage) : WeightTensor::absent(storage);
    spec.bandOffset = shape.bandOffset;
    for (int y = 0; y < g; ++y) {
        for (int x = 0; x < g; ++x) {
            const int band = ((grid.blockAt(x, y, 0) + shape.bandOffset) % g + g) % g;
            const std::uint32_t rows = grid.bandSize(band);
            const std::uint32_t cols = grid.blockSize(x);
            if (rows == 0 || cols == 0)
                continue;
            core::fabric::PeState& pe = harness.fabric().pe(frame.x(x), frame.y(y));
            const std::uint32_t offset = pe.allocF32(std::size_t(rows) * cols);
            for (std::uint32_t t = 0; t < rows; ++t)
                for (std::uint32_t i = 0; i < cols; ++i)
                    pe.f32[offset + t * cols + i]
                        = run.input[(grid.bandBegin(band) + t) * hidden + grid.blockBegin(x) + i];
            spec.input.push_back(
                { { frame.x(x), frame.y(y) }, offset, grid.bandBegin(band), rows, grid.blockBegin(x), cols });
        }
    }
    PrefillNormKernel norm(spec, harness.context());
    norm.load(harness.fabric());
    PrefillGemmSpec after;
    after.name = "projection";
    after.frame = frame;
    after.tokens = shape.tokens;
    after.weight = WeightTensor(804, 0.0f, 0.3f, 6, shape.hidden, storage);
    after.bandOffset = norm.outputOffset();
    after.inputInPlace = norm.outputTiles();
    PrefillGemmKernel projection(after, harness.context());
    projection.load(harness.fabric());
    PrefillRings rings("block", frame, g);
    norm.needRings(rings);
    projection.needRings(rings);
    rings.place(harness.book());
    norm.useRings(rings);
    projection.useRings(rings);
    harness.validateRoutes([&](ProgramWriter& writer) {
        norm.program(writer, -1);
        projection.program(writer, -1);
    });
    run.measure = harness.run([&](ProgramWriter& writer) { norm.program(writer, -1); });
    run.model = norm.closedForm();
    harness.run([&](ProgramWriter& writer) { projection.program(writer, -1); });
    run.colors = harness.book().maxColorsAtARouter();
    const auto tokens = std::size_t(shape.tokens);
    run.out = gatherTiles(harness, norm.outputTiles(), tokens, hidden, &run.writes);
    run.moved = gatherTiles(harness, norm.movedInput(), tokens, hidden);
    run.projected = gatherTiles(harness, projection.outputTiles(), tokens, 6);

    DecoderShape model;
    model.storage = storage;
    model.norm = spec.norm;
    model.normEpsilon = spec.epsilon;
    run.reference.resize(run.input.size());
    for (std::size_t t = 0; t < tokens; ++t)
        cyclelevel::norm(model, spec.weight, spec.bias, std::span<const float>(run.input).subspan(t * hidden, hidden),
            std::span<float>(run.reference).subspan(t * hidden, hidden));
    TokenMatrix normed(shape.tokens, shape.hidden);
    normed.values = run.out;
    TokenMatrix projected;
    linearOverTokens(after.weight, after.bias, normed, storage, projected);
    run.projectedReference = projected.values;
    return run;
}

} // namespace waferscope::test
