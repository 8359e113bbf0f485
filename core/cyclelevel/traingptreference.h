#pragma once

#include "core/cyclelevel/traingpt.h"
#include "core/cyclelevel/trainops.h"
#include "core/cyclelevel/trainreference.h"

#include <vector>

namespace waferscope::core::cyclelevel {

// One training step of a GPT-2-style decoder (traingpt.h) by trainops.h's contract, in plain
// loops: the check of the fabric's step, which gives the same loss to the bit and the same
// gradients but for the order of each gradient's sum over the tokens (within ReferenceStep's
// bounds). `weights`: per tensor, as streamed; `masks`: which have a gradient; `tokensPerPe`:
// the attention's key blocks (trainops.h 9). `round` exact: no rounding anywhere (the tests'
// finite differences).
ReferenceStep referenceStep(const TrainTransformer& net, const std::vector<std::vector<float>>& weights,
    const std::vector<std::vector<float>>& masks, const TrainTokens& tokens, int tokensPerPe, double lossScale,
    bool withBounds, Rounding round);

} // namespace waferscope::core::cyclelevel
