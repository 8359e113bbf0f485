#pragma once

#include "core/common/expected.h"
#include "core/kernels/kernelspec.h"
#include "core/kernels/weightsource.h"
#include "core/model/modelgraph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// What the cycle level trains: a model graph's ops as the training step runs them. Today a stack
// of linear layers, each but the last followed by its activation, then softmax cross-entropy
// over the last layer's outputs (fc_mnist and any such classifier); a graph with other ops is
// refused with the first op it cannot train yet.
struct TrainLayer {
    std::string name; // the graph's op: "fc0"
    std::int64_t inputs = 0; // N
    std::int64_t outputs = 0; // M
    bool bias = false;
    bool activated = false;
    Activation activation = Activation::Relu;
    double sparsity = 0.0; // the share of its weights the mask zeroes
};

struct TrainNet {
    std::string model;
    std::vector<TrainLayer> layers;
    Storage storage = Storage::Fp16;
    std::int64_t classes() const { return layers.empty() ? 0 : layers.back().outputs; }
};

// A value uniform in [-1, 1) on a 2^-23 grid from a 64-bit key (WeightTensor's mix), and the key
// of (seed, stream, a, b): what the training step's weights and batches are drawn from.
float trainUniform(std::uint64_t key);
std::uint64_t trainKey(std::uint64_t seed, std::uint64_t stream, std::uint64_t a, std::uint64_t b);

// CannotMap naming the first op the step cannot train; `keepLayers` > 0 keeps that many hidden
// layers and the output layer (whose inputs then are the last kept layer's outputs).
Expected<TrainNet> trainNetOf(const ModelGraph& graph, int keepLayers);

// A step's batch: `tokens` inputs and their labels, a pure function of (seed, step). The inputs
// are S-rounded values in [-1, 1): each class has a prototype, and an input is 3/4 its label's
// prototype and 1/4 noise (each uniform in [-1, 1)), so that the labels are learnable.
struct TrainBatch {
    std::int64_t tokens = 0;
    std::vector<float> inputs; // tokens x the first layer's inputs
    std::vector<std::int32_t> labels;
};
TrainBatch trainBatch(const TrainNet& net, std::int64_t tokens, std::uint64_t seed, std::int64_t step);

// A layer's parameters, outputs x (inputs + 1) row-major, the bias in the last column (0 without
// one): the layout its weight stream carries.
struct LayerParameters {
    std::vector<float> master; // FP32, in MemoryX
    std::vector<float> momentum; // SGD's; Adam's first moment
    std::vector<float> second; // Adam's second moment
    std::vector<float> mask; // 1 where a weight is kept, 0 where the sparsity mask zeroes it
};

// The optimizer in MemoryX (trainops.h 6): the config's, its learning rate from the schedule
// unless `constantRate` > 0, with its loss scale (dynamic: from 2^15, halved and the step
// skipped on a gradient that is not finite, doubled after 2,000 clean steps) and its gradient
// clipping by the global norm.
struct TrainOptimizer {
    ModelConfig::Optimizer kind = ModelConfig::Optimizer::AdamW;
    ModelConfig::OptimizerSettings settings;
    double constantRate = 0.0;
    double lossScale = 1.0; // the scale now
    std::int64_t cleanSteps = 0;
    std::int64_t steps = 0; // updates applied
    double learningRate(std::int64_t step) const; // for the 0-based step
};
TrainOptimizer trainOptimizer(const ModelConfig& config, double constantRate);

struct TrainState {
    std::vector<LayerParameters> layers;
    TrainOptimizer optimizer;
};
// Seeded: a weight uniform times sqrt(3 / inputs) (unit-variance outputs for unit-variance
// inputs), a bias 0; S-rounded; masked by each layer's sparsity.
TrainState initialState(const TrainNet& net, std::uint64_t seed, TrainOptimizer optimizer);

// The weights as the step streams them: S(master), masked zeros left out of the stream.
std::vector<float> streamedWeights(const LayerParameters& layer, Storage storage);

// Applies one update from the loss-scaled gradients (per layer, the parameters' layout); returns
// false when it skipped the step (a gradient not finite under a dynamic scale).
bool applyUpdate(TrainState& state, const std::vector<std::vector<float>>& gradients);

} // namespace waferscope::core::cyclelevel
