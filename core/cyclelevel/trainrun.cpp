#include "core/cyclelevel/trainrun.h"

#include "core/cyclelevel/kernels/columngatherkernel.h"
#include "core/cyclelevel/kernels/localstepkernel.h"
#include "core/cyclelevel/kernels/streamgemmkernel.h"
#include "core/cyclelevel/kernels/streamgradientkernel.h"
#include "core/cyclelevel/streamfabric.h"
#include "core/cyclelevel/trainreference.h"

#include <nlohmann/json.hpp>

#include <bit>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Cancelled { };

// The layout and the edge of a run: what every kernel of a step shares.
struct StepLayout {
    Frame frame;
    int tokensPerPe = 1;
    std::int64_t tokens = 0; // real ones
    std::int64_t padded = 0; // C T
    KernelContext context;
    int threads = 1;
    std::uint64_t maxCycles = 0;
    double ioWaveletsPerCycle = 0.0;
    std::uint64_t edgeStart = 0;
};

// The pace of each of `rows` streams sharing the I/O: at most w every c cycles, w / c within
// 1/4096 of the share.
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

// One step's kernels on the fabric, in order.
class FabricStep {
public:
    // `lossScale`: the optimizer's loss scale now, which dz carries.
    FabricStep(const TrainNet& net, const StepLayout& layout, double lossScale, const CycleProgress& progress,
        std::int64_t kernelsBefore, std::int64_t kernelsInAll)
        : m_net(net)
        , m_layout(layout)
        , m_lossScale(lossScale)
        , m_progress(progress)
        , m_index(kernelsBefore)
        , m_kernels(kernelsInAll)
    {
    }

    float loss = 0.0f;
    std::vector<std::vector<float>> gradients;
    std::vector<TrainKernelRecord> records;
    std::size_t peakSram = 0;

    void run(const std::vector<std::vector<float>>& weights, const std::vector<std::vector<float>>& masks,
        const TrainBatch& batch)
    {
        const std::size_t layers = m_net.layers.size();
        const std::int64_t padded = m_layout.padded;
        std::vector<std::vector<float>> inputs(layers); // X~ of each layer: padded x (N + 1), ones last
        std::vector<std::vector<float>> preActivations(layers);
        std::vector<float> x(std::size_t(padded * m_net.layers.front().inputs), 0.0f);
        std::copy(batch.inputs.begin(), batch.inputs.end(), x.begin());
        for (std::size_t l = 0; l < layers; ++l) {
            const TrainLayer& layer = m_net.layers[l];
            inputs[l] = withOnes(x, layer.inputs);
            const std::vector<float> sums = streamGemm(layer, Pass::Forward, weights[l], inputs[l]);
            auto [h, z] = activate(layer, sums);
            preActivations[l] = std::move(z);
            x = gather(layer.name, Pass::Forward, h, layer.outputs);
        }
        // The loss on the gathered logits, at every PE of each column.
        std::vector<std::int32_t> labels(std::size_t(padded), -1);
        std::copy(batch.labels.begin(), batch.labels.end(), labels.begin());
        std::vector<float> dz = softmaxLoss(x, labels);

        gradients.assign(layers, {});
        for (std::size_t l = layers; l-- > 0;) {
            const TrainLayer& layer = m_net.layers[l];
            gradients[l] = gradient(layer, masks[l], inputs[l], dz);
            if (l == 0)
                break;
            const std::vector<float> sums = streamGemm(layer, Pass::BackwardDelta, weights[l], dz);
            const std::vector<float> band = activate(m_net.layers[l - 1], sums, &preActivations[l - 1]).first;
            dz = gather(m_net.layers[l - 1].name, Pass::BackwardDelta, band, layer.inputs);
        }
    }

private:
    std::vector<float> withOnes(const std::vector<float>& x, std::int64_t n) const
    {
        std::vector<float> out(std::size_t(m_layout.padded * (n + 1)));
        for (std::int64_t t = 0; t < m_layout.padded; ++t) {
            std::copy_n(x.begin() + std::ptrdiff_t(t * n), n, out.begin() + std::ptrdiff_t(t * (n + 1)));
            out[std::size_t(t * (n + 1) + n)] = 1.0f;
        }
        return out;
    }

    std::unique_ptr<StreamKernelRun> fabricFor() const
    {
        return std::make_unique<StreamKernelRun>(
            m_layout.frame.w, m_layout.frame.h, m_layout.context.simdWidth, m_layout.threads);
    }

    void finish(const StreamKernelRun& run, const PrefillKernel& kernel, const std::string& op, const char* kind,
        const StreamRunMeasure& measure, const KernelCost& model, std::int64_t bytesOut)
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
        records.push_back(record);
        for (int y = 0; y < m_layout.frame.h; ++y)
            for (int x = 0; x < m_layout.frame.w; ++x)
                peakSram = std::max(peakSram, std::size_t(run.fabric().pe(x, y).sramBytes()));
        ++m_index;
        if (m_progress && !m_progress("train", m_index, m_kernels, &run.fabric()))
            throw Cancelled {};
    }

    // Forward: Y = W X~ (the bias W's last column); backward delta: dX = W^T dY over W's inputs.
    std::vector<float> streamGemm(
        const TrainLayer& layer, Pass pass, const std::vector<float>& weights, const std::vector<float>& resident)
    {
        const auto shared = std::make_shared<const std::vector<float>>(weights);
        const std::int64_t width = layer.inputs + 1;
        StreamGemmSpec spec;
        spec.name = layer.name + (pass == Pass::Forward ? " forward" : " delta");
        spec.frame = m_layout.frame;
        spec.pass = pass;
        spec.weight = WeightTensor::stored(
            shared, layer.outputs, pass == Pass::Forward ? width : layer.inputs, width, m_net.storage);
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
        finish(*run, kernel, layer.name, "gemm_stream", measure,
            kernel.closedForm(pace.start, pace.wavelets, pace.cycles), 0);
        return out;
    }

    // On each PE row's band: z = S(sums) and h = S(act(z)) (forward: returns h and z); or the
    // derivative of the layer below's activation, S(S(sums) act'(z)) (backward: returns it, twice).
    std::pair<std::vector<float>, std::vector<float>> activate(
        const TrainLayer& layer, const std::vector<float>& sums, const std::vector<float>* z = nullptr)
    {
        const bool backward = z != nullptr;
        LocalStepSpec spec;
        spec.name = layer.name + (backward ? " activation backward" : " activation");
        spec.frame = m_layout.frame;
        spec.op = backward && layer.activated ? LocalStepSpec::Op::ActivateBackward : LocalStepSpec::Op::Activate;
        spec.tokensPerPe = m_layout.tokensPerPe;
        spec.dims = layer.outputs;
        spec.activated = layer.activated;
        spec.activation = layer.activation;
        spec.input = sums;
        if (spec.op == LocalStepSpec::Op::ActivateBackward)
            spec.saved = *z;
        LocalStepKernel kernel(std::move(spec), m_layout.context);
        auto run = fabricFor();
        kernel.load(run->fabric());
        const StreamRunMeasure measure = run->run(kernel, -1, m_layout.maxCycles);
        std::vector<float> out = run->read(kernel.outputTiles(), m_layout.padded, layer.outputs);
        std::vector<float> side = backward ? out : run->read(kernel.sideTiles(), m_layout.padded, layer.outputs);
        finish(*run, kernel, layer.name, "activation", measure, kernel.closedForm(), 0);
        if (backward)
            records.back().pass = Pass::BackwardDelta;
        return { std::move(out), std::move(side) };
    }

    // Every PE of a column gets all `dims` values of its tokens; each copy is checked against
    // what the bands held, since the next kernel loads the values from here.
    std::vector<float> gather(const std::string& op, Pass pass, const std::vector<float>& bands, std::int64_t dims)
    {
        ColumnGatherSpec spec;
        spec.name = op + " gather";
        spec.frame = m_layout.frame;
        spec.pass = pass;
        spec.tokensPerPe = m_layout.tokensPerPe;
        spec.dims = dims;
        spec.values = bands;
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

    std::vector<float> softmaxLoss(const std::vector<float>& logits, const std::vector<std::int32_t>& labels)
    {
        LocalStepSpec spec;
        spec.name = "loss";
        spec.frame = m_layout.frame;
        spec.op = LocalStepSpec::Op::SoftmaxLoss;
        spec.tokensPerPe = m_layout.tokensPerPe;
        spec.dims = m_net.classes();
        spec.input = logits;
        spec.labels = labels;
        spec.gradientScale = float(m_lossScale) / float(m_layout.tokens);
        LocalStepKernel kernel(std::move(spec), m_layout.context);
        auto run = fabricFor();
        kernel.load(run->fabric());
        const StreamRunMeasure measure = run->run(kernel, -1, m_layout.maxCycles);
        std::vector<float> dz = run->read(kernel.outputTiles(), m_layout.padded, m_net.classes());
        const std::vector<float> perToken = run->read(kernel.sideTiles(), m_layout.padded, 1);
        float total = 0.0f;
        for (std::int64_t t = 0; t < m_layout.tokens; ++t)
            total += perToken[std::size_t(t)];
        loss = total / float(m_layout.tokens);
        finish(*run, kernel, "loss", "loss", measure, kernel.closedForm(), 0);
        return dz;
    }

    // dW~ = dY X~^T for the weights the mask keeps, as they leave the wafer through each row's
    // west edge, at the I/O's pace (the rows share it as the weights' streams do).
    std::vector<float> gradient(const TrainLayer& layer, const std::vector<float>& mask,
        const std::vector<float>& input, const std::vector<float>& delta)
    {
        const std::int64_t width = layer.inputs + 1;
        StreamGradientSpec spec;
        spec.name = layer.name + " gradient";
        spec.frame = m_layout.frame;
        spec.weight = WeightTensor::stored(
            std::make_shared<const std::vector<float>>(mask), layer.outputs, width, width, m_net.storage);
        spec.tokensPerPe = m_layout.tokensPerPe;
        spec.input = input;
        spec.delta = delta;
        std::size_t rows = 0;
        for (int r = 0; r < m_layout.frame.h; ++r)
            rows += blockBegin(layer.outputs, m_layout.frame.h, r + 1) > blockBegin(layer.outputs, m_layout.frame.h, r);
        spec.exit = paceOf(m_layout, rows);
        StreamGradientKernel kernel(std::move(spec), m_layout.context);
        auto run = fabricFor();
        kernel.route(run->book());
        kernel.load(run->fabric());
        const StreamRunMeasure measure = run->run(kernel, -1, m_layout.maxCycles);
        std::vector<float> out(std::size_t(layer.outputs * width), 0.0f);
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
        finish(*run, kernel, layer.name, "gradient_stream", measure, kernel.closedForm(), kept * 4);
        return out;
    }

    const TrainNet& m_net;
    const StepLayout& m_layout;
    double m_lossScale = 1.0;
    const CycleProgress& m_progress;
    std::int64_t m_index = 0;
    std::int64_t m_kernels = 0;
};

std::optional<Diagnostic> checkOptions(const TrainRunOptions& options)
{
    const auto bad = [](const std::string& option, const std::string& why) {
        return Diagnostic { option, 0, 0, why, Diagnostic::Kind::BadInput };
    };
    if (options.steps < 1 || options.steps > 100'000)
        return bad("--max_steps", "expects 1 to 100000 steps");
    if (options.microBatch < 0 || options.microBatch > 1'000'000)
        return bad("--micro_batch_size", "expects 1 to 1000000 samples");
    if (options.layers < 0)
        return bad("--layers", "expects a layer count of at least 1 (0: all)");
    if (!(options.learningRate >= 0.0) || !std::isfinite(options.learningRate))
        return bad("--learning_rate", "expects a finite rate above 0");
    return std::nullopt;
}

// The layout of the micro-batch's tokens (as few a PE as the wafer's columns allow) and the
// rows (as many as the widest op has outputs or inputs, up to the wafer's), and the edge: the
// system's I/O in 4-byte wavelets a cycle, MemoryX's rate if lower, after SwarmX's latency.
StepLayout layoutOf(const TrainNet& net, const SystemSpec& system, const TrainRunOptions& options, std::int64_t tokens)
{
    const WaferSpec& wafer = system.wafer;
    StepLayout layout;
    layout.tokens = tokens;
    layout.tokensPerPe = int((tokens + wafer.usableWidth - 1) / wafer.usableWidth);
    const auto columns = int((tokens + layout.tokensPerPe - 1) / layout.tokensPerPe);
    std::int64_t widest = 1;
    for (const TrainLayer& layer : net.layers)
        widest = std::max({ widest, layer.outputs, layer.inputs });
    const int rows = int(std::min<std::int64_t>(wafer.usableHeight, widest));
    layout.frame = Frame { 0, 0, columns, rows, false };
    layout.padded = std::int64_t(columns) * layout.tokensPerPe;
    layout.context.storage = net.storage;
    layout.context.simdWidth = std::max(1, wafer.fmacPerPePerCycle);
    layout.threads = std::max(1, options.threads);
    layout.maxCycles = options.maxCyclesPerKernel;
    const double io = std::min(system.ioBytesPerS, system.memoryx.dramReadBytesPerS());
    layout.ioWaveletsPerCycle = io / 4.0 / wafer.clockHz;
    layout.edgeStart
        = std::uint64_t(std::llround(system.swarmx.levelLatencyS * system.swarmx.levels(1) * wafer.clockHz));
    return layout;
}

// What a PE holds through a step: every layer's input for the gradient (16-bit), the widest op's
// working set beside it.
std::int64_t bytesPerPe(const TrainNet& net, const StepLayout& layout)
{
    std::int64_t resident = 0;
    std::int64_t working = 0;
    for (const TrainLayer& layer : net.layers) {
        resident += (layer.inputs + 1) * layout.tokensPerPe * 2;
        const std::int64_t band = (layer.outputs + layout.frame.h - 1) / layout.frame.h;
        working = std::max(working,
            (layer.inputs + 1) * layout.tokensPerPe * 2 + band * (layer.inputs + 1) * 8
                + std::max(layer.outputs, layer.inputs) * layout.tokensPerPe * 8);
    }
    return resident + working;
}

// The first step's check: the loss to the bit, every gradient within its bound.
void compareWithReference(TrainRunResult& result, const FabricStep& step, const ReferenceStep& check)
{
    result.loss = step.loss;
    result.referenceLoss = check.loss;
    result.lossMatchesReference = step.loss == check.loss;
    bool within = true;
    for (std::size_t l = 0; l < check.gradients.size(); ++l) {
        for (std::size_t i = 0; i < check.gradients[l].size(); ++i) {
            const double error = std::fabs(double(step.gradients[l][i]) - double(check.gradients[l][i]));
            result.maxAbsGradError = std::max(result.maxAbsGradError, error);
            const double bound = check.bounds[l][i];
            within = within && error <= bound;
            if (bound > 0.0)
                result.worstBoundShare = std::max(result.worstBoundShare, error / bound);
        }
    }
    result.gradsMatchReference = within;
}

void addNotes(TrainRunResult& result, const ModelGraph& graph, const StepLayout& layout)
{
    result.notes.push_back("weight streaming on " + std::to_string(layout.frame.h) + " x "
        + std::to_string(layout.frame.w) + " PEs, " + std::to_string(layout.tokensPerPe)
        + " token(s) a PE; each kernel runs on the fabric after the one before, loaded with what that one left on "
          "the same PEs");
    const ModelConfig::Optimizer optimizer = graph.config.optimizer;
    if (optimizer != ModelConfig::Optimizer::Sgd && optimizer != ModelConfig::Optimizer::Adam
        && optimizer != ModelConfig::Optimizer::AdamW)
        result.notes.push_back("the config's optimizer has no update here yet: SGD stands in for it");
    result.notes.push_back("the gradients leave through the west edge at the I/O's pace, each row's share of it; "
                           "the step's kernels run one after another, with no overlap between them yet");
}

} // namespace

Expected<TrainRunResult> runTrainCycleLevel(
    const ModelGraph& graph, const SystemSpec& system, const TrainRunOptions& options)
{
    if (std::optional<Diagnostic> bad = checkOptions(options))
        return *bad;
    Expected<TrainNet> netOr = trainNetOf(graph, options.layers);
    if (!netOr)
        return netOr.error();
    const TrainNet& net = *netOr;
    if (!system.memoryx.supported)
        return Diagnostic { "--level", 0, 0, system.displayName + " has no MemoryX: weight streaming needs one",
            Diagnostic::Kind::CannotMap };

    const Clock::time_point built = Clock::now();
    TrainRunResult result;
    result.model = graph.config.name;
    result.system = system.name;
    result.microBatch = options.microBatch > 0 ? options.microBatch : 16;
    result.tokens = result.microBatch; // a classifier: a token a sample
    result.layers = int(net.layers.size());
    result.clockHz = system.wafer.clockHz;
    const StepLayout layout = layoutOf(net, system, options, result.tokens);
    result.rows = layout.frame.h;
    result.columns = layout.frame.w;
    result.tokensPerPe = layout.tokensPerPe;
    result.ioWaveletsPerCycle = layout.ioWaveletsPerCycle;
    result.edgeStartCycles = layout.edgeStart;
    const fabric::StaticColorFabric::EdgeRate pace = paceOf(layout, std::size_t(layout.frame.h));
    result.paceWavelets = pace.wavelets;
    result.paceCycles = pace.cycles;
    if (const std::int64_t bytes = bytesPerPe(net, layout); bytes > system.wafer.sramPerPeBytes)
        return Diagnostic { "--level", 0, 0,
            "a PE would hold " + std::to_string(bytes) + " bytes of the step's activations and working set, more "
                + "than its " + std::to_string(system.wafer.sramPerPeBytes)
                + "; a smaller --micro_batch_size or --layers fits",
            Diagnostic::Kind::CannotMap };

    TrainState state = initialState(net, options.seed, trainOptimizer(graph.config, options.learningRate));
    if (state.optimizer.learningRate(0) <= 0.0)
        result.notes.push_back("the first step's learning rate is 0 (the config's schedule warms up from 0, or it "
                               "gives none this step can read): the weights do not change; --learning_rate sets one");
    TrainState reference = state;
    result.buildS = secondsSince(built);
    addNotes(result, graph, layout);
    // A step: the forward's stream, activation and gather a layer, the loss, each layer's gradient,
    // and above the first its delta, activation derivative and gather.
    const auto layers = std::int64_t(net.layers.size());
    const std::int64_t kernelsPerStep = 7 * layers - 2;
    try {
        for (int step = 0; step < options.steps; ++step) {
            const TrainBatch batch = trainBatch(net, result.tokens, options.seed, step);
            std::vector<std::vector<float>> weights;
            std::vector<std::vector<float>> masks;
            for (const LayerParameters& layer : state.layers) {
                weights.push_back(streamedWeights(layer, net.storage));
                masks.push_back(layer.mask);
            }
            result.learningRates.push_back(state.optimizer.learningRate(state.optimizer.steps));
            const Clock::time_point onFabric = Clock::now();
            FabricStep fabricStep(net, layout, state.optimizer.lossScale, options.progress, step * kernelsPerStep,
                options.steps * kernelsPerStep);
            fabricStep.run(weights, masks, batch);
            result.fabricS += secondsSince(onFabric);
            result.peakSramBytesPerPe = std::max(result.peakSramBytesPerPe, fabricStep.peakSram);

            const Clock::time_point referenced = Clock::now();
            std::vector<std::vector<float>> referenceWeights;
            for (const LayerParameters& layer : reference.layers)
                referenceWeights.push_back(streamedWeights(layer, net.storage));
            const ReferenceStep check
                = referenceStep(net, referenceWeights, masks, batch, reference.optimizer.lossScale, step == 0);
            result.referenceS += secondsSince(referenced);
            if (step == 0)
                compareWithReference(result, fabricStep, check);
            result.losses.push_back(fabricStep.loss);
            result.referenceLosses.push_back(check.loss);
            applyUpdate(state, fabricStep.gradients);
            applyUpdate(reference, check.gradients);
            result.regions = std::move(fabricStep.records);
        }
    } catch (const Cancelled&) {
        return Diagnostic { "--level", 0, 0, "cancelled", Diagnostic::Kind::CannotMap };
    } catch (const std::exception& error) {
        return Diagnostic { "--level", 0, 0, std::string("the training step failed on the fabric: ") + error.what(),
            Diagnostic::Kind::Internal };
    }
    for (const TrainKernelRecord& record : result.regions) {
        result.cyclesPerStep += record.measuredCycles;
        result.modelCyclesPerStep += record.modelCycles;
    }
    result.samplesPerS = result.cyclesPerStep > 0
        ? double(result.microBatch) * system.wafer.clockHz / double(result.cyclesPerStep)
        : 0.0;
    return result;
}

std::string trainRunToJson(const TrainRunResult& result)
{
    nlohmann::ordered_json json;
    json["level"] = "cycle";
    json["mode"] = "train";
    json["model"] = result.model;
    json["system"] = result.system;
    json["execution"] = result.execution;
    json["micro_batch_size"] = result.microBatch;
    json["tokens"] = result.tokens;
    json["layers"] = result.layers;
    json["loss"] = result.loss;
    json["reference_loss"] = result.referenceLoss;
    json["loss_matches_reference"] = result.lossMatchesReference;
    json["max_abs_grad_error"] = result.maxAbsGradError;
    json["grads_match_reference"] = result.gradsMatchReference;
    json["worst_error_share_of_bound"] = result.worstBoundShare;
    json["cycles_per_step"] = result.cyclesPerStep;
    json["model_cycles_per_step"] = result.modelCyclesPerStep;
    json["clock_hz"] = result.clockHz;
    json["samples_per_s"] = result.samplesPerS;
    json["losses"] = result.losses;
    json["reference_losses"] = result.referenceLosses;
    json["learning_rates"] = result.learningRates;
    json["layout"]
        = { { "rows", result.rows }, { "columns", result.columns }, { "tokens_per_pe", result.tokensPerPe } };
    json["edge"] = { { "io_wavelets_per_cycle", result.ioWaveletsPerCycle }, { "start_cycles", result.edgeStartCycles },
        { "pace_wavelets", result.paceWavelets }, { "pace_cycles", result.paceCycles } };
    nlohmann::ordered_json regions = nlohmann::ordered_json::array();
    for (const TrainKernelRecord& record : result.regions)
        regions.push_back({ { "op", record.op }, { "kernel", record.kernel }, { "pass", nameOf(record.pass) },
            { "measured_cycles", record.measuredCycles }, { "model_cycles", record.modelCycles },
            { "link_wavelets", record.linkWavelets }, { "model_link_wavelets", record.modelLinkWavelets },
            { "busy_fraction", record.busyFraction }, { "model_busy_fraction", record.modelBusyFraction },
            { "bytes_in", record.bytesIn }, { "bytes_out", record.bytesOut }, { "fmacs", record.fmacs } });
    json["regions"] = regions;
    json["fabric"] = { { "peak_sram_bytes_per_pe", result.peakSramBytesPerPe } };
    json["wall_s"] = { { "build", result.buildS }, { "fabric", result.fabricS }, { "reference", result.referenceS } };
    json["notes"] = result.notes;
    return json.dump(2);
}

} // namespace waferscope::core::cyclelevel
