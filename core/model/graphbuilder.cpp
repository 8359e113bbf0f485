// No header of its own: defines buildModelGraph (modelloader.h) and the blocks of builderblocks.h.
// buildModelGraph(): one builder per family, all from the GraphAssembler vocabulary. Tensor
// names follow the Model Zoo's PyTorch modules so that sparsity param_filter globs select the
// same weights as on a real system. Models made of models (DPO, DPR) append each part's ops
// under its own stack name.
#include "core/model/builderblocks.h"
#include "core/model/modelloader.h"

#include <algorithm>

namespace waferscope::core {

namespace {

using Activation = ModelConfig::Activation;
using F = ModelConfig::Family;

bool isGated(Activation type)
{
    return type == Activation::SwiGlu || type == Activation::GeGlu || type == Activation::ReGlu;
}

std::int64_t learnedPositionRows(const ModelConfig& c)
{
    return c.positionTableRows > 0 ? c.positionTableRows : c.maxPositions;
}

// Keys each query of block `layer` attends: the whole sequence, or a sliding window (on every
// other block for Gemma 2) plus the sink tokens that stay visible.
std::int64_t keysOfBlock(const ModelConfig& c, int layer, std::int64_t sequence)
{
    const bool windowed
        = c.slidingWindow > 0 && (!c.alternateSlidingWindow || ((layer % 2 == 0) == c.slidingWindowFirst));
    return windowed ? std::min(sequence, c.slidingWindow + c.attentionSinkTokens) : sequence;
}

} // namespace

Op::Stack stackOfPart(const ModelConfig::Part& part)
{
    return fromName<Op::Stack>(part.role).value();
}

// Self- or cross-attention block: q, k, v projections, core, output projection.
void attentionBlock(GraphAssembler& graph, const ModelConfig& c, const std::string& name, const std::string& tensors,
    std::int64_t keysPerToken, std::int64_t innerDim, std::int64_t kvDim, bool cross)
{
    const std::int64_t h = c.hiddenSize;
    const std::int64_t headDim = innerDim / c.numHeads;
    graph.as(cross ? OpRole::CrossQuery : OpRole::Query)
        .linear(name + ".q", tensors + ".proj_q_dense_layer", h, innerDim, c.projectionBiasInAttention);
    graph.as(cross ? OpRole::CrossKey : OpRole::Key)
        .linear(name + ".k", tensors + ".proj_k_dense_layer", h, kvDim, c.projectionBiasInAttention);
    graph.as(cross ? OpRole::CrossValue : OpRole::Value)
        .linear(name + ".v", tensors + ".proj_v_dense_layer", h, kvDim, c.projectionBiasInAttention);
    if (c.qkNormWidth > 0) {
        graph.as(OpRole::QueryNorm).norm(name + ".q_norm", tensors + ".q_norm", headDim, c.norm);
        graph.as(OpRole::KeyNorm).norm(name + ".k_norm", tensors + ".k_norm", headDim, c.norm);
    }
    // A soft cap (cap * tanh(score / cap)) costs a division, a tanh and a product per score.
    graph.as(cross ? OpRole::CrossAttentionCore : OpRole::AttentionCore)
        .attentionCore(name + ".core", keysPerToken, c.numHeads, headDim, c.attentionLogitSoftcap > 0 ? 3.0 : 0.0);
    if (c.attentionSinkParameter)
        graph.extraTensor(name + ".core", tensors + ".sink", c.numHeads);
    graph.as(cross ? OpRole::CrossAttentionOut : OpRole::AttentionOut)
        .linear(name + ".out", tensors + ".proj_output_dense_layer", innerDim, h, c.ffnBiasInAttention);
}

void feedForward(GraphAssembler& graph, const ModelConfig& c, const std::string& name, const std::string& tensors)
{
    const std::int64_t h = c.hiddenSize;
    const std::int64_t f = c.filterSize;
    if (c.numExperts > 0) {
        graph.as(OpRole::Router)
            .linear(name + ".router", tensors + ".gate", h, c.numExperts, c.routerBias, Op::Kind::MoeRouter);
        graph.as(OpRole::Experts)
            .experts(
                name + ".experts", tensors + ".experts", h, f, c.numExperts, c.topK, isGated(c.activation), c.ffnBias);
        if (c.numSharedExperts > 0)
            graph.as(OpRole::SharedExperts)
                .experts(name + ".shared_experts", tensors + ".shared_experts", h, f, c.numSharedExperts,
                    c.numSharedExperts, isGated(c.activation), c.ffnBias);
        return;
    }
    graph.as(OpRole::Up).linear(name + ".up", tensors + ".ffn.0.linear_layer", h, f, c.ffnBias);
    if (isGated(c.activation))
        graph.as(OpRole::Gate).linear(name + ".gate", tensors + ".ffn.0.linear_layer_for_glu", h, f, c.ffnBias);
    graph.as(OpRole::Activation).activation(name + ".act", f, c.activation);
    graph.as(OpRole::Down).linear(name + ".down", tensors + ".ffn.1.linear_layer", f, h, c.ffnBias);
}

// The Model Zoo's GPT-2 and GPT-J backbones: pre-norm causal decoder, sequential or parallel
// attention and FFN. `stack` names the part ("decoder", or "reference" for DPO's frozen copy).
void appendDecoder(
    GraphAssembler& graph, const ModelConfig& c, const std::string& prefix, Op::Stack stack, std::int64_t tokens)
{
    const std::int64_t h = c.hiddenSize;
    const std::int64_t inner = c.attentionInnerDim;
    const std::int64_t kvDim = c.numKvGroups * (inner / c.numHeads);
    graph.setContext(stack == Op::Stack::Decoder ? Op::Stack::None : stack, -1, tokens);
    graph.as(OpRole::Embedding)
        .embedding(prefix + "embedding", prefix + "embedding_layer.word_embeddings.weight", c.vocabSize, h);
    if (c.trainableAlibiSlopes)
        graph.extraTensor(prefix + "embedding", prefix + "embedding_layer.position_embed_helper.slopes", c.numHeads);
    if (c.positions == ModelConfig::Positions::Learned)
        graph.as(OpRole::PositionEmbedding)
            .embedding(prefix + "position_embedding", prefix + "embedding_layer.position_embeddings.weight",
                learnedPositionRows(c), h, Op::Kind::PositionEmbedding);
    if (c.embeddingLayerNorm)
        graph.as(OpRole::EmbeddingNorm).norm(prefix + "embedding_norm", prefix + "embedding_layer.embed_ln", h, c.norm);
    for (int layer = 0; layer < int(c.numLayers); ++layer) {
        const std::string name = prefix + "layers." + std::to_string(layer);
        const std::string tensors = prefix + "transformer_decoder.layers." + std::to_string(layer);
        graph.setContext(stack, layer, tokens);
        graph.as(OpRole::AttentionNorm).norm(name + ".norm1", tensors + ".norm1", h, c.norm);
        attentionBlock(graph, c, name + ".attn", tensors + ".self_attn", keysOfBlock(c, layer, tokens), inner, kvDim);
        if (c.parallelAttention) {
            // Attention and FFN read the same input; untied, the FFN has a norm of its own.
            if (c.untiedParallelNorms)
                graph.as(OpRole::FfnNorm).norm(name + ".norm3", tensors + ".norm3", h, c.norm);
            feedForward(graph, c, name + ".ffn", tensors + ".ffn");
            continue;
        }
        if (c.sandwichNorms)
            graph.as(OpRole::PostAttentionNorm).norm(name + ".post_attn_norm", tensors + ".post_attn_norm", h, c.norm);
        graph.as(OpRole::FfnNorm).norm(name + ".norm3", tensors + ".norm3", h, c.norm);
        feedForward(graph, c, name + ".ffn", tensors + ".ffn");
        if (c.sandwichNorms)
            graph.as(OpRole::PostFfnNorm).norm(name + ".post_ffn_norm", tensors + ".post_ffn_norm", h, c.norm);
    }
    graph.setContext(stack == Op::Stack::Decoder ? Op::Stack::None : stack, -1, tokens);
    graph.as(OpRole::FinalNorm).norm(prefix + "final_norm", prefix + "transformer_decoder.norm", h, c.norm);
    // A tied head reuses the embedding matrix: same FLOPs, no parameters of its own.
    graph.as(OpRole::LmHead)
        .linear(prefix + "lm_head", prefix + "lm_head", h, c.vocabSize, c.biasInOutput, Op::Kind::LmHead);
    if (c.shareEmbeddingWeights)
        graph.tieToEmbedding(prefix + "lm_head");
}

namespace {

// GPT-2/3, GPT-J, Falcon, BLOOM, Llama, Mistral, Mixtral, Gemma 2 and the other decoders.
void buildDecoder(GraphAssembler& graph, const ModelConfig& c)
{
    appendDecoder(graph, c, "", Op::Stack::Decoder, c.sequenceLength);
    graph.loss("loss", c.vocabSize, c.finalLogitSoftcap > 0 ? 3.0 : 0.0);
}

// DPO: each sample is a chosen and a rejected completion, both through the policy and through
// the reference, a frozen copy of the policy that runs forward only.
void buildDpo(GraphAssembler& graph, const ModelConfig& c)
{
    const ModelConfig& policy = c.parts.front().config.front();
    const std::int64_t tokens = 2 * c.sequenceLength;
    if (c.frozenReference) {
        graph.setFrozen(true);
        appendDecoder(graph, policy, "reference.", Op::Stack::Reference, tokens);
        graph.setFrozen(false);
    }
    appendDecoder(graph, policy, "", Op::Stack::Decoder, tokens);
    graph.setContext(Op::Stack::None, -1, tokens);
    graph.loss("loss", policy.vocabSize, policy.finalLogitSoftcap > 0 ? 3.0 : 0.0);
}

// Linformer attention: keys and values are projected along the sequence, from `tokens` rows to
// `linformerDims`, before the core attends those few (each projection a GEMM over the hidden
// features: E for keys, F for values, or E for both when shared).
void linformerAttention(GraphAssembler& graph, const ModelConfig& c, const std::string& name,
    const std::string& tensors, std::int64_t tokens)
{
    const std::int64_t h = c.hiddenSize;
    const std::int64_t k = std::min(tokens, c.linformerDims);
    graph.as(OpRole::Query).linear(name + ".q", tensors + ".proj_q_dense_layer", h, h, c.projectionBiasInAttention);
    graph.as(OpRole::Key).linear(name + ".k", tensors + ".proj_k_dense_layer", h, h, c.projectionBiasInAttention);
    graph.as(OpRole::Value).linear(name + ".v", tensors + ".proj_v_dense_layer", h, h, c.projectionBiasInAttention);
    graph.setContext(graph.stack(), graph.layer(), h); // one projected row per hidden feature
    graph.linear(name + ".e_projection", tensors + ".E_projection", tokens, k, c.projectionBiasInAttention);
    graph.linear(name + ".f_projection", tensors + ".F_projection", tokens, k,
        c.projectionBiasInAttention && !c.linformerSharedKv);
    if (c.linformerSharedKv)
        graph.tieToEmbedding(name + ".f_projection"); // the values reuse E
    graph.setContext(graph.stack(), graph.layer(), tokens);
    graph.as(OpRole::AttentionCore).attentionCore(name + ".core", k, c.numHeads, h / c.numHeads);
    graph.as(OpRole::AttentionOut)
        .linear(name + ".out", tensors + ".proj_output_dense_layer", h, h, c.ffnBiasInAttention);
}

// BertModel: token, position and segment embeddings with a LayerNorm, post-norm blocks, an
// optional final norm (ESM-2) and the [CLS] pooler.
void appendBertEncoder(
    GraphAssembler& graph, const ModelConfig& c, const std::string& prefix, Op::Stack stack, std::int64_t tokens)
{
    const std::int64_t h = c.hiddenSize;
    const auto layerNorm = ModelConfig::Norm::LayerNorm;
    graph.setContext(stack == Op::Stack::Encoder ? Op::Stack::None : stack, -1, tokens);
    graph.as(OpRole::Embedding)
        .embedding(prefix + "embedding", prefix + "embedding_layer.word_embeddings.weight", c.vocabSize, h);
    if (c.positions == ModelConfig::Positions::Learned)
        graph.embedding(prefix + "position_embedding", prefix + "embedding_layer.position_embeddings.weight",
            learnedPositionRows(c), h, Op::Kind::PositionEmbedding);
    if (c.typeVocabSize > 0)
        graph.embedding(prefix + "segment_embedding", prefix + "embedding_layer.segment_embeddings.weight",
            c.typeVocabSize, h, Op::Kind::PositionEmbedding);
    if (c.embeddingLayerNorm)
        graph.norm(prefix + "embedding_norm", prefix + "embedding_layer.embed_ln", h, layerNorm);
    for (int layer = 0; layer < int(c.numLayers); ++layer) {
        const std::string name = prefix + "layers." + std::to_string(layer);
        const std::string tensors = prefix + "transformer_encoder.layers." + std::to_string(layer);
        graph.setContext(stack, layer, tokens);
        if (c.linformerDims > 0) {
            linformerAttention(graph, c, name + ".attn", tensors + ".self_attn", tokens);
        } else {
            attentionBlock(graph, c, name + ".attn", tensors + ".self_attn", tokens, c.attentionInnerDim,
                c.numKvGroups * (c.attentionInnerDim / c.numHeads));
        }
        graph.as(OpRole::PostAttentionNorm).norm(name + ".norm1", tensors + ".norm1", h, layerNorm);
        feedForward(graph, c, name + ".ffn", tensors + ".ffn");
        graph.as(OpRole::PostFfnNorm).norm(name + ".norm2", tensors + ".norm2", h, layerNorm);
    }
    graph.setContext(stack == Op::Stack::Encoder ? Op::Stack::None : stack, -1, tokens);
    if (c.finalNorm)
        graph.norm(prefix + "final_norm", prefix + "transformer_encoder.norm", h, layerNorm);
    if (c.pooler) {
        // The pooler sees one token ([CLS]) per sample.
        graph.setContext(stack == Op::Stack::Encoder ? Op::Stack::None : stack, -1, 1);
        graph.linear(prefix + "pooler", prefix + "pooler.pooler.ffn.0.linear_layer", h, h, c.ffnBias, Op::Kind::Pooler);
        graph.activation(prefix + "pooler.act", h, Activation::Tanh);
    }
}

// BERT and ESM-2 pretraining (MLM, and NSP unless disabled), and BERT's fine-tuning heads.
void buildBert(GraphAssembler& graph, const ModelConfig& c)
{
    const std::int64_t h = c.hiddenSize;
    const std::int64_t s = c.sequenceLength;
    appendBertEncoder(graph, c, "", Op::Stack::Encoder, s);
    if (c.family == F::Bert || c.family == F::Esm2 || c.family == F::Linformer) {
        if (!c.disableNsp) {
            graph.setContext(Op::Stack::None, -1, 1);
            graph.linear("nsp_head", "nsp_head.classifier", h, 2, c.ffnBias, Op::Kind::Linear);
        }
        graph.setContext(Op::Stack::None, -1, s);
        graph.linear("mlm_head.transform", "mlm_head.transform.ffn.0.linear_layer", h, h, true);
        graph.activation("mlm_head.act", h, c.activation);
        graph.norm("mlm_head.norm", "mlm_head.transform.norm", h, ModelConfig::Norm::LayerNorm);
        graph.linear("mlm_head.decoder", "mlm_head.classifier", h, c.vocabSize, c.mlmOutputBias, Op::Kind::LmHead);
        if (c.shareEmbeddingWeights)
            graph.tieToEmbedding("mlm_head.decoder");
        graph.loss("loss", c.vocabSize);
        return;
    }
    // Fine-tuning: a classifier over [CLS] (after the pooler), every token, or each sentence.
    const std::int64_t headTokens = c.headTokensPerSample > 0 ? c.headTokensPerSample : s;
    graph.setContext(Op::Stack::None, -1, headTokens);
    graph.linear("classifier", "classifier.ffn.0.linear_layer", h, c.numLabels, c.classifierBias, Op::Kind::LmHead);
    graph.loss("loss", c.numLabels);
}

// DPR: question and context encoders, trained with a softmax over in-batch contexts.
void buildDpr(GraphAssembler& graph, const ModelConfig& c)
{
    for (const ModelConfig::Part& part : c.parts)
        appendBertEncoder(graph, part.config.front(), part.role + ".", stackOfPart(part), c.sequenceLength);
    graph.setContext(Op::Stack::None, -1, 1);
    graph.loss("loss", std::max<std::int64_t>(1, c.batchSize / std::max<std::int64_t>(1, c.numCsx)));
}

// The layers-API demo: a post-norm encoder and a biased projection to the vocabulary.
void buildLayersApiDemo(GraphAssembler& graph, const ModelConfig& c)
{
    appendBertEncoder(graph, c, "", Op::Stack::Encoder, c.sequenceLength);
    graph.setContext(Op::Stack::None, -1, c.sequenceLength);
    graph.as(OpRole::LmHead).linear("lm_head", "decoder", c.hiddenSize, c.vocabSize, true, Op::Kind::LmHead);
    graph.loss("loss", c.vocabSize);
}

// T5 and the transformer: encoder-decoder with shared embeddings, relative position buckets
// (T5) or absolute positions (learned, or sinusoidal without parameters), cross-attention.
void buildSeq2Seq(GraphAssembler& graph, const ModelConfig& c)
{
    const std::int64_t h = c.hiddenSize;
    const std::int64_t inner = c.attentionInnerDim;
    const std::int64_t src = c.sequenceLength;
    const std::int64_t tgt = c.targetSequenceLength;
    const bool relative = c.positions == ModelConfig::Positions::Relative;
    graph.setContext(Op::Stack::Encoder, -1, src);
    graph.as(OpRole::Embedding).embedding("embedding", "encoder.embed_tokens.weight", c.srcVocabSize, h);
    if (c.positions == ModelConfig::Positions::Learned)
        graph.embedding("encoder.position_embedding", "encoder.position_embeddings.weight", c.maxPositions, h,
            Op::Kind::PositionEmbedding);
    for (int layer = 0; layer < int(c.encoderLayers); ++layer) {
        const std::string name = "encoder.layers." + std::to_string(layer);
        graph.setContext(Op::Stack::Encoder, layer, src);
        graph.norm(name + ".norm1", name + ".norm1", h, c.norm);
        attentionBlock(graph, c, name + ".attn", name + ".self_attn", src, inner, inner);
        graph.norm(name + ".norm2", name + ".norm2", h, c.norm);
        feedForward(graph, c, name + ".ffn", name + ".ffn");
    }
    if (relative)
        graph.extraTensor(
            "encoder.layers.0.attn.core", "encoder.relative_position_bias.weight", c.relativeBuckets * c.numHeads);
    graph.setContext(Op::Stack::Encoder, -1, src);
    graph.norm("encoder.final_norm", "encoder.norm", h, c.norm);
    graph.setContext(Op::Stack::Decoder, -1, tgt);
    if (!c.shareEncoderDecoderEmbedding)
        graph.as(OpRole::Embedding).embedding("decoder.embedding", "decoder.embed_tokens.weight", c.tgtVocabSize, h);
    if (c.positions == ModelConfig::Positions::Learned)
        graph.embedding("decoder.position_embedding", "decoder.position_embeddings.weight", learnedPositionRows(c), h,
            Op::Kind::PositionEmbedding);
    for (int layer = 0; layer < int(c.decoderLayers); ++layer) {
        const std::string name = "decoder.layers." + std::to_string(layer);
        graph.setContext(Op::Stack::Decoder, layer, tgt);
        graph.norm(name + ".norm1", name + ".norm1", h, c.norm);
        attentionBlock(graph, c, name + ".attn", name + ".self_attn", tgt, inner, inner);
        graph.norm(name + ".norm2", name + ".norm2", h, c.norm);
        attentionBlock(graph, c, name + ".cross", name + ".multihead_attn", src, inner, inner, true);
        graph.norm(name + ".norm3", name + ".norm3", h, c.norm);
        feedForward(graph, c, name + ".ffn", name + ".ffn");
    }
    if (relative)
        graph.extraTensor(
            "decoder.layers.0.attn.core", "decoder.relative_position_bias.weight", c.relativeBuckets * c.numHeads);
    graph.setContext(Op::Stack::Decoder, -1, tgt);
    graph.norm("decoder.final_norm", "decoder.norm", h, c.norm);
    graph.as(OpRole::LmHead).linear("lm_head", "lm_head", h, c.tgtVocabSize, false, Op::Kind::LmHead);
    if (c.shareEmbeddingWeights)
        graph.tieToEmbedding("lm_head");
    graph.loss("loss", c.tgtVocabSize);
}

// fc_mnist: the fully connected MNIST classifier of the Cerebras documentation.
void buildFcMnist(GraphAssembler& graph, const ModelConfig& c)
{
    std::int64_t in = c.inputSize;
    for (std::size_t i = 0; i < c.hiddenSizes.size(); ++i) {
        graph.setContext(Op::Stack::None, int(i), 1);
        const std::string name = "fc" + std::to_string(i);
        graph.linear(name, "linear_layers." + std::to_string(i), in, c.hiddenSizes[i], c.ffnBias);
        graph.activation(name + ".act", c.hiddenSizes[i], c.activation);
        in = c.hiddenSizes[i];
    }
    graph.setContext(Op::Stack::None, int(c.hiddenSizes.size()), 1);
    graph.linear("output", "output_layer", in, c.numClasses, c.ffnBias);
    graph.loss("loss", c.numClasses);
}

// Every family's builder, into `graph`.
void assembleModelGraph(GraphAssembler& graph, const ModelConfig& config)
{
    switch (config.family) {
    case F::Bert:
    case F::BertClassifier:
    case F::BertTokenClassifier:
    case F::BertSummarization:
    case F::BertQuestionAnswering:
    case F::Esm2:
    case F::Linformer:
        return buildBert(graph, config);
    case F::Dpr:
        return buildDpr(graph, config);
    case F::Dpo:
        return buildDpo(graph, config);
    case F::T5:
    case F::Transformer:
        return buildSeq2Seq(graph, config);
    case F::LayersApiDemo:
        return buildLayersApiDemo(graph, config);
    case F::FcMnist:
        return buildFcMnist(graph, config);
    case F::VisionTransformer:
    case F::Dino:
    case F::Dit:
    case F::Llava:
    case F::MultimodalSimple:
        return buildVisionGraph(graph, config);
    case F::Unet:
        return buildUnet(graph, config);
    default:
        return buildDecoder(graph, config);
    }
}

} // namespace

ModelGraph buildModelGraph(const ModelConfig& config)
{
    GraphAssembler graph(config);
    assembleModelGraph(graph, config);
    return graph.finish();
}

GraphFootprint estimateGraphFootprint(const ModelConfig& config)
{
    // The builders themselves, on an assembler that keeps one op at a time and counts the rest.
    GraphAssembler census(config, GraphAssembler::Mode::Census);
    assembleModelGraph(census, config);
    return census.footprint();
}

} // namespace waferscope::core
