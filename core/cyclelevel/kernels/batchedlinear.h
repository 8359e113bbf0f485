#pragma once

#include "core/cyclelevel/tokenmatrix.h"
#include "core/cyclelevel/weights.h"

namespace waferscope::core::cyclelevel {

// A seeded matrix applied to a batch of tokens, each weight drawn once and used for every token:
// the fast path of referenceGenerate. Every output equals linearOutput() (or the unrounded sum of
// logits()) for its token alone, bit for bit: each token's sum runs over j in order. Parallel
// over output rows with oneTBB; call from any one thread.

// out(t, i) = S(Σ_j W_ij x(t, j) + b_i); `out` is resized to x.tokens x weight.rows().
void linearOverTokens(
    const WeightTensor& weight, const WeightTensor& bias, const TokenMatrix& x, Storage storage, TokenMatrix& out);
// The same sums plus the bias, not rounded (router and LM head logits).
void logitsOverTokens(const WeightTensor& weight, const WeightTensor& bias, const TokenMatrix& x, TokenMatrix& out);

} // namespace waferscope::core::cyclelevel
