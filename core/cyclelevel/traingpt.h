#pragma once

#include "core/common/expected.h"
#include "core/cyclelevel/trainnet.h"
#include "core/model/modelgraph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// A GPT-2-style decoder as the cycle-level training step runs it: learned token and position
// tables, blocks of x = S(x + proj(attn(LN1(x)))) and x = S(x + fc2(gelu(fc1(LN2(x))))), a final
// LayerNorm and the LM head (tied to the token table or not), softmax cross-entropy on the next
// token. The fused q, k, v projection's outputs are head-major (head h's q, k and v together),
// so that a head's share of them is one band; the model is the same up to that order of its
// parameters.
struct TrainTransformer {
    std::string model;
    Storage storage = Storage::Fp16;
    std::int64_t vocab = 0; // V
    std::int64_t hidden = 0; // D
    std::int64_t heads = 0;
    std::int64_t ffn = 0; // F
    std::int64_t sequence = 0; // S, the positions a step uses
    std::int64_t blocks = 0;
    bool qkvBias = true;
    bool projBias = true;
    bool ffnBias = true;
    bool headBias = false;
    bool tied = true; // the LM head is the token table
    float epsilon = 1e-5f;
    Activation activation = Activation::Gelu;
    std::int64_t headDim() const { return hidden / heads; }

    // The parameter tensors, in this order: the token table (V x (D + 1), LM head layout: its
    // last column the head's bias when tied), the position table (S x D), per block LN1 (1 x 2D:
    // weight, then bias), qkv (3D x (D + 1)), proj (D x (D + 1)), LN2, fc1 (F x (D + 1)), fc2
    // (D x (F + 1)); the final LN; the head (V x (D + 1)) when untied.
    enum class Kind : std::uint8_t { TokenTable, PositionTable, Norm, Matrix };
    struct Tensor {
        std::string name; // "h0.qkv"
        Kind kind = Kind::Matrix;
        std::int64_t rows = 0;
        std::int64_t cols = 0; // with a Matrix's bias column
        bool bias = true; // its bias column (a Norm: its bias half) has a gradient
    };
    std::vector<Tensor> tensors() const;
    static constexpr std::size_t kTokenTable = 0;
    static constexpr std::size_t kPositionTable = 1;
    static constexpr std::size_t kPerBlock = 6;
    enum BlockTensor : std::size_t { Ln1, Qkv, Proj, Ln2, Fc1, Fc2 };
    std::size_t blockTensor(std::int64_t block, BlockTensor which) const
    {
        return 2 + std::size_t(block) * kPerBlock + which;
    }
    std::size_t finalNorm() const { return 2 + std::size_t(blocks) * kPerBlock; }
    std::size_t head() const { return tied ? kTokenTable : finalNorm() + 1; }
};

// CannotMap for a graph that is not such a decoder, naming what differs; `keepBlocks` > 0 keeps
// that many blocks; `sequence` > 0: the positions a step uses (at most the model's), else the
// config's sequence up to kDefaultSequence.
constexpr std::int64_t kDefaultSequence = 128;
Expected<TrainTransformer> trainTransformerOf(const ModelGraph& graph, int keepBlocks, std::int64_t sequence);

// Seeded, S-rounded: a matrix uniform x sqrt(3 / inputs), its bias 0; a norm's weight 1 and bias
// 0; the tables uniform x 0.1 (so that a tied head's logits start near unit size).
TrainState initialState(const TrainTransformer& net, std::uint64_t seed, TrainOptimizer optimizer);

// A step's sequences: `samples` of S + 1 token ids each, a pure function of (seed, step): the
// first uniform over the vocabulary, each next one in an alphabet of the first 16 ids (all of
// them below 16 ids), following its predecessor by a fixed rule (3 id + 7 mod 16) three times in
// four and uniform in the alphabet otherwise, so that a few steps have something to learn (the
// alphabet, then the rule; the loss's floor is about 1.2). Inputs are the first S, labels the
// last S.
constexpr std::uint64_t kTrainAlphabet = 16;
struct TrainTokens {
    std::int64_t samples = 0;
    std::vector<std::int32_t> ids; // samples x S
    std::vector<std::int32_t> labels; // samples x S
};
TrainTokens trainTokens(const TrainTransformer& net, std::int64_t samples, std::uint64_t seed, std::int64_t step);

// The embedding as a linear layer of the one-hot token and position: D x (V + S), column v the
// token table's row v, column V + p the position table's row p; `weights` per tensor as streamed.
std::vector<float> embeddingMatrix(const TrainTransformer& net, const std::vector<std::vector<float>>& weights);
// The one-hot inputs of the embedding: tokens x (V + S).
std::vector<float> embeddingInputs(const TrainTransformer& net, const TrainTokens& tokens, std::int64_t padded);
// Adds the embedding's gradient (D x (V + S)) to the tables' (token table: V x (D + 1)).
void scatterEmbeddingGradient(
    const TrainTransformer& net, const std::vector<float>& gradient, std::vector<std::vector<float>>& gradients);

} // namespace waferscope::core::cyclelevel
