// buildModelGraph(): one builder per family, all from the GraphAssembler vocabulary. Tensor
// names follow the Model Zoo's PyTorch modules so that sparsity param_filter globs select the
// same weights as on a real system.
#include "core/model/graphassembler.h"
#include "core/model/modelloader.h"

#include <algorithm>

namespace waferscope::core {

namespace {

using Activation = ModelConfig::Activation;

bool isGated(Activation type)
{
    return type == Activation::SwiGlu || type == Activation::GeGlu || type == Activation::ReGlu;
}

// Self- or cross-attention block: q, k, v projections, core, output projection.
void attentionBlock(GraphAssembler& graph, const ModelConfig& c, const std::string& name, const std::string& tensors,
    std::int64_t keysPerToken, std::int64_t innerDim, std::int64_t kvDim)
{
    const std::int64_t h = c.hiddenSize;
    graph.linear(name + ".q", tensors + ".proj_q_dense_layer", h, innerDim, c.projectionBiasInAttention);
    graph.linear(name + ".k", tensors + ".proj_k_dense_layer", h, kvDim, c.projectionBiasInAttention);
    graph.linear(name + ".v", tensors + ".proj_v_dense_layer", h, kvDim, c.projectionBiasInAttention);
    graph.attentionCore(name + ".core", keysPerToken, c.numHeads, innerDim / c.numHeads);
    graph.linear(name + ".out", tensors + ".proj_output_dense_layer", innerDim, h, c.ffnBiasInAttention);
}

void feedForward(GraphAssembler& graph, const ModelConfig& c, const std::string& name, const std::string& tensors)
{
    const std::int64_t h = c.hiddenSize;
    const std::int64_t f = c.filterSize;
    if (c.numExperts > 0) {
        graph.linear(name + ".router", tensors + ".gate", h, c.numExperts, false, Op::Kind::MoeRouter);
        graph.experts(name + ".experts", tensors, h, f, c.numExperts, c.topK, isGated(c.activation));
        return;
    }
    graph.linear(name + ".up", tensors + ".ffn.0.linear_layer", h, f, c.ffnBias);
    if (isGated(c.activation))
        graph.linear(name + ".gate", tensors + ".ffn.0.linear_layer_for_glu", h, f, c.ffnBias);
    graph.activation(name + ".act", f, c.activation);
    graph.linear(name + ".down", tensors + ".ffn.1.linear_layer", f, h, c.ffnBias);
}

// GPT-2/3, Llama, Mistral, Mixtral: pre-norm causal decoder.
ModelGraph buildDecoder(const ModelConfig& c)
{
    GraphAssembler graph(c);
    const std::int64_t h = c.hiddenSize;
    const std::int64_t s = c.sequenceLength;
    const std::int64_t inner = c.attentionInnerDim;
    const std::int64_t headDim = inner / c.numHeads;
    const std::int64_t keys = c.slidingWindow > 0 ? std::min(s, c.slidingWindow) : s;
    graph.setContext("", -1, s);
    graph.embedding("embedding", "embedding_layer.word_embeddings.weight", c.vocabSize, h);
    if (c.positions == ModelConfig::Positions::Learned)
        graph.embedding("position_embedding", "embedding_layer.position_embeddings.weight", c.maxPositions, h,
            Op::Kind::PositionEmbedding);
    for (int layer = 0; layer < int(c.numLayers); ++layer) {
        const std::string name = "layers." + std::to_string(layer);
        const std::string tensors = "transformer_decoder." + name;
        graph.setContext("decoder", layer, s);
        graph.norm(name + ".norm1", tensors + ".norm1", h, c.norm);
        attentionBlock(graph, c, name + ".attn", tensors + ".self_attn", keys, inner, c.numKvGroups * headDim);
        graph.norm(name + ".norm3", tensors + ".norm3", h, c.norm);
        feedForward(graph, c, name + ".ffn", tensors + ".ffn");
    }
    graph.setContext("", -1, s);
    graph.norm("final_norm", "transformer_decoder.norm", h, c.norm);
    // A tied head reuses the embedding matrix: same FLOPs, no parameters of its own.
    graph.linear("lm_head", "lm_head", h, c.vocabSize, c.biasInOutput, Op::Kind::LmHead);
    if (c.shareEmbeddingWeights)
        graph.tieToEmbedding("lm_head");
    graph.loss("loss", c.vocabSize);
    return graph.finish();
}

// BERT: post-norm encoder with token, position and segment embeddings, pooler, MLM and NSP heads.
ModelGraph buildBert(const ModelConfig& c)
{
    GraphAssembler graph(c);
    const std::int64_t h = c.hiddenSize;
    const std::int64_t s = c.sequenceLength;
    graph.setContext("", -1, s);
    graph.embedding("embedding", "embedding_layer.word_embeddings.weight", c.vocabSize, h);
    graph.embedding("position_embedding", "embedding_layer.position_embeddings.weight", c.maxPositions, h,
        Op::Kind::PositionEmbedding);
    if (c.typeVocabSize > 0)
        graph.embedding("segment_embedding", "embedding_layer.segment_embeddings.weight", c.typeVocabSize, h,
            Op::Kind::PositionEmbedding);
    graph.norm("embedding_norm", "embedding_layer.embed_ln", h, ModelConfig::Norm::LayerNorm);
    for (int layer = 0; layer < int(c.numLayers); ++layer) {
        const std::string name = "layers." + std::to_string(layer);
        const std::string tensors = "transformer_encoder." + name;
        graph.setContext("encoder", layer, s);
        attentionBlock(graph, c, name + ".attn", tensors + ".self_attn", s, h, h);
        graph.norm(name + ".norm1", tensors + ".norm1", h, ModelConfig::Norm::LayerNorm);
        feedForward(graph, c, name + ".ffn", tensors + ".ffn");
        graph.norm(name + ".norm2", tensors + ".norm2", h, ModelConfig::Norm::LayerNorm);
    }
    // The pooler and NSP head see one token ([CLS]) per sample.
    graph.setContext("", -1, 1);
    graph.linear("pooler", "pooler.pooler.ffn.0.linear_layer", h, h, true, Op::Kind::Pooler);
    graph.activation("pooler.act", h, Activation::Tanh);
    if (!c.disableNsp)
        graph.linear("nsp_head", "nsp_head.classifier", h, 2, true, Op::Kind::Linear);
    graph.setContext("", -1, s);
    graph.linear("mlm_head.transform", "mlm_head.transform.ffn.0.linear_layer", h, h, true);
    graph.activation("mlm_head.act", h, c.activation);
    graph.norm("mlm_head.norm", "mlm_head.transform.norm", h, ModelConfig::Norm::LayerNorm);
    graph.linear("mlm_head.decoder", "mlm_head.classifier", h, c.vocabSize, true, Op::Kind::LmHead);
    if (c.shareEmbeddingWeights)
        graph.tieToEmbedding("mlm_head.decoder");
    graph.loss("loss", c.vocabSize);
    return graph.finish();
}

// T5: encoder-decoder with shared embeddings, relative position bias, cross-attention.
ModelGraph buildT5(const ModelConfig& c)
{
    GraphAssembler graph(c);
    const std::int64_t h = c.hiddenSize;
    const std::int64_t inner = c.dKv * c.numHeads;
    const std::int64_t src = c.sequenceLength;
    const std::int64_t tgt = c.targetSequenceLength;
    graph.setContext("encoder", -1, src);
    graph.embedding("embedding", "encoder.embed_tokens.weight", c.srcVocabSize, h);
    for (int layer = 0; layer < int(c.encoderLayers); ++layer) {
        const std::string name = "encoder.layers." + std::to_string(layer);
        graph.setContext("encoder", layer, src);
        graph.norm(name + ".norm1", name + ".norm1", h, c.norm);
        attentionBlock(graph, c, name + ".attn", name + ".self_attn", src, inner, inner);
        graph.norm(name + ".norm2", name + ".norm2", h, c.norm);
        feedForward(graph, c, name + ".ffn", name + ".ffn");
    }
    graph.extraTensor(
        "encoder.layers.0.attn.core", "encoder.relative_position_bias.weight", c.relativeBuckets * c.numHeads);
    graph.setContext("encoder", -1, src);
    graph.norm("encoder.final_norm", "encoder.norm", h, c.norm);
    if (!c.shareEmbeddingWeights || c.tgtVocabSize != c.srcVocabSize) {
        graph.setContext("decoder", -1, tgt);
        graph.embedding("decoder.embedding", "decoder.embed_tokens.weight", c.tgtVocabSize, h);
    }
    for (int layer = 0; layer < int(c.decoderLayers); ++layer) {
        const std::string name = "decoder.layers." + std::to_string(layer);
        graph.setContext("decoder", layer, tgt);
        graph.norm(name + ".norm1", name + ".norm1", h, c.norm);
        attentionBlock(graph, c, name + ".attn", name + ".self_attn", tgt, inner, inner);
        graph.norm(name + ".norm2", name + ".norm2", h, c.norm);
        attentionBlock(graph, c, name + ".cross", name + ".multihead_attn", src, inner, inner);
        graph.norm(name + ".norm3", name + ".norm3", h, c.norm);
        feedForward(graph, c, name + ".ffn", name + ".ffn");
    }
    graph.extraTensor(
        "decoder.layers.0.attn.core", "decoder.relative_position_bias.weight", c.relativeBuckets * c.numHeads);
    graph.setContext("decoder", -1, tgt);
    graph.norm("decoder.final_norm", "decoder.norm", h, c.norm);
    graph.linear("lm_head", "lm_head", h, c.tgtVocabSize, false, Op::Kind::LmHead);
    if (c.shareEmbeddingWeights)
        graph.tieToEmbedding("lm_head");
    graph.loss("loss", c.tgtVocabSize);
    return graph.finish();
}

// fc_mnist: the fully connected MNIST classifier of the Cerebras documentation.
ModelGraph buildFcMnist(const ModelConfig& c)
{
    GraphAssembler graph(c);
    std::int64_t in = c.inputSize;
    for (std::size_t i = 0; i < c.hiddenSizes.size(); ++i) {
        graph.setContext("", int(i), 1);
        const std::string name = "fc" + std::to_string(i);
        graph.linear(name, "linear_layers." + std::to_string(i), in, c.hiddenSizes[i], c.ffnBias);
        graph.activation(name + ".act", c.hiddenSizes[i], c.activation);
        in = c.hiddenSizes[i];
    }
    graph.setContext("", int(c.hiddenSizes.size()), 1);
    graph.linear("output", "output_layer", in, c.numClasses, c.ffnBias);
    graph.loss("loss", c.numClasses);
    return graph.finish();
}

} // namespace

ModelGraph buildModelGraph(const ModelConfig& config)
{
    switch (config.family) {
    case ModelConfig::Family::Bert:
        return buildBert(config);
    case ModelConfig::Family::T5:
        return buildT5(config);
    case ModelConfig::Family::FcMnist:
        return buildFcMnist(config);
    default:
        return buildDecoder(config);
    }
}

GraphFootprint estimateGraphFootprint(const ModelConfig& config)
{
    // Upper bounds over the builders above: a T5 decoder block (self- and cross-attention,
    // three norms, the FFN) has 17 ops of at most two tensors each; experts add three matrices
    // each; embeddings, heads and the loss stay under 16 ops.
    constexpr std::int64_t kOpsPerBlock = 20;
    constexpr std::int64_t kTensorsPerBlock = 2 * kOpsPerBlock;
    constexpr std::int64_t kOutsideBlocks = 16;
    // Heap bytes of a name beyond the object itself (names are 20 to 60 characters).
    constexpr double kNameBytes = 64.0;
    const std::int64_t blocks = std::max<std::int64_t>(1, config.numLayers);
    GraphFootprint footprint;
    footprint.ops = blocks * kOpsPerBlock + kOutsideBlocks;
    footprint.tensors = blocks * (kTensorsPerBlock + 3 * config.numExperts) + 2 * kOutsideBlocks;
    // The op's own per-op vector (tokens per sample) is counted with the op.
    footprint.bytes = double(footprint.ops) * (sizeof(Op) + 2.0 * kNameBytes + sizeof(std::int64_t))
        + double(footprint.tensors) * (sizeof(ParamTensor) + kNameBytes);
    return footprint;
}

} // namespace waferscope::core
