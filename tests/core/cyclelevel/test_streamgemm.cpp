// The weight-streaming GEMM (core/cyclelevel/kernels/streamgemmkernel.h), forward Y = W X and
// backward delta dX = W^T dY, and its weight gradient dW = dY X^T
// (core/cyclelevel/kernels/streamgradientkernel.h), on a small fabric through the kernel harness:
// their outputs against plain loops over the same 16-bit operands, summed in the same order; and
// their runs against their closed forms (core/kernels/streamgemm.h), in the stream-bound regime
// (a token a PE) and the compute-bound one (many tokens a PE).
#include "decodekernelharness.h"
#include "prefillringruns.h"
#include "testing.h"

#include "core/cyclelevel/kernels/streamgemmkernel.h"
#include "core/cyclelevel/kernels/streamgradientkernel.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>

using namespace waferscope::core;
using namespace waferscope::core::cyclelevel;
using namespace waferscope::test;

namespace {

struct StreamCase {
    std::string name;
    int rows = 1; // R
    int columns = 1; // C
    int tokensPerPe = 1; // T
    std::int64_t outputs = 1; // M (the forward's)
    std::int64_t inputs = 1; // N
    int simdWidth = 8;
    double sparsity = 0.0; // share of W's values masked to zero
};

const std::vector<StreamCase>& streamCases()
{
    static const std::vector<StreamCase> cases {
        { "stream-bound: 3 x 4 PEs, a token each", 3, 4, 1, 12, 20 },
        { "compute-bound: 3 x 4 PEs, 64 tokens each", 3, 4, 64, 12, 20 },
        { "uneven bands: 4 x 2 PEs, 7 outputs, 8 tokens", 4, 2, 8, 7, 16 },
        { "more rows than outputs: 5 x 3 PEs, 3 outputs", 5, 3, 4, 3, 10 },
        { "one PE, 16 tokens, SIMD 4", 1, 1, 16, 6, 9, 4 },
        { "90% sparse: 3 x 4 PEs, 8 tokens", 3, 4, 8, 24, 40, 8, 0.9 },
    };
    return cases;
}

struct StreamRun {
    std::vector<float> out; // tokens x outputs
    std::vector<float> reference;
    std::vector<int> writes;
    KernelMeasure measure;
    KernelCost model;
    std::uint64_t fmacs = 0;
    std::size_t streamed = 0; // wavelets the weights' streams carry
    std::size_t nonZeros = 0; // W's non-zero values
};

// `edge`: the weights come from off the wafer at that rate instead of from the feeders.
StreamRun runStream(const StreamCase& shape, Pass pass, Storage storage,
    std::optional<fabric::StaticColorFabric::EdgeRate> edge = std::nullopt)
{
    DecodeKernelHarness harness(shape.columns, shape.rows, storage, shape.simdWidth);
    StreamGemmSpec spec;
    spec.name = pass == Pass::Forward ? "forward" : "delta";
    spec.frame = harness.frame();
    spec.pass = pass;
    spec.weight = WeightTensor(31, 0.0f, 0.5f, shape.outputs, shape.inputs, storage).sparse(shape.sparsity);
    spec.tokensPerPe = shape.tokensPerPe;
    const std::int64_t tokens = std::int64_t(shape.columns) * shape.tokensPerPe;
    const std::int64_t inner = pass == Pass::Forward ? shape.inputs : shape.outputs;
    const std::int64_t outputs = pass == Pass::Forward ? shape.outputs : shape.inputs;
    spec.resident.resize(std::size_t(tokens * inner));
    WeightTensor(37, 0.0f, 1.0f, 1, std::int64_t(spec.resident.size()), storage).row(0, spec.resident);
    StreamGemmKernel kernel(spec, harness.context());
    std::vector<std::vector<Pe>> taps;
    for (std::size_t lane = 0; lane < kernel.lanes().size(); ++lane)
        taps.push_back(kernel.taps(lane));
    const int color = edge ? harness.addEdgeFeed("weights", kernel.lanes(), taps, *edge)
                           : harness.addFeed("weights", kernel.lanes(), taps);
    kernel.load(harness.fabric());
    StreamRun run;
    run.streamed = kernel.feed().size();
    for (std::int64_t i = 0; i < shape.outputs; ++i)
        for (std::int64_t j = 0; j < shape.inputs; ++j)
            run.nonZeros += spec.weight.at(i, j) != 0.0f;
    harness.setFeed(color, kernel.feed());
    run.measure = harness.run([&](ProgramWriter& writer) { kernel.program(writer, color); });
    run.model = edge ? kernel.closedForm(edge->start, edge->wavelets, edge->cycles) : kernel.closedForm();
    const Frame& frame = harness.frame();
    for (int v = 0; v < frame.h; ++v)
        for (int u = 0; u < frame.w; ++u)
            run.fmacs += harness.fabric().pe(frame.x(u), frame.y(v)).fmacs;
    run.out = gatherTiles(harness, kernel.outputTiles(), std::size_t(tokens), std::size_t(outputs), &run.writes);
    // The plain loop: each output's sum over the inner index from 0 upwards, in float, of the
    // 16-bit weight times the 16-bit activation.
    run.reference.assign(std::size_t(tokens * outputs), 0.0f);
    for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int64_t o = 0; o < outputs; ++o) {
            float sum = 0.0f;
            for (std::int64_t k = 0; k < inner; ++k) {
                const float w = pass == Pass::Forward ? spec.weight.at(o, k) : spec.weight.at(k, o);
                if (w != 0.0f)
                    sum += w * spec.resident[std::size_t(t * inner + k)];
            }
            run.reference[std::size_t(t * outputs + o)] = sum;
        }
    return run;
}

} // namespace

// Every output is written once and is the plain loop's sum to the bit: the stream brings the
// weights in the loop's order, and each PE adds them in turn in FP32.
WS_TEST(theStreamedGemmComputesTheReferenceSums)
{
    for (const Storage storage : { Storage::Bf16, Storage::Fp16 })
        for (const Pass pass : { Pass::Forward, Pass::BackwardDelta })
            for (const StreamCase& shape : streamCases()) {
                const StreamRun run = runStream(shape, pass, storage);
                int identical = 0;
                for (std::size_t i = 0; i < run.out.size(); ++i)
                    identical += sameBits(run.out[i], run.reference[i]);
                std::printf("%-7s %-5s %-48s %4d of %4zu identical\n", pass == Pass::Forward ? "forward" : "delta",
                    toString(storage), shape.name.c_str(), identical, run.out.size());
                WS_CHECK_EQ(std::size_t(identical), run.out.size());
                WS_CHECK(std::all_of(run.writes.begin(), run.writes.end(), [](int w) { return w == 1; }));
            }
}

// The closed form from the same spec, in both regimes: link wavelets, engine cycles and
// multiply-adds exact (the stream's length and each wavelet's cost are the kernel's), and cycles
// exact too (each row runs at its PEs' pace, the last PE a hop and a cycle behind the one before,
// with nothing else on its links).
WS_TEST(theStreamedGemmRunsAsItsClosedFormSays)
{
    double worst = 0.0;
    for (const Pass pass : { Pass::Forward, Pass::BackwardDelta })
        for (const StreamCase& shape : streamCases()) {
            const StreamRun run = runStream(shape, pass, Storage::Bf16);
            const double cycles = double(run.measure.cycles);
            const double error = (run.model.cycles - cycles) / cycles;
            std::printf("%-7s %-48s %6llu cycles, model %8.1f (%+5.1f%%); busy %.3f, model %.3f; %6llu link wavelets\n",
                pass == Pass::Forward ? "forward" : "delta", shape.name.c_str(),
                static_cast<unsigned long long>(run.measure.cycles), run.model.cycles, 100.0 * error,
                run.measure.busyFraction(), run.model.peBusyFraction,
                static_cast<unsigned long long>(run.measure.linkWavelets));
            WS_CHECK_EQ(closedFormMismatch(run.measure, run.model), std::string());
            WS_CHECK_EQ(run.model.fmacs, double(run.fmacs));
            worst = std::max(worst, std::fabs(error));
        }
    std::printf("streamed GEMM: worst cycle error of the closed form %.1f%%\n", 100.0 * worst);
}

// Sparse weights: the streams carry W's non-zeros only, and a row marker an output; the sums are
// still the plain loop's (over the non-zeros) to the bit, and the run is as much shorter as its
// closed form says (checked above, sparse case included).
WS_TEST(aSparseWeightStreamsItsNonZerosOnly)
{
    const StreamCase& sparse = streamCases().back();
    StreamCase dense = sparse;
    dense.sparsity = 0.0;
    for (const Pass pass : { Pass::Forward, Pass::BackwardDelta }) {
        const StreamRun run = runStream(sparse, pass, Storage::Bf16);
        const StreamRun full = runStream(dense, pass, Storage::Bf16);
        const std::int64_t outputs = pass == Pass::Forward ? sparse.outputs : sparse.inputs;
        std::printf("%-7s 90%% sparse: %zu of %lld weights non-zero, %zu wavelets; %llu cycles against %llu dense\n",
            pass == Pass::Forward ? "forward" : "delta", run.nonZeros,
            static_cast<long long>(sparse.outputs * sparse.inputs), run.streamed,
            static_cast<unsigned long long>(run.measure.cycles), static_cast<unsigned long long>(full.measure.cycles));
        WS_CHECK_EQ(run.streamed, run.nonZeros + std::size_t(outputs));
        WS_CHECK(run.nonZeros > 0 && double(run.nonZeros) < 0.2 * double(sparse.outputs * sparse.inputs));
        WS_CHECK(run.measure.cycles * 3 < full.measure.cycles);
    }
}

namespace {

struct GradientRun {
    std::vector<float> out; // per kept weight, in stream order
    std::vector<float> grouped; // the same sums grouped as the fabric adds them
    std::vector<double> exact; // the plain sum over all tokens, in double
    KernelMeasure measure;
    KernelCost model;
    std::uint64_t fmacs = 0;
    std::size_t kept = 0;
};

GradientRun runGradient(const StreamCase& shape, Storage storage, std::uint32_t chunk = 0)
{
    DecodeKernelHarness harness(shape.columns, shape.rows, storage, shape.simdWidth);
    StreamGradientSpec spec;
    spec.name = "gradient";
    spec.frame = harness.frame();
    spec.weight = WeightTensor(31, 0.0f, 0.5f, shape.outputs, shape.inputs, storage).sparse(shape.sparsity);
    spec.tokensPerPe = shape.tokensPerPe;
    spec.chunk = chunk;
    const std::int64_t tokens = std::int64_t(shape.columns) * shape.tokensPerPe;
    spec.input.resize(std::size_t(tokens * shape.inputs));
    spec.delta.resize(std::size_t(tokens * shape.outputs));
    WeightTensor(41, 0.0f, 1.0f, 1, std::int64_t(spec.input.size()), storage).row(0, spec.input);
    WeightTensor(43, 0.0f, 1.0f, 1, std::int64_t(spec.delta.size()), storage).row(0, spec.delta);
    StreamGradientKernel kernel(spec, harness.context());
    kernel.route(harness.book());
    kernel.load(harness.fabric());
    GradientRun run;
    run.measure = harness.run([&](ProgramWriter& writer) { kernel.program(writer, -1); });
    run.model = kernel.closedForm();
    const Frame& frame = harness.frame();
    for (int v = 0; v < frame.h; ++v)
        for (int u = 0; u < frame.w; ++u)
            run.fmacs += harness.fabric().pe(frame.x(u), frame.y(v)).fmacs;
    const auto T = std::int64_t(shape.tokensPerPe);
    for (const std::vector<float>& values : kernel.exited(harness.fabric()))
        run.out.insert(run.out.end(), values.begin(), values.end());
    for (int r = 0; r < shape.rows; ++r)
        for (const auto& [o, j] : kernel.kept(r)) {
            float sum = 0.0f;
            double exact = 0.0;
            for (int c = shape.columns - 1; c >= 0; --c) {
                float share = 0.0f;
                for (std::int64_t t = c * T; t < (c + 1) * T; ++t) {
                    const float product = spec.delta[std::size_t(t * shape.outputs + o)]
                        * spec.input[std::size_t(t * shape.inputs + j)];
                    share += product;
                    exact += double(spec.delta[std::size_t(t * shape.outputs + o)])
                        * double(spec.input[std::size_t(t * shape.inputs + j)]);
                }
                sum = c + 1 == shape.columns ? share : share + sum;
            }
            run.grouped.push_back(sum);
            run.exact.push_back(exact);
        }
    run.kept = run.grouped.size();
    return run;
}

} // namespace

// Each weight's gradient is the loop that groups the tokens as the fabric does (each column's in
// order, then the columns east to west) to the bit, as it leaves the wafer; against the plain sum over all tokens in
// double it is within float's rounding of those sums: |error| <= (tokens + 1) 2^-24 sum |terms|,
// checked here as a relative 1e-5 of the sum's scale. In chunks of 5 weights a row (the LM head's
// way) the sums are the same.
WS_TEST(theWeightGradientIsTheReferencesSums)
{
    std::vector<StreamCase> cases = streamCases();
    for (const std::uint32_t chunk : { 0u, 5u })
        for (const Storage storage : { Storage::Bf16, Storage::Fp16 })
            for (const StreamCase& shape : cases) {
                const GradientRun run = runGradient(shape, storage, chunk);
                WS_REQUIRE(run.out.size() == run.kept);
                int identical = 0;
                double worst = 0.0;
                for (std::size_t i = 0; i < run.out.size(); ++i) {
                    identical += sameBits(run.out[i], run.grouped[i]);
                    worst = std::max(worst, std::fabs(double(run.out[i]) - run.exact[i]));
                }
                std::printf("gradient %-5s %-48s %4d of %4zu identical, worst %.2g off the exact sum\n",
                    toString(storage), shape.name.c_str(), identical, run.out.size(), worst);
                WS_CHECK_EQ(std::size_t(identical), run.out.size());
                WS_CHECK(worst <= 1e-5 * std::max(1.0, double(shape.columns * shape.tokensPerPe)));
            }
}

// Its closed form from the same spec, in both regimes: link wavelets, engine cycles and
// multiply-adds exact; cycles within 15% (the chain's hops at closedform's average), in one
// chunk a row and in chunks of 5 weights.
WS_TEST(theWeightGradientRunsAsItsClosedFormSays)
{
    double worst = 0.0;
    for (const std::uint32_t chunk : { 0u, 5u })
        for (const StreamCase& shape : streamCases()) {
            const GradientRun run = runGradient(shape, Storage::Bf16, chunk);
            const double cycles = double(run.measure.cycles);
            const double error = (run.model.cycles - cycles) / cycles;
            std::printf(
                "gradient %-48s %6llu cycles, model %8.1f (%+5.1f%%); busy %.3f, model %.3f; %6llu link wavelets\n",
                shape.name.c_str(), static_cast<unsigned long long>(run.measure.cycles), run.model.cycles,
                100.0 * error, run.measure.busyFraction(), run.model.peBusyFraction,
                static_cast<unsigned long long>(run.measure.linkWavelets));
            WS_CHECK_EQ(run.model.linkWavelets, double(run.measure.linkWavelets));
            WS_CHECK_NEAR(run.model.peBusyFraction * double(run.measure.pes) * run.model.cycles,
                double(run.measure.busyCycles), 1e-9);
            WS_CHECK_EQ(run.model.fmacs, double(run.fmacs));
            WS_CHECK(std::fabs(error) <= 0.15);
            worst = std::max(worst, std::fabs(error));
        }
    std::printf("weight gradient: worst cycle error of the closed form %.1f%%\n", 100.0 * worst);
}

// The wafer's edge: the weights enter from off the wafer after MemoryX's and SwarmX's latency and
// at the I/O's pace, here a wavelet every 4 cycles after 200. The stream-bound case is then bound
// by the edge, its PEs waiting for wavelets (their busy share drops by about the pace), and the
// compute-bound one (8 cycles a weight) is not; the sums are the same, and the closed form at that
// pace holds within 15%.
WS_TEST(theEdgePacesAStreamBoundGemm)
{
    const fabric::StaticColorFabric::EdgeRate rate { 200, 1, 4 };
    for (const StreamCase& shape : { streamCases()[0], streamCases()[1] }) {
        const StreamRun free = runStream(shape, Pass::Forward, Storage::Bf16);
        const StreamRun paced = runStream(shape, Pass::Forward, Storage::Bf16, rate);
        const double error = (paced.model.cycles - double(paced.measure.cycles)) / double(paced.measure.cycles);
        std::printf("%-48s at the link's pace %5llu cycles, busy %.3f; at the edge's %5llu, busy %.3f, model %.0f "
                    "(%+.1f%%)\n",
            shape.name.c_str(), static_cast<unsigned long long>(free.measure.cycles), free.measure.busyFraction(),
            static_cast<unsigned long long>(paced.measure.cycles), paced.measure.busyFraction(), paced.model.cycles,
            100.0 * error);
        WS_CHECK(paced.out == free.out);
        WS_CHECK(std::fabs(error) <= 0.15);
        WS_CHECK_EQ(paced.model.linkWavelets, double(paced.measure.linkWavelets));
        WS_CHECK(paced.measure.cycles >= free.measure.cycles + rate.start);
    }
    const StreamRun streamBound = runStream(streamCases()[0], Pass::Forward, Storage::Bf16, rate);
    WS_CHECK(streamBound.measure.busyFraction() < 0.3);
}

WS_TEST(theStreamedGemmRefusesWhatItCannotRun)
{
    DecodeKernelHarness harness(2, 2, Storage::Bf16);
    StreamGemmSpec spec;
    spec.name = "stream";
    spec.frame = harness.frame();
    spec.weight = WeightTensor(31, 0.0f, 0.5f, 4, 6, Storage::Bf16);
    spec.tokensPerPe = 2;
    spec.resident.assign(2 * 2 * 6 - 1, 0.0f);
    const auto refusal = [&](const StreamGemmSpec& s) {
        try {
            StreamGemmKernel kernel(s, harness.context());
        } catch (const std::logic_error& error) {
            return std::string(error.what());
        }
        return std::string();
    };
    WS_CHECK_CONTAINS(refusal(spec), "stream: a resident operand of 23 values; 4 tokens x 6 expected");
    spec.resident.assign(24, 0.0f);
    spec.pass = Pass::BackwardGradient;
    WS_CHECK_CONTAINS(refusal(spec), "the weight gradient is not a streamed GEMM's pass");
}
