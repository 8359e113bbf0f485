#pragma once

#include "core/common/names.h"
#include "core/model/modelconfig.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core {

// One parameter tensor, named as the Model Zoo names it so that sparsity param_filter globs
// select the same tensors ("transformer_decoder.layers.0.self_attn.proj_q_dense_layer.weight").
struct ParamTensor {
    std::string name;
    std::int64_t count = 0;
    bool isMatrix = false; // a weight matrix (sparsifiable by default), not a bias/norm/embedding
    double sparsity = 0.0; // fraction of zeros applied to this tensor
};

// What an op is within its model, set by the family builders as they append it. The compiler
// fuses by it and the decode kernels (model level and cycle level) choose their kernel by it;
// nothing in core reads an op's role from its name. Other is every op no later stage tells apart
// (a vision tower's patches, a U-Net's convolutions, poolers and losses).
enum class OpRole : std::uint8_t {
    Other,
    Embedding, // the token embedding
    PositionEmbedding, // learned positions, segments
    EmbeddingNorm,
    AttentionNorm, // a block's norm before attention
    Query,
    Key,
    Value,
    QueryNorm,
    KeyNorm,
    AttentionCore,
    AttentionOut, // the output projection
    CrossQuery, // an encoder-decoder's cross-attention, attending the encoder's outputs
    CrossKey,
    CrossValue,
    CrossAttentionCore,
    CrossAttentionOut,
    PostAttentionNorm,
    FfnNorm, // a block's norm before the feed-forward
    Up,
    Gate,
    Activation,
    Down,
    Router,
    Experts,
    SharedExperts,
    PostFfnNorm,
    FinalNorm,
    LmHead,
};
// "other", "embedding", "q", "attention", "ffn_down", ... (modelconfig.cpp's table)
template <>
std::span<const EnumName<OpRole>> nameTable<OpRole>();
const char* toString(OpRole role);

// One operation of the model graph, with the costs every later stage is computed from.
struct Op {
    enum class Kind {
        Embedding,
        PositionEmbedding,
        Norm,
        Linear,
        AttentionCore,
        Activation,
        MoeRouter,
        Experts,
        LmHead,
        Pooler,
        Loss,
        PatchEmbedding, // an image patch (channels x patch pixels) projected to a token: a GEMM, as a convolution
                        // with stride = kernel is
        Convolution, // a k^d convolution lowered to a GEMM: K = input channels x k^d, N = output channels, one row
                     // per output voxel (in inFeatures, outFeatures and tokensPerSample)
        Pooling, // max pooling over 2^d voxels
        Upsampling // a stride-2 transposed convolution: a GEMM of K = input channels and N = output channels x 2^d
                   // per input voxel
    };

    // The part of the model an op belongs to: a transformer's decoder or encoder (T5, BERT), DPO's
    // frozen reference copy, a two-tower or teacher-student model's towers, a vision-language
    // model's image tower and projector; None for what sits outside every stack (embeddings,
    // heads, the blocks of a model with one stack and no name for it).
    enum class Stack {
        None,
        Decoder,
        Encoder,
        Reference,
        Projector,
        QuestionEncoder,
        ContextEncoder,
        Teacher,
        Student,
        ImageModel
    };

    std::string name; // "layers.3.attn.qkv"
    Kind kind = Kind::Linear;
    OpRole role = OpRole::Other;
    int layer = -1; // transformer block index, -1 outside the blocks
    Stack stack = Stack::None;
    std::int64_t tokensPerSample = 1; // tokens this op processes per sample (its stack's sequence length)

    // Linear shape (K x N), when kind is Linear/LmHead/Experts/MoeRouter/Pooler.
    std::int64_t inFeatures = 0;
    std::int64_t outFeatures = 0;
    // Input values per token actually held in SRAM: a convolution's channels, whose k^d window
    // (inFeatures) is read from neighbouring voxels, not copied; 0 = inFeatures.
    std::int64_t inputWidth = 0;

    std::vector<ParamTensor> tensors;
    std::int64_t params = 0; // sum of tensors, all experts counted
    std::int64_t nonzeroParams = 0; // after sparsity
    double fwdFlopsPerToken = 0; // for attention core: at the configured sequence length
    double bwdFlopsPerToken = 0;
    std::int64_t weightBytes = 0; // params at the configured weight precision
    std::int64_t activationBytesPerToken = 0; // output activations kept for backward
    std::int64_t optimizerStateBytes = 0; // in MemoryX / SRAM for training; 0 when frozen
    // Frozen weights (a DPO reference model, a frozen vision tower) take memory and compute but
    // get no gradient and no optimizer state.
    bool frozen = false;

    // Parameters whose gradients leave the wafer and that the optimizer updates.
    std::int64_t gradientParams() const { return frozen ? 0 : nonzeroParams; }
};

const char* toString(Op::Kind kind); // "embedding", "linear", "attention_core", ... (snake case)
template <>
std::span<const EnumName<Op::Kind>> nameTable<Op::Kind>();
const char* toString(Op::Stack stack); // "decoder", "encoder", "question_encoder", ...; "" for None
template <>
std::span<const EnumName<Op::Stack>> nameTable<Op::Stack>();

// The whole model as ops in execution order, with its config and totals.
struct ModelGraph {
    ModelConfig config;
    std::vector<Op> ops;

    std::int64_t totalParams = 0; // trainableParams + frozenParams
    std::int64_t trainableParams = 0;
    std::int64_t frozenParams = 0;
    std::int64_t nonzeroParams = 0;
    std::int64_t gradientParams = 0; // sum of Op::gradientParams()
    double fwdFlopsPerSample = 0; // dense math incl. attention, summed over every op's tokens
    double bwdFlopsPerSample = 0;
    double fwdFlopsPerToken = 0; // per sample / sequenceLength
    double bwdFlopsPerToken = 0;
    std::int64_t weightBytes = 0;
    std::int64_t optimizerStateBytes = 0;
};

} // namespace waferscope::core
