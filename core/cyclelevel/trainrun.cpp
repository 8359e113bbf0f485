#include "core/cyclelevel/trainrun.h"

#include "core/cyclelevel/stepkernels.h"
#include "core/cyclelevel/traingptrun.h"
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

// One step's kernels on the fabric, in order.
class FabricStep {
public:
    // `lossScale`: the optimizer's loss scale now, which dz carries.
    FabricStep(const TrainNet& net, const StepLayout& layout, double lossScale, const CycleProgress& progress,
        std::int64_t kernelsBefore, std::int64_t kernelsInAll)
        : m_net(net)
        , m_layout(layout)
        , m_lossScale(lossScale)
        , m_kernels(layout, net.storage, progress, kernelsBefore, kernelsInAll)
    {
    }

    float loss = 0.0f;
    std::vector<std::vector<float>> gradients;
    std::vector<TrainKernelRecord>& records() { return m_kernels.records; }
    std::size_t peakSram() const { return m_kernels.peakSram; }

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
            inputs[l] = withOnes(m_layout.padded, x, layer.inputs);
            const std::vector<float> sums = m_kernels.streamGemm(layer.name, Pass::Forward, layer.outputs, layer.inputs,
                layer.inputs + 1, weights[l], inputs[l], &masks[l]);
            auto [h, z] = activate(layer, sums);
            preActivations[l] = std::move(z);
            x = m_kernels.gather(layer.name, Pass::Forward, h, layer.outputs);
        }
        // The loss on the gathered logits, at every PE of each column.
        std::vector<std::int32_t> labels(std::size_t(padded), -1);
        std::copy(batch.labels.begin(), batch.labels.end(), labels.begin());
        std::vector<float> dz = softmaxLoss(x, labels);

        gradients.assign(layers, {});
        for (std::size_t l = layers; l-- > 0;) {
            const TrainLayer& layer = m_net.layers[l];
            gradients[l] = m_kernels.gradient(layer.name, layer.outputs, layer.inputs + 1, masks[l], inputs[l], dz);
            if (l == 0)
                break;
            const std::vector<float> sums = m_kernels.streamGemm(layer.name, Pass::BackwardDelta, layer.outputs,
                layer.inputs, layer.inputs + 1, weights[l], dz, &masks[l]);
            const std::vector<float> band = activate(m_net.layers[l - 1], sums, &preActivations[l - 1]).first;
            dz = m_kernels.gather(m_net.layers[l - 1].name, Pass::BackwardDelta, band, layer.inputs);
        }
    }

private:
    // On each PE row's band: z = S(sums) and h = S(act(z)) (forward: returns h and z); or the
    // derivative of the layer below's activation, S(S(sums) act'(z)) (backward: returns it, twice).
    std::pair<std::vector<float>, std::vector<float>> activate(
        const TrainLayer& layer, const std::vector<float>& sums, const std::vector<float>* z = nullptr)
    {
        const bool backward = z != nullptr;
        LocalStepSpec spec;
        spec.name = layer.name + (backward ? " activation backward" : " activation");
        spec.op = backward && layer.activated ? LocalStepSpec::Op::ActivateBackward : LocalStepSpec::Op::Activate;
        spec.dims = layer.outputs;
        spec.activated = layer.activated;
        spec.activation = layer.activation;
        spec.input = sums;
        if (spec.op == LocalStepSpec::Op::ActivateBackward)
            spec.saved = *z;
        auto result = m_kernels.local(std::move(spec), layer.name, "activation", backward ? 0 : layer.outputs);
        if (backward) {
            m_kernels.records.back().pass = Pass::BackwardDelta;
            result.second = result.first;
        }
        return result;
    }

    std::vector<float> softmaxLoss(const std::vector<float>& logits, const std::vector<std::int32_t>& labels)
    {
        LocalStepSpec spec;
        spec.name = "loss";
        spec.op = LocalStepSpec::Op::SoftmaxLoss;
        spec.dims = m_net.classes();
        spec.input = logits;
        spec.labels = labels;
        spec.gradientScale = float(m_lossScale) / float(m_layout.tokens);
        auto [dz, perToken] = m_kernels.local(std::move(spec), "loss", "loss", 1);
        float total = 0.0f;
        for (std::int64_t t = 0; t < m_layout.tokens; ++t)
            total += perToken[std::size_t(t)];
        loss = total / float(m_layout.tokens);
        return dz;
    }

    const TrainNet& m_net;
    const StepLayout& m_layout;
    double m_lossScale = 1.0;
    StepKernels m_kernels;
};

// The layout of the micro-batch's tokens (as few a PE as the wafer's columns allow) and the
// rows (as many as the widest op has outputs or inputs, up to the wafer's), and the edge: the
// system's I/O in 4-byte wavelets a cycle, MemoryX's rate if lower, after SwarmX's latency.
StepLayout layoutOf(const TrainNet& net, const SystemSpec& system, const TrainRunOptions& options, std::int64_t tokens)
{
    const WaferSpec& wafer = system.wafer;
    const auto T = int((tokens + wafer.usableWidth - 1) / wafer.usableWidth);
    const auto columns = int((tokens + T - 1) / T);
    std::int64_t widest = 1;
    for (const TrainLayer& layer : net.layers)
        widest = std::max({ widest, layer.outputs, layer.inputs });
    const int rows = int(std::min<std::int64_t>(wafer.usableHeight, widest));
    return stepLayout(system, options, net.storage, Frame { 0, 0, columns, rows, false }, T, tokens);
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
    if (std::optional<Diagnostic> bad = checkTrainOptions(options))
        return *bad;
    if (graph.config.family == ModelConfig::Family::Gpt2 || graph.config.family == ModelConfig::Family::Gpt3) {
        if (!system.memoryx.supported)
            return Diagnostic { "--level", 0, 0, system.displayName + " has no MemoryX: weight streaming needs one",
                Diagnostic::Kind::CannotMap };
        return runDecoderTrainCycleLevel(graph, system, options);
    }
    Expected<TrainNet> netOr = trainNetOf(graph, options.layers);
    if (!netOr)
        return netOr.error();
    if (options.sequence > 1)
        return Diagnostic { "--max_sequence_length", 0, 0,
            graph.config.name + " is trained as a classifier of a token a sample: it takes no sequence length",
            Diagnostic::Kind::BadInput };
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
    result.buildS = secondsSince(built);
    addNotes(result, graph, layout);
    // A step: the forward's stream, activation and gather a layer, the loss, each layer's gradient,
    // and above the first its delta, activation derivative and gather.
    const auto layers = std::int64_t(net.layers.size());
    const std::int64_t kernelsPerStep = 7 * layers - 2;
    std::optional<TrainBatch> batch;
    const auto onFabric = [&](int step, const TrainWeights& weights, const TrainWeights& masks, double lossScale) {
        batch = trainBatch(net, result.tokens, options.seed, step);
        FabricStep fabricStep(
            net, layout, lossScale, options.progress, step * kernelsPerStep, options.steps * kernelsPerStep);
        fabricStep.run(weights, masks, *batch);
        return FabricStepOutcome { fabricStep.loss, std::move(fabricStep.gradients), std::move(fabricStep.records()),
            fabricStep.peakSram() };
    };
    const auto onReference
        = [&](int, const TrainWeights& weights, const TrainWeights& masks, double lossScale, bool withBounds) {
              return referenceStep(net, weights, masks, *batch, lossScale, withBounds);
          };
    if (std::optional<Diagnostic> failed
        = runTrainSteps(result, state, net.storage, options.steps, onFabric, onReference))
        return *failed;
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
            { "bytes_in", record.bytesIn }, { "bytes_out", record.bytesOut }, { "fmacs", record.fmacs },
            { "wall_s", record.wallS } });
    json["regions"] = regions;
    json["fabric"] = { { "peak_sram_bytes_per_pe", result.peakSramBytesPerPe } };
    json["wall_s"] = { { "build", result.buildS }, { "fabric", result.fabricS }, { "reference", result.referenceS } };
    json["notes"] = result.notes;
    return json.dump(2);
}

} // namespace waferscope::core::cyclelevel
