#include "core/cyclelevel/stepkernels.h"

#include "core/cyclelevel/kernels/columngatherkernel.h"
#include "core/cyclelevel/kernels/streamgemmkernel.h"
#include "core/cyclelevel/kernels/streamgradientkernel.h"
#include "core/kernels/streamgemm.h"

#include <bit>
#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

fabric::StaticColorFabric::EdgeRate paceOf(const StepLayout& layout, std::size_t rows)
{
    fabric::StaticColorFabric::EdgeRate rate;
    rate.start = layout.edgeStart;
    const double share = layout.ioWaveletsPerCycle / double(std::max<std::size_t>(1, rows));
    if (share >= 1.0)
        return rate;
    constexpr std::uint32_t kCycles = 4096;
    const auto wavelets = std::uint32_t(std::max(1.0, std::round(share * kCycles)));
    const std::uint32_t common = std::gcd(wavelets, kCycles);
    rate.wavelets = wavelets / common;
    rate.cycles = kCycles / common;
    return rate;
}

std::vector<float> withOnes(std::int64_t tokens, const std::vector<float>& x, std::int64_t n)
{
    std::vector<float> out(std::size_t(tokens * (n + 1)));
    for (std::int64_t t = 0; t < tokens; ++t) {
        std::copy_n(x.begin() + std::ptrdiff_t(t * n), n, out.begin() + std::ptrdiff_t(t * (n + 1)));
        out[std::size_t(t * (n + 1) + n)] = 1.0f;
    }
    return out;
}

std::optional<Diagnostic> checkTrainOptions(const TrainRunOptions& options)
{
    const auto bad = [](const std::string& option, const std::string& why) {
        return Diagnostic { option, 0, 0, why, Diagnostic::Kind::BadInput };
    };
    if (options.steps < 1 || options.steps > 100'000)
        return bad("--max_steps", "expects 1 to 100000 steps");
    if (options.microBatch < 0 || options.microBatch > 1'000'000)
        return bad("--micro_batch_size", "expects 1 to 1000000 samples or sequences");
    if (options.layers < 0)
        return bad("--layers", "expects a layer count of at least 1 (0: all)");
    if (!(options.learningRate >= 0.0) || !std::isfinite(options.learningRate))
        return bad("--learning_rate", "expects a finite rate above 0");
    return std::nullopt;
}

StepLayout stepLayout(
    const SystemSpec& system, const TrainRunOptions& options, Storage storage, Frame frame, int T, std::int64_t tokens)
{
    const WaferSpec& wafer = system.wafer;
    StepLayout layout;
    layout.tokens = tokens;
    layout.tokensPerPe = T;
    layout.frame = frame;
    layout.padded = std::int64_t(frame.w) * T;
    layout.context.storage = storage;
    layout.context.simdWidth = std::max(1, wafer.fmacPerPePerCycle);
    layout.threads = std::max(1, options.threads);
    layout.maxCycles = options.maxCyclesPerKernel;
    const double io = std::min(system.ioBytesPerS, system.memoryx.dramReadBytesPerS());
    layout.ioWaveletsPerCycle = io / 4.0 / wafer.clockHz;
    layout.edgeStart
        = std::uint64_t(std::llround(system.swarmx.levelLatencyS * system.swarmx.levels(1) * wafer.clockHz));
    return layout;
}

void compareWithReference(
    TrainRunResult& result, float loss, const std::vector<std::vector<float>>& gradients, const ReferenceStep& check)
{
    result.loss = loss;
    result.referenceLoss = check.loss;
    result.lossMatchesReference = loss == check.loss;
    bool within = true;
    for (std::size_t l = 0; l < check.gradients.size(); ++l) {
        for (std::size_t i = 0; i < check.gradients[l].size(); ++i) {
            const double error = std::fabs(double(gradients[l][i]) - double(check.gradients[l][i]));
            result.maxAbsGradError = std::max(result.maxAbsGradError, error);
            const double bound = check.bounds[l][i];
            within = within && error <= bound;
            if (bound > 0.0)
                result.worstBoundShare = std::max(result.worstBoundShare, error / bound);
        }
    }
    result.gradsMatchReference = within;
}

std::optional<Diagnostic> runTrainSteps(TrainRunResult& result, TrainState& state, Storage storage, int steps,
    const FabricStepFn& onFabric, const ReferenceStepFn& onReference)
{
    using Clock = std::chrono::steady_clock;
    const auto since
        = [](Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); };
    TrainState reference = state;
    const auto streamed = [&](const TrainState& of) {
        TrainWeights weights;
        for (const LayerParameters& tensor : of.layers)
            weights.push_back(streamedWeights(tensor, storage));
        return weights;
    };
    try {
        for (int step = 0; step < steps; ++step) {
            TrainWeights masks;
            for (const LayerParameters& tensor : state.layers)
                masks.push_back(tensor.mask);
            result.learningRates.push_back(state.optimizer.learningRate(state.optimizer.steps));
            const Clock::time_point fabricStart = Clock::now();
            FabricStepOutcome fabric = onFabric(step, streamed(state), masks, state.optimizer.lossScale);
            result.fabricS += since(fabricStart);
            result.peakSramBytesPerPe = std::max(result.peakSramBytesPerPe, fabric.peakSram);
            const Clock::time_point referenceStart = Clock::now();
            const ReferenceStep check
                = onReference(step, streamed(reference), masks, reference.optimizer.lossScale, step == 0);
            result.referenceS += since(referenceStart);
            if (step == 0)
                compareWithReference(result, fabric.loss, fabric.gradients, check);
            result.losses.push_back(fabric.loss);
            result.referenceLosses.push_back(check.loss);
            applyUpdate(state, fabric.gradients);
            applyUpdate(reference, check.gradients);
            result.regions = std::move(fabric.records);
        }
    } catch (const TrainCancelled&) {
        return Diagnostic { "--level", 0, 0, "cancelled", Diagnostic::Kind::CannotMap };
    } catch (const std::exception& error) {
        return Diagnostic { "--level", 0, 0, std::string("the training step failed on the fabric: ") + error.what(),
            Diagnostic::Kind::Internal };
    }
    for (const TrainKernelRecord& record : result.regions) {
        result.cyclesPerStep += record.measuredCycles;
        result.modelCyclesPerStep += record.modelCycles;
    }
    result.samplesPerS
        = result.cyclesPerStep > 0 ? double(result.microBatch) * result.clockHz / double(result.cyclesPerStep) : 0.0;
    return std::nullopt;
}

StepKernels::StepKernels(const StepLayout& layout, Storage storage, const CycleProgress& progress,
    std::int64_t kernelsBefore, std::int64_t kernelsInAll)
    : m_layout(layout)
    , m_storage(storage)
    , m_progress(progress)
    , m_index(kernelsBefore)
    , m_kernels(kernelsInAll)
{
}

std::unique_ptr<StreamKernelRun> StepKernels::fabricFor()
{
    m_started = std::chrono::steady_clock::now();
    return std::make_unique<StreamKernelRun>(
        m_layout.frame.w, m_layout.frame.h, m_layout.context.simdWidth, m_layout.threads);
}

void StepKernels::finish(const StreamKernelRun& run, const PrefillKernel& kernel, const std::string& op,
    const char* kind, const StreamRunMeasure& measure, const KernelCost& model, std::int64_t bytesOut)
{
    TrainKernelRecord record;
    record.op = op;
    record.kernel = kind;
    record.pass = kernel.pass();
    record.measuredCycles = measure.cycles;
    record.modelCycles = model.cycles;
    record.linkWavelets = measure.linkWavelets;
    record.modelLinkWavelets = model.linkWavelets;
    const double peCycles = double(measure.pes) * double(std::max<std::uint64_t>(1, measure.cycles));
    record.busyFraction = double(measure.busyCycles) / peCycles;
    record.modelBusyFraction = model.peBusyFraction;
    record.bytesIn = std::int64_t(measure.edgeWavelets) * 4;
    record.bytesOut = bytesOut;
    record.fmacs = measure.fmacs;
    record.wallS = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_started).count();
    records.push_back(record);
    for (int y = 0; y < m_layout.frame.h; ++y)
        for (int x = 0; x < m_layout.frame.w; ++x)
            peakSram = std::max(peakSram, std::size_t(run.fabric().pe(x, y).sramBytes()));
    ++m_index;
    if (m_progress && !m_progress("train", m_index, m_kernels, &run.fabric()))
        throw TrainCancelled {};
}

namespace {

// The tiles of the PEs of fabric row y.
std::vector<PrefillOutputTile> rowTiles(const std::vector<PrefillOutputTile>& tiles, int y)
{
    std::vector<PrefillOutputTile> out;
    for (const PrefillOutputTile& tile : tiles)
        if (tile.pe.y == y)
            out.push_back(tile);
    return out;
}

WeightTensor keepOf(const std::vector<float>* keep, std::size_t size, std::int64_t rows, std::int64_t cols,
    std::int64_t stride, Storage storage)
{
    return WeightTensor::stored(keep ? std::make_shared<const std::vector<float>>(*keep)
                                     : std::make_shared<const std::vector<float>>(size, 1.0f),
        rows, cols, stride, storage);
}

} // namespace

std::vector<float> StepKernels::streamGemm(const std::string& op, Pass pass, std::int64_t outputs, std::int64_t inputs,
    std::int64_t width, const std::vector<float>& weights, const std::vector<float>& resident,
    const std::vector<float>* keep)
{
    const auto shared = std::make_shared<const std::vector<float>>(weights);
    StreamGemmSpec spec;
    spec.name = op + (pass == Pass::Forward ? " forward" : " delta");
    spec.frame = m_layout.frame;
    spec.pass = pass;
    spec.weight = WeightTensor::stored(shared, outputs, pass == Pass::Forward ? width : inputs, width, m_storage);
    spec.keep = keepOf(keep, weights.size(), outputs, pass == Pass::Forward ? width : inputs, width, m_storage);
    spec.tokensPerPe = m_layout.tokensPerPe;
    spec.resident = resident;
    StreamGemmKernel kernel(std::move(spec), m_layout.context);
    auto run = fabricFor();
    const fabric::StaticColorFabric::EdgeRate pace = paceOf(m_layout, kernel.lanes().size());
    const std::vector<float> feed = kernel.feed();
    const int color = run->feedFromEdge(kernel.name(), kernel.lanes(), feed, m_layout.frame.w, pace);
    kernel.load(run->fabric());
    const StreamRunMeasure measure = run->run(kernel, color, m_layout.maxCycles);
    std::vector<float> out = run->read(kernel.outputTiles(), m_layout.padded, kernel.outputs());
    finish(*run, kernel, op, "gemm_stream", measure, kernel.closedForm(pace.start, pace.wavelets, pace.cycles), 0);
    return out;
}

std::pair<std::vector<float>, std::vector<float>> StepKernels::local(
    LocalStepSpec spec, const std::string& op, const char* kind, std::int64_t sideDims)
{
    spec.frame = m_layout.frame;
    spec.tokensPerPe = m_layout.tokensPerPe;
    const std::int64_t dims = spec.dims;
    LocalStepKernel kernel(std::move(spec), m_layout.context);
    auto run = fabricFor();
    kernel.load(run->fabric());
    const StreamRunMeasure measure = run->run(kernel, -1, m_layout.maxCycles);
    std::vector<float> out = run->read(kernel.outputTiles(), m_layout.padded, dims);
    std::vector<float> side
        = sideDims > 0 ? run->read(kernel.sideTiles(), m_layout.padded, sideDims) : std::vector<float>();
    finish(*run, kernel, op, kind, measure, kernel.closedForm(), 0);
    return { std::move(out), std::move(side) };
}

std::vector<float> StepKernels::gather(const std::string& op, Pass pass, const std::vector<float>& bands,
    std::int64_t dims, std::vector<std::uint32_t> bounds)
{
    ColumnGatherSpec spec;
    spec.name = op + " gather";
    spec.frame = m_layout.frame;
    spec.pass = pass;
    spec.tokensPerPe = m_layout.tokensPerPe;
    spec.dims = dims;
    spec.values = bands;
    spec.bands = std::move(bounds);
    ColumnGatherKernel kernel(std::move(spec), m_layout.context);
    auto run = fabricFor();
    kernel.route(run->book());
    kernel.load(run->fabric());
    const StreamRunMeasure measure = run->run(kernel, -1, m_layout.maxCycles);
    std::vector<int> covered(std::size_t(m_layout.frame.w * m_layout.frame.h), 0);
    for (const PrefillOutputTile& tile : kernel.outputTiles()) {
        const fabric::PeState& pe = run->fabric().pe(tile.pe.x, tile.pe.y);
        for (std::uint32_t d = 0; d < tile.dims; ++d)
            for (std::uint32_t t = 0; t < tile.tokens; ++t)
                if (std::bit_cast<std::uint32_t>(pe.f32[tile.offset + d * tile.tokens + t])
                    != std::bit_cast<std::uint32_t>(
                        bands[std::size_t(tile.firstToken + t) * std::size_t(dims) + tile.firstDim + d]))
                    throw std::logic_error(kernel.name() + ": PE (" + std::to_string(tile.pe.x) + ", "
                        + std::to_string(tile.pe.y) + ") holds another value than its band's");
        covered[std::size_t(tile.pe.y * m_layout.frame.w + tile.pe.x)] += int(tile.dims);
    }
    for (const int held : covered)
        if (held != dims)
            throw std::logic_error(kernel.name() + ": a PE holds " + std::to_string(held) + " of "
                + std::to_string(dims) + " values a token");
    finish(*run, kernel, op, "gather", measure, kernel.closedForm(), 0);
    return bands;
}

std::vector<float> StepKernels::gradient(const std::string& op, std::int64_t outputs, std::int64_t width,
    const std::vector<float>& mask, const std::vector<float>& input, const std::vector<float>& delta)
{
    StreamGradientSpec spec;
    spec.name = op + " gradient";
    spec.frame = m_layout.frame;
    spec.weight
        = WeightTensor::stored(std::make_shared<const std::vector<float>>(mask), outputs, width, width, m_storage);
    spec.tokensPerPe = m_layout.tokensPerPe;
    spec.input = input;
    spec.delta = delta;
    std::size_t rows = 0;
    for (int r = 0; r < m_layout.frame.h; ++r)
        rows += blockBegin(outputs, m_layout.frame.h, r + 1) > blockBegin(outputs, m_layout.frame.h, r);
    spec.exit = paceOf(m_layout, rows);
    spec.chunk = kGradientChunk;
    StreamGradientKernel kernel(std::move(spec), m_layout.context);
    auto run = fabricFor();
    kernel.route(run->book());
    kernel.load(run->fabric());
    const StreamRunMeasure measure = run->run(kernel, -1, m_layout.maxCycles);
    std::vector<float> out(std::size_t(outputs * width), 0.0f);
    std::int64_t kept = 0;
    const std::vector<std::vector<float>> exited = kernel.exited(run->fabric());
    for (int r = 0; r < m_layout.frame.h; ++r) {
        const auto pairs = kernel.kept(r);
        const std::vector<float>& values = exited[std::size_t(r)];
        if (values.size() != pairs.size())
            throw std::logic_error(kernel.name() + ": row " + std::to_string(r) + " sent "
                + std::to_string(values.size()) + " gradients off the wafer, not " + std::to_string(pairs.size()));
        for (std::size_t p = 0; p < pairs.size(); ++p)
            out[std::size_t(pairs[p].first * width + pairs[p].second)] = values[p];
        kept += std::int64_t(pairs.size());
    }
    finish(*run, kernel, op, "gradient_stream", measure, kernel.closedForm(), kept * 4);
    return out;
}

std::vector<std::vector<float>> StepKernels::streamGemmPartials(const std::string& op, std::int64_t outputs,
    std::int64_t inputs, std::int64_t width, const std::vector<float>& weights, const std::vector<float>& resident,
    const std::vector<float>* keep)
{
    StreamGemmSpec spec;
    spec.name = op + " delta";
    spec.frame = m_layout.frame;
    spec.pass = Pass::BackwardDelta;
    spec.weight
        = WeightTensor::stored(std::make_shared<const std::vector<float>>(weights), outputs, inputs, width, m_storage);
    spec.tokensPerPe = m_layout.tokensPerPe;
    spec.keep = keepOf(keep, weights.size(), outputs, inputs, width, m_storage);
    spec.resident = resident;
    spec.splitInner = true;
    StreamGemmKernel kernel(std::move(spec), m_layout.context);
    auto run = fabricFor();
    const fabric::StaticColorFabric::EdgeRate pace = paceOf(m_layout, kernel.lanes().size());
    const std::vector<float> feed = kernel.feed();
    const int color = run->feedFromEdge(kernel.name(), kernel.lanes(), feed, m_layout.frame.w, pace);
    kernel.load(run->fabric());
    const StreamRunMeasure measure = run->run(kernel, color, m_layout.maxCycles);
    std::vector<std::vector<float>> partials;
    for (int r = 0; r < m_layout.frame.h; ++r) {
        partials.push_back(run->read(rowTiles(kernel.outputTiles(), m_layout.frame.y(r)), m_layout.padded, inputs));
    }
    finish(*run, kernel, op, "gemm_stream", measure, kernel.closedForm(pace.start, pace.wavelets, pace.cycles), 0);
    return partials;
}

std::vector<float> StepKernels::columnReduce(
    const std::string& op, Pass pass, std::vector<std::vector<float>> partials, std::int64_t dims)
{
    ColumnReduceSpec spec;
    spec.name = op + " reduce";
    spec.frame = m_layout.frame;
    spec.pass = pass;
    spec.tokensPerPe = m_layout.tokensPerPe;
    spec.dims = dims;
    spec.partials = std::move(partials);
    ColumnReduceKernel kernel(std::move(spec), m_layout.context);
    auto run = fabricFor();
    kernel.route(run->book());
    kernel.load(run->fabric());
    const StreamRunMeasure measure = run->run(kernel, -1, m_layout.maxCycles);
    // Every PE holds the sums: the first row's copy is the result, each other row's checked against it.
    std::vector<float> out = run->read(rowTiles(kernel.outputTiles(), m_layout.frame.y(0)), m_layout.padded, dims);
    for (int r = 1; r < m_layout.frame.h; ++r) {
        const std::vector<float> copy
            = run->read(rowTiles(kernel.outputTiles(), m_layout.frame.y(r)), m_layout.padded, dims);
        for (std::size_t i = 0; i < out.size(); ++i)
            if (std::bit_cast<std::uint32_t>(copy[i]) != std::bit_cast<std::uint32_t>(out[i]))
                throw std::logic_error(kernel.name() + ": the rows of a column hold different sums");
    }
    finish(*run, kernel, op, "reduce", measure, kernel.closedForm(), 0);
    return out;
}

std::pair<std::vector<float>, std::vector<float>> StepKernels::bandedLoss(BandedLossSpec spec)
{
    spec.frame = m_layout.frame;
    spec.tokensPerPe = m_layout.tokensPerPe;
    const std::int64_t V = spec.dims;
    BandedLossKernel kernel(std::move(spec), m_layout.context);
    auto run = fabricFor();
    kernel.route(run->book());
    kernel.load(run->fabric());
    const StreamRunMeasure measure = run->run(kernel, -1, m_layout.maxCycles);
    std::vector<float> dz = run->read(kernel.outputTiles(), m_layout.padded, V);
    const std::vector<float> perRow = run->read(kernel.sideTiles(), m_layout.padded, m_layout.frame.h);
    std::vector<float> losses(std::size_t(m_layout.padded), 0.0f);
    for (std::int64_t t = 0; t < m_layout.padded; ++t)
        for (int r = 0; r < m_layout.frame.h; ++r)
            losses[std::size_t(t)] += perRow[std::size_t(t * m_layout.frame.h + r)];
    finish(*run, kernel, "loss", "loss", measure, kernel.closedForm(), 0);
    return { std::move(dz), std::move(losses) };
}

std::pair<std::vector<float>, std::vector<float>> StepKernels::attention(RowAttentionSpec spec, std::int64_t dims)
{
    spec.frame = m_layout.frame;
    spec.tokensPerPe = m_layout.tokensPerPe;
    const std::string op = spec.name;
    const bool forward = spec.mode == RowAttentionSpec::Mode::Forward;
    const std::int64_t heads = spec.heads;
    spec.name += forward ? "" : (spec.mode == RowAttentionSpec::Mode::QueryGrad ? " dq" : " dk dv");
    RowAttentionKernel kernel(std::move(spec), m_layout.context);
    auto run = fabricFor();
    kernel.route(run->book());
    kernel.load(run->fabric());
    const StreamRunMeasure measure = run->run(kernel, -1, m_layout.maxCycles);
    std::vector<float> out = run->read(kernel.outputTiles(), m_layout.padded, dims);
    std::vector<float> lse = forward ? run->read(kernel.sideTiles(), m_layout.padded, heads) : std::vector<float>();
    finish(*run, kernel, op, "attention", measure, kernel.closedForm(), 0);
    return { std::move(out), std::move(lse) };
}

} // namespace waferscope::core::cyclelevel
