#include "core/cyclelevel/trainreference.h"

#include "core/cyclelevel/referenceops.h"
#include "core/cyclelevel/trainops.h"

#include <cmath>
#include <limits>

namespace waferscope::core::cyclelevel {

ReferenceStep referenceStep(const TrainNet& net, const std::vector<std::vector<float>>& weights,
    const std::vector<std::vector<float>>& masks, const TrainBatch& batch, double lossScale, bool withBounds)
{
    const std::int64_t n = batch.tokens;
    const Storage storage = net.storage;
    const std::size_t layers = net.layers.size();
    // Per layer: its input x (n x N), pre-activation z (n x M).
    std::vector<std::vector<float>> inputs(layers);
    std::vector<std::vector<float>> preActivations(layers);
    std::vector<float> x = batch.inputs;
    for (std::size_t l = 0; l < layers; ++l) {
        const TrainLayer& layer = net.layers[l];
        const std::int64_t N = layer.inputs;
        const std::int64_t M = layer.outputs;
        const std::vector<float>& w = weights[l];
        inputs[l] = x;
        std::vector<float> z(std::size_t(n * M));
        std::vector<float> h(std::size_t(n * M));
        for (std::int64_t t = 0; t < n; ++t) {
            for (std::int64_t i = 0; i < M; ++i) {
                float sum = 0.0f;
                for (std::int64_t j = 0; j < N; ++j)
                    sum += w[std::size_t(i * (N + 1) + j)] * x[std::size_t(t * N + j)];
                sum += w[std::size_t(i * (N + 1) + N)];
                const float value = roundToStorage(sum, storage);
                z[std::size_t(t * M + i)] = value;
                h[std::size_t(t * M + i)] = layer.activated ? ffnHidden(layer.activation, value, 0.0f, storage) : value;
            }
        }
        preActivations[l] = std::move(z);
        x = std::move(h);
    }

    ReferenceStep step;
    const std::int64_t classes = net.classes();
    const float g = float(lossScale) / float(n);
    std::vector<float> dz(std::size_t(n * classes));
    float total = 0.0f;
    for (std::int64_t t = 0; t < n; ++t)
        total += softmaxCrossEntropy(std::span(x).subspan(std::size_t(t * classes), std::size_t(classes)),
            batch.labels[std::size_t(t)], g, storage,
            std::span(dz).subspan(std::size_t(t * classes), std::size_t(classes)));
    step.loss = total / float(n);

    step.gradients.resize(layers);
    if (withBounds)
        step.bounds.resize(layers);
    const double u = 0x1p-24;
    const double gamma = double(n - 1) * u / (1.0 - double(n - 1) * u);
    for (std::size_t l = layers; l-- > 0;) {
        const TrainLayer& layer = net.layers[l];
        const std::int64_t N = layer.inputs;
        const std::int64_t M = layer.outputs;
        const std::vector<float>& in = inputs[l];
        const std::vector<float>& w = weights[l];
        std::vector<float>& grad = step.gradients[l];
        grad.assign(std::size_t(M * (N + 1)), 0.0f);
        if (withBounds)
            step.bounds[l].assign(grad.size(), 0.0f);
        for (std::int64_t i = 0; i < M; ++i) {
            for (std::int64_t j = 0; j <= N; ++j) {
                const std::size_t at = std::size_t(i * (N + 1) + j);
                if (masks[l][at] == 0.0f)
                    continue; // a masked weight (or no bias) gets no gradient
                float sum = 0.0f;
                double magnitude = 0.0;
                for (std::int64_t t = 0; t < n; ++t) {
                    const float product = dz[std::size_t(t * M + i)] * (j == N ? 1.0f : in[std::size_t(t * N + j)]);
                    sum += product;
                    magnitude += std::fabs(double(product));
                }
                grad[at] = sum;
                if (withBounds)
                    step.bounds[l][at]
                        = float(2.0 * gamma * magnitude + double(n) * double(std::numeric_limits<float>::denorm_min()));
            }
        }
        if (l == 0)
            break;
        // The delta into the layer below, then its activation's derivative.
        const TrainLayer& below = net.layers[l - 1];
        const std::vector<float>& z = preActivations[l - 1];
        std::vector<float> next(std::size_t(n * N));
        for (std::int64_t t = 0; t < n; ++t) {
            for (std::int64_t j = 0; j < N; ++j) {
                float sum = 0.0f;
                for (std::int64_t i = 0; i < M; ++i)
                    sum += w[std::size_t(i * (N + 1) + j)] * dz[std::size_t(t * M + i)];
                const float dh = roundToStorage(sum, storage);
                next[std::size_t(t * N + j)] = below.activated
                    ? roundToStorage(dh * activationDerivative(below.activation, z[std::size_t(t * N + j)]), storage)
                    : dh;
            }
        }
        dz = std::move(next);
    }
    return step;
}

} // namespace waferscope::core::cyclelevel
