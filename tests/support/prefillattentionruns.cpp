#include "prefillattentionruns.h"

#include "core/cyclelevel/kernels/prefillattentionkernel.h"
#include "core/cyclelevel/referenceops.h"
#include "core/cyclelevel/weights.h"

#include <algorithm>

namespace waferscope::test {

using namespace waferscope::core;
using namespace core::cyclelevel;

namespace {

// count matrices of tokens x headDim seeded values in [-1, 1), already rounded to storage.
std::vector<float> matrices(std::uint64_t key, int count, const PrefillCase& shape, Storage storage)
{
    std::vector<float> out(std::size_t(count) * std::size_t(shape.tokens) * std::size_t(shape.headDim));
    WeightTensor(key, 0.0f, 1.0f, 1, std::int64_t(out.size()), storage).row(0, out);
    return out;
}

} // namespace

PrefillRun runPrefill(const PrefillCase& shape, Storage storage)
{
    const int g = shape.grid;
    DecodeKernelHarness harness(g, shape.heads * g, storage, shape.simdWidth);
    PrefillAttentionSpec spec;
    spec.name = shape.name;
    spec.frame = harness.frame();
    spec.heads = shape.heads;
    spec.kvHeads = shape.kvHeads;
    spec.headDim = shape.headDim;
    spec.tokens = shape.tokens;
    PrefillAttentionKernel kernel(spec, harness.context());
    kernel.route(harness.book());
    const std::vector<float> query = matrices(401, shape.heads, shape, storage);
    const std::vector<float> key = matrices(402, shape.kvHeads, shape, storage);
    const std::vector<float> value = matrices(403, shape.kvHeads, shape, storage);
    int colors[kPrefillOperands] = {};
    const char* names[kPrefillOperands] = { "q", "k", "v" };
    const std::vector<float>* inputs[kPrefillOperands] = { &query, &key, &value };
    for (std::size_t op = 0; op < kPrefillOperands; ++op) {
        const auto operand = PrefillOperand(op);
        std::vector<std::vector<Pe>> taps;
        for (std::size_t lane = 0; lane < kernel.lanes(operand).size(); ++lane)
            taps.push_back(kernel.taps(operand, lane));
        colors[op] = harness.addFeed(names[op], kernel.lanes(operand), taps);
    }
    kernel.load(harness.fabric());
    for (std::size_t op = 0; op < kPrefillOperands; ++op)
        harness.setFeed(colors[op], kernel.feed(PrefillOperand(op), *inputs[op]));

    PrefillRun run;
    run.measure = harness.run([&](ProgramWriter& writer) { kernel.program(writer, colors[0], colors[1], colors[2]); });
    run.colors = harness.book().maxColorsAtARouter();
    const Frame& frame = harness.frame();
    for (int v = 0; v < frame.h; ++v) {
        for (int u = 0; u < frame.w; ++u) {
            const core::fabric::PeState& pe = harness.fabric().pe(frame.x(u), frame.y(v));
            run.fmacs += pe.fmacs;
            run.fmacsAboveDiagonal += u > v % g ? pe.fmacs : 0; // block column u, block row v mod g
            run.peakSramBytes = std::max(run.peakSramBytes, pe.sramBytes());
        }
    }
    const auto d = std::size_t(shape.headDim);
    const auto heads = std::size_t(shape.heads);
    run.out.assign(std::size_t(shape.tokens) * heads * d, 0.0f);
    for (int h = 0; h < shape.heads; ++h) {
        for (const PrefillOutputTile& tile : kernel.outputTiles(h)) {
            const std::vector<float> values = harness.read(tile.pe, tile.offset, std::size_t(tile.tokens) * tile.dims);
            for (std::uint32_t t = 0; t < tile.tokens; ++t)
                for (std::uint32_t i = 0; i < tile.dims; ++i)
                    run.out[((tile.firstToken + t) * heads + std::size_t(h)) * d + tile.firstDim + i]
                        = values[t * tile.dims + i];
        }
    }

    // The reference: token i attends the cache of tokens 0..i, as a decode at position i would.
    DecoderShape model;
    model.storage = storage;
    model.heads = shape.heads;
    model.kvHeads = shape.kvHeads;
    model.headDim = shape.headDim;
    model.positions = DecoderShape::Positions::Rotary;
    const std::size_t kvWidth = std::size_t(shape.kvHeads) * d;
    const auto tokens = std::size_t(shape.tokens);
    std::vector<float> keys(tokens * kvWidth); // the cache's layout: a token's kv heads side by side
    std::vector<float> values(tokens * kvWidth);
    for (std::size_t j = 0; j < tokens; ++j) {
        for (std::size_t kv = 0; kv < std::size_t(shape.kvHeads); ++kv) {
            for (std::size_t i = 0; i < d; ++i) {
                keys[j * kvWidth + kv * d + i] = key[(kv * tokens + j) * d + i];
                values[j * kvWidth + kv * d + i] = value[(kv * tokens + j) * d + i];
            }
        }
    }
    run.reference.resize(run.out.size());
    std::vector<float> token(heads * d);
    for (std::size_t i = 0; i < tokens; ++i) {
        for (std::size_t h = 0; h < heads; ++h)
            std::copy_n(query.begin() + std::ptrdiff_t((h * tokens + i) * d), d, token.begin() + std::ptrdiff_t(h * d));
        attention(model, token, KvView { keys, values, std::int64_t(kvWidth) }, std::int64_t(i),
            std::span<float>(run.reference).subspan(i * heads * d, heads * d));
    }
    return run;
}

} // namespace waferscope::test
