#include "decodekernelruns.h"

#include "core/cyclelevel/referenceops.h"
#include "core/cyclelevel/weights.h"

#include <bit>
#include <cmath>

namespace waferscope::test {

using namespace waferscope::core;
using namespace core::cyclelevel;
using core::Epilogue;

namespace {

// Seeded tensors as DecoderWeights draws them, already rounded to storage: matrices with
// unit-variance outputs, vectors around `offset`, inputs uniform in [-1, 1).
WeightTensor matrix(std::uint64_t key, std::int64_t rows, std::int64_t cols, Storage storage)
{
    return WeightTensor(key, 0.0f, std::sqrt(3.0f / float(cols)), rows, cols, storage);
}

WeightTensor rowTensor(std::uint64_t key, std::int64_t length, float offset, Storage storage)
{
    return WeightTensor(key, offset, 0.1f, 1, length, storage);
}

std::vector<float> values(std::uint64_t key, std::int64_t length, Storage storage)
{
    std::vector<float> out(static_cast<std::size_t>(length));
    WeightTensor(key, 0.0f, 1.0f, 1, length, storage).row(0, out);
    return out;
}

} // namespace

NormRun runNorm(const NormCase& shape, Storage storage)
{
    DecodeKernelHarness harness(1, shape.lanes, storage);
    NormRun run;
    run.lanes = evenLanes(0, shape.lanes, shape.length);
    const WeightTensor weight = rowTensor(11, shape.length, 1.0f, storage);
    const bool isLayerNorm = shape.norm == DecoderShape::Norm::LayerNorm;
    const WeightTensor bias
        = isLayerNorm && shape.bias ? rowTensor(12, shape.length, 0.0f, storage) : WeightTensor::absent(storage);
    const float epsilon = 1e-5f;
    NormColumn norm("norm", harness.frame(), run.lanes, shape.norm, epsilon, weight, bias, harness.context());
    norm.route(harness.book());
    std::vector<std::vector<Pe>> taps;
    for (std::size_t i = 0; i < run.lanes.size(); ++i)
        taps.push_back(norm.taps(i));
    const int in = harness.addFeed("x", run.lanes, taps);
    norm.load(harness.fabric());
    const std::vector<float> x = values(13, shape.length, storage);
    harness.setFeed(in, x);
    run.measure = harness.run([&](ProgramWriter& writer) { norm.program(writer, { .in = in }, 0); });
    run.model = norm.closedForm(0);
    for (std::size_t i = 0; i < run.lanes.size(); ++i) {
        const std::vector<float> lane = harness.read(norm.exit(i), norm.resultOffset(i), run.lanes[i].size());
        run.out.insert(run.out.end(), lane.begin(), lane.end());
    }
    std::vector<float> weights(shape.length);
    std::vector<float> biases(bias.present() ? shape.length : 0);
    weight.row(0, weights);
    bias.row(0, biases);
    run.reference.resize(shape.length);
    if (isLayerNorm)
        layerNorm(x, weights, biases, epsilon, storage, run.reference);
    else
        rmsNorm(x, weights, epsilon, storage, run.reference);
    return run;
}

GemvRun runGemv(const GemvCase& shape, Storage storage)
{
    DecodeKernelHarness harness(shape.w, shape.h, storage);
    GemvSpec spec;
    spec.name = shape.name;
    spec.frame = harness.frame();
    spec.firstColumn = shape.firstColumn;
    spec.input = shape.input;
    spec.output = shape.output;
    spec.weight = matrix(21, shape.outFeatures, shape.inFeatures, storage);
    spec.bias = shape.bias ? rowTensor(22, shape.outFeatures, 0.0f, storage) : WeightTensor::absent(storage);
    spec.epilogue = shape.epilogue;
    spec.activation = shape.activation;
    spec.treeReduced = shape.treeReduced;
    if (shape.epilogue == Epilogue::Route) {
        spec.experts = int(shape.outFeatures);
        spec.topK = shape.topK;
    }
    GemvKernel kernel(spec, harness.context());
    kernel.route(harness.book());
    GemvRun run;
    const std::vector<float> x = values(23, shape.inFeatures, storage);
    run.side = values(24, shape.outFeatures, storage);
    int side = -1;
    if (kernel.hasSideInput()) {
        std::vector<std::vector<Pe>> exits;
        for (std::size_t k = 0; k < shape.output.size(); ++k)
            exits.push_back({ kernel.exit(k) });
        side = harness.addFeed("side", shape.output, exits);
        harness.setFeed(side, run.side);
    }
    std::vector<std::vector<Pe>> taps;
    for (std::size_t i = 0; i < shape.input.size(); ++i)
        taps.push_back(kernel.taps(i));
    const int in = harness.addFeed("x", shape.input, taps);
    harness.setFeed(in, x);
    kernel.load(harness.fabric());
    run.measure = harness.run(
        [&](ProgramWriter& writer) { kernel.program(writer, { .in = in, .side = side }, shape.position); });
    run.model = kernel.closedForm(shape.position);
    for (std::size_t k = 0; k < shape.output.size(); ++k)
        run.lanes.push_back(harness.read(kernel.exit(k), kernel.resultOffset(k), shape.output[k].size()));
    if (shape.epilogue == Epilogue::Logits)
        run.argmax = std::bit_cast<std::uint32_t>(harness.read(kernel.argmaxPe(), kernel.argmaxOffset() + 1, 1)[0]);
    // Both orders add the same float products (FMAC and reference alike multiply the 16-bit
    // weight by the float input); each sum is within gamma_k * sum |products| of the exact one,
    // k the additions at most: the products, the chain's partial sums and the bias.
    run.sums.resize(std::size_t(shape.outFeatures));
    logits(spec.weight, spec.bias, x, run.sums);
    const double additions = double(shape.inFeatures + shape.w + 1);
    const double gamma = additions * 0x1p-24 / (1.0 - additions * 0x1p-24);
    for (std::int64_t i = 0; i < shape.outFeatures; ++i) {
        double magnitude = std::fabs(double(spec.bias.at(0, i)));
        for (std::int64_t j = 0; j < shape.inFeatures; ++j)
            magnitude += std::fabs(double(spec.weight.at(i, j) * x[std::size_t(j)]));
        run.sumBounds.push_back(float(2.0 * gamma * magnitude));
    }
    return run;
}

AttentionRun runAttention(const AttentionCase& shape, Storage storage)
{
    const int rowsPerHead = shape.rowsPerHead;
    DecodeKernelHarness harness(shape.w, shape.heads * rowsPerHead, storage);
    const int d = shape.headDim;
    AttentionSpec spec;
    spec.name = shape.name;
    spec.frame = harness.frame();
    spec.heads = shape.heads;
    spec.headDim = d;
    spec.rowsPerHead = rowsPerHead;
    spec.capacity = shape.positions;
    spec.alibi = shape.alibi;
    const int group = shape.heads / shape.kvHeads;
    const auto part = [&](int r) { return std::uint32_t(d * r / rowsPerHead); };
    for (int h = 0; h < shape.heads; ++h)
        for (int r = 0; r < rowsPerHead; ++r) {
            const int row = h * rowsPerHead + r;
            spec.q.push_back({ row, std::uint32_t(h * d) + part(r), std::uint32_t(h * d) + part(r + 1) });
            const int g = h / group; // the kv head of query head h, on h's rows
            spec.k.push_back({ row, std::uint32_t(g * d) + part(r), std::uint32_t(g * d) + part(r + 1) });
        }
    spec.v = spec.k;
    AttentionKernel kernel(spec, harness.context());
    kernel.route(harness.book());
    std::vector<std::vector<Pe>> taps;
    for (std::size_t lane = 0; lane < spec.q.size(); ++lane)
        taps.push_back(kernel.taps(lane));
    const int q = harness.addFeed("q", spec.q, taps);
    const int k = harness.addFeed("k", spec.k, taps);
    const int v = harness.addFeed("v", spec.v, taps);
    kernel.load(harness.fabric());

    DecoderShape model;
    model.storage = storage;
    model.heads = shape.heads;
    model.kvHeads = shape.kvHeads;
    model.headDim = d;
    model.positions = shape.alibi ? DecoderShape::Positions::Alibi : DecoderShape::Positions::Rotary;
    const std::int64_t kvWidth = std::int64_t(shape.kvHeads) * d;
    std::vector<float> keys; // the reference's cache
    std::vector<float> cachedValues;
    AttentionRun run;
    for (int position = 0; position < shape.positions; ++position) {
        const auto seed = std::uint64_t(position);
        const std::vector<float> query = values(100 + seed, std::int64_t(shape.heads) * d, storage);
        const std::vector<float> key = values(200 + seed, kvWidth, storage);
        const std::vector<float> value = values(300 + seed, kvWidth, storage);
        keys.insert(keys.end(), key.begin(), key.end());
        cachedValues.insert(cachedValues.end(), value.begin(), value.end());
        harness.setFeed(q, query);
        harness.setFeed(k, key);
        harness.setFeed(v, value);
        run.measures.push_back(harness.run(
            [&](ProgramWriter& writer) { kernel.program(writer, { .in = q, .keys = k, .values = v }, position); }));
        run.models.push_back(kernel.closedForm(position));
        std::vector<float> out;
        for (std::size_t lane = 0; lane < spec.q.size(); ++lane) {
            const std::vector<float> piece = harness.read(
                kernel.exit(lane), kernel.resultOffset(lane), std::size_t(spec.q[lane].end - spec.q[lane].begin));
            out.insert(out.end(), piece.begin(), piece.end());
        }
        run.out.push_back(std::move(out));
        std::vector<float> reference(query.size());
        attention(model, query, KvView { keys, cachedValues, kvWidth }, position, reference);
        run.reference.push_back(std::move(reference));
    }
    return run;
}

EmbeddingRun runEmbedding(const EmbeddingCase& shape, Storage storage)
{
    DecodeKernelHarness harness(shape.w, shape.h, storage);
    EmbeddingSpec spec;
    spec.name = shape.name;
    spec.frame = harness.frame();
    spec.lanes = evenLanes(0, shape.lanes, std::uint32_t(shape.hidden));
    spec.token = WeightTensor(31, 0.0f, 1.0f, shape.vocab, shape.hidden, storage);
    spec.position = shape.positionRows > 0 ? WeightTensor(32, 0.0f, 1.0f, shape.positionRows, shape.hidden, storage)
                                           : WeightTensor::absent(storage);
    EmbeddingKernel kernel(spec, harness.context());
    kernel.route(harness.book());
    const int token = harness.addFeed("token id", { { 0, 0, 1 } }, { { kernel.root() } });
    kernel.load(harness.fabric());
    harness.setFeed(token, std::vector<float> { std::bit_cast<float>(std::uint32_t(shape.token)) });
    EmbeddingRun run;
    run.lanes = spec.lanes;
    run.measure = harness.run([&](ProgramWriter& writer) { kernel.program(writer, { .in = token }, shape.position); });
    run.model = kernel.closedForm(shape.position);
    for (std::size_t i = 0; i < spec.lanes.size(); ++i) {
        const std::vector<float> lane = harness.read(kernel.exit(i), kernel.resultOffset(i), spec.lanes[i].size());
        run.out.insert(run.out.end(), lane.begin(), lane.end());
    }
    // By the contract: x = S(tok[t] + pos[p]) with learned positions, else tok[t].
    for (std::int64_t i = 0; i < shape.hidden; ++i) {
        const float row = spec.token.at(shape.token, i);
        run.reference.push_back(
            spec.position.present() ? roundToStorage(row + spec.position.at(shape.position, i), storage) : row);
    }
    return run;
}

} // namespace waferscope::test
