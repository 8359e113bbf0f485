#include "core/cyclelevel/trainops.h"

#include <algorithm>
#include <cmath>

namespace waferscope::core::cyclelevel {

bool hasTrainingDerivative(Activation activation)
{
    return activation == Activation::Relu;
}

float activationDerivative(Activation activation, float z)
{
    return activation == Activation::Relu ? (z > 0.0f ? 1.0f : 0.0f) : 0.0f;
}

float softmaxCrossEntropy(
    std::span<const float> logits, std::int32_t label, float gradientScale, Storage storage, std::span<float> dz)
{
    if (label < 0) {
        std::fill(dz.begin(), dz.end(), 0.0f);
        return 0.0f;
    }
    float m = logits[0];
    for (const float z : logits)
        m = std::max(m, z);
    float l = 0.0f;
    for (const float z : logits)
        l += std::exp(z - m);
    for (std::size_t k = 0; k < logits.size(); ++k) {
        const float p = std::exp(logits[k] - m) / l;
        dz[k] = roundToStorage((p - (std::int32_t(k) == label ? 1.0f : 0.0f)) * gradientScale, storage);
    }
    return (std::log(l) + m) - logits[std::size_t(label)];
}

} // namespace waferscope::core::cyclelevel
