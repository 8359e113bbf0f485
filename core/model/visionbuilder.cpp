// No header of its own: defines buildVisionGraph, one of the family builders of builderblocks.h.
// Graphs of the vision and multimodal families: the ViT encoder (patch embedding, [CLS] and
// position tables, pre-norm blocks) under each family's names, so that `freeze` patterns select
// the same weights as in the Model Zoo.
#include "core/model/builderblocks.h"

#include <algorithm>

namespace waferscope::core {

namespace {

using F = ModelConfig::Family;

// Parameters of one encoder block: attention, FFN, two LayerNorms and the layer scales.
std::int64_t encoderBlockParams(const ModelConfig& c)
{
    const std::int64_t h = c.hiddenSize;
    const std::int64_t f = c.filterSize;
    const bool gated = c.activation == ModelConfig::Activation::SwiGlu || c.activation == ModelConfig::Activation::GeGlu
        || c.activation == ModelConfig::Activation::ReGlu;
    const std::int64_t attention
        = 4 * h * h + (c.projectionBiasInAttention ? 3 * h : 0) + (c.ffnBiasInAttention ? h : 0);
    const std::int64_t ffn = (gated ? 3 : 2) * h * f + (c.ffnBias ? (gated ? 2 : 1) * f + h : 0);
    return attention + ffn + 4 * h + (c.layerScale ? 2 * h : 0);
}

// A ViT encoder over `c`'s image (or over its views, for DINOv2's crops). Tensors are named
// `prefix` + the Model Zoo's module path; ops carry `prefix` too, in stack `stack`. Blocks past
// `layersRun` keep their weights (frozen with the tower, as in LLaVA) but do not run.
void appendImageEncoder(GraphAssembler& graph, const ModelConfig& c, const std::string& prefix, Op::Stack stack)
{
    const std::int64_t h = c.hiddenSize;
    const std::int64_t tokens = c.viewTokensPerSample > 0 ? c.viewTokensPerSample : c.imageTokens();
    const std::int64_t patches = c.viewPatchesPerSample > 0 ? c.viewPatchesPerSample : c.patches();
    const auto keys = std::int64_t(c.viewKeysPerToken > 0.0 ? c.viewKeysPerToken + 0.5 : double(c.imageTokens()));
    const std::string embeddings = prefix + "embedding_layer";
    graph.setContext(stack, -1, patches);
    graph.patchEmbedding(prefix + "patch_embedding", embeddings + ".linear_proj",
        c.numChannels * c.patchHeight * c.patchWidth, h, c.patchBias);
    if (c.clsToken)
        graph.extraTensor(prefix + "patch_embedding", embeddings + ".cls_embedding", h);
    if (c.maskToken)
        graph.extraTensor(prefix + "patch_embedding", embeddings + ".mask_token", h);
    graph.setContext(stack, -1, tokens);
    if (c.positions == ModelConfig::Positions::Learned)
        graph.embedding(prefix + "position_embedding", embeddings + ".position_embeddings.weight", c.imageTokens(), h,
            Op::Kind::PositionEmbedding);
    if (c.postEmbedNorm)
        graph.norm(prefix + "embedding_norm", embeddings + ".post_embed_ln", h, ModelConfig::Norm::LayerNorm);
    const int run = int(c.layersRun > 0 ? std::min(c.layersRun, c.numLayers) : c.numLayers);
    std::string lastOp;
    for (int layer = 0; layer < run; ++layer) {
        const std::string name = prefix + "layers." + std::to_string(layer);
        const std::string tensors = prefix + "encoder.transformer_encoder.layers." + std::to_string(layer);
        graph.setContext(stack, layer, tokens);
        graph.norm(name + ".norm1", tensors + ".norm1", h, ModelConfig::Norm::LayerNorm);
        attentionBlock(graph, c, name + ".attn", tensors + ".self_attn", keys, h, h);
        if (c.layerScale)
            graph.extraTensor(name + ".attn.out", tensors + ".layer_scale1", h);
        graph.norm(name + ".norm2", tensors + ".norm2", h, ModelConfig::Norm::LayerNorm);
        feedForward(graph, c, name + ".ffn", tensors + ".ffn");
        if (c.layerScale)
            graph.extraTensor(name + ".ffn.down", tensors + ".layer_scale2", h);
        lastOp = name + ".ffn.down";
    }
    for (int layer = run; layer < int(c.numLayers); ++layer)
        graph.extraTensor(lastOp, prefix + "encoder.transformer_encoder.layers." + std::to_string(layer) + ".unused",
            encoderBlockParams(c));
    graph.setContext(stack, -1, tokens);
    if (c.finalNorm && run == int(c.numLayers))
        graph.norm(prefix + "final_norm", prefix + "encoder.transformer_encoder.norm", h, ModelConfig::Norm::LayerNorm);
    else if (c.finalNorm)
        graph.extraTensor(lastOp, prefix + "encoder.transformer_encoder.norm.unused", 2 * h);
    if (c.pooler) {
        graph.setContext(stack, -1, 1);
        graph.linear(
            prefix + "pooler", prefix + "encoder.pooler.pooler.ffn.0.linear_layer", h, h, c.ffnBias, Op::Kind::Pooler);
    }
}

// ViT classification: the encoder, then a classifier over [CLS] (and the mean patch token).
void buildViT(GraphAssembler& graph, const ModelConfig& c)
{
    appendImageEncoder(graph, c, "vit_model.", Op::Stack::Encoder);
    graph.setContext(Op::Stack::None, -1, 1);
    const std::int64_t features = c.dinoClassifier ? 2 * c.hiddenSize : c.hiddenSize;
    graph.linear("classifier", "classifier.classifier.ffn.0.linear_layer", features, c.numClasses, c.biasInOutput,
        Op::Kind::LmHead);
    graph.loss("loss", c.numClasses);
}

// DiT: latent patches through blocks whose LayerNorms are scaled, shifted and gated by a
// per-sample vector (timestep and class embeddings) through adaLN-Zero modulation linears.
void buildDit(GraphAssembler& graph, const ModelConfig& c)
{
    const std::int64_t h = c.hiddenSize;
    const std::int64_t n = c.patches();
    const std::int64_t patchValues = c.numChannels * c.patchHeight * c.patchWidth;
    const auto affineFree = ModelConfig::Norm::NonParametric;
    graph.setContext(Op::Stack::None, -1, n);
    graph.patchEmbedding("patch_embedding", "patch_embedding_layer.linear_proj", patchValues, h, true);
    // Conditioning, once per sample: a timestep MLP over its sinusoid, and the class table.
    graph.setContext(Op::Stack::None, -1, 1);
    graph.linear(
        "timestep_embedding.fc1", "timestep_embedding_layer.ffn.ffn.0.linear_layer", c.frequencyEmbeddingSize, h, true);
    graph.activation("timestep_embedding.act", h, ModelConfig::Activation::Silu);
    graph.linear("timestep_embedding.fc2", "timestep_embedding_layer.ffn.ffn.1.linear_layer", h, h, true);
    graph.embedding("label_embedding", "label_embedding_layer.weight", c.labelRows, h);
    for (int layer = 0; layer < int(c.numLayers); ++layer) {
        const std::string name = "layers." + std::to_string(layer);
        const std::string tensors = "transformer_decoder.layers." + std::to_string(layer);
        // Six modulation linears (scale, shift and gate for attention and FFN) on the sample's vector.
        graph.setContext(Op::Stack::Decoder, layer, 1);
        graph.linear(name + ".adaln", tensors + ".adaln_modulation", h, 6 * h, true);
        graph.setContext(Op::Stack::Decoder, layer, n);
        graph.norm(name + ".norm1", tensors + ".norm1", h, affineFree);
        attentionBlock(graph, c, name + ".attn", tensors + ".self_attn", n, h, h);
        graph.norm(name + ".norm3", tensors + ".norm3", h, affineFree);
        feedForward(graph, c, name + ".ffn", tensors + ".ffn");
    }
    graph.setContext(Op::Stack::None, -1, 1);
    graph.linear("final_adaln", "final_norm.modulation", h, 2 * h, true);
    graph.setContext(Op::Stack::None, -1, n);
    graph.norm("final_norm", "final_norm.norm", h, affineFree);
    // The transposed convolution back to latent patches: a GEMM, with one bias per channel.
    graph.linear("noise_head", "noise_head.conv_transpose", h, patchValues, false, Op::Kind::LmHead);
    graph.extraTensor("noise_head", "noise_head.conv_transpose.bias", c.numChannels);
    graph.loss("loss", patchValues); // mean squared error on the predicted noise
}

// DINOv2: each trunk, then the heads that read it (teacher first, so its frozen part runs
// forward only); each head an MLP to a bottleneck, L2-normalised, then the weight-normed
// prototypes.
void buildDino(GraphAssembler& graph, const ModelConfig& c)
{
    for (std::size_t t = 0; t < c.parts.size(); ++t) {
        const std::string trunk = "image_model_trunks.model." + std::to_string(t) + ".";
        appendImageEncoder(graph, c.parts[t].config.front(), trunk, stackOfPart(c.parts[t]));
        for (std::size_t h = 0; h < c.heads.size(); ++h) {
            const ModelConfig::ProjectionHead& head = c.heads[h];
            if (std::size_t(head.trunk) != t || head.tokensPerSample == 0)
                continue;
            const std::string name = "heads.model." + std::to_string(h);
            graph.setContext(Op::Stack::None, -1, head.tokensPerSample);
            std::int64_t in = head.input;
            for (int l = 0; l < int(head.layers); ++l) {
                const std::int64_t out = l + 1 == int(head.layers) ? head.bottleneck : head.hidden;
                const std::string layer = name + ".mlp." + std::to_string(2 * l);
                graph.linear(layer, layer, in, out, head.bias);
                if (l + 1 < int(head.layers))
                    graph.activation(layer + ".act", out, ModelConfig::Activation::Gelu);
                in = out;
            }
            graph.norm(name + ".l2norm", name + ".l2norm", head.bottleneck, ModelConfig::Norm::NonParametric);
            graph.linear(name + ".last_layer", name + ".last_layer.weight_v", head.bottleneck, head.output, false,
                Op::Kind::LmHead);
            graph.extraTensor(name + ".last_layer", name + ".last_layer.weight_g", head.output);
            if (t + 1 == c.parts.size())
                graph.loss(name + ".loss", head.output); // cross-entropy against the teacher's prototypes
        }
    }
}

// LLaVA and multimodal_simple: the image tower over one image, the projector over its patch
// tokens (no [CLS]), and the language model over the sequence the image tokens are part of.
void buildMultimodal(GraphAssembler& graph, const ModelConfig& c)
{
    const ModelConfig& vision = c.parts.front().config.front();
    const ModelConfig& language = c.parts.back().config.front();
    const bool llava = c.family == F::Llava;
    appendImageEncoder(
        graph, vision, llava ? "image_model." : "image_model.image_model_list.0.0.", Op::Stack::ImageModel);
    const std::string projector = llava ? "projector_image_model.ffn." : "image_model.projection.ffn.";
    graph.setContext(Op::Stack::Projector, -1, vision.patches());
    std::int64_t in = c.projectorInput;
    for (std::size_t l = 0; l < c.projectorUnits.size(); ++l) {
        const std::string layer = projector + std::to_string(l) + ".linear_layer";
        graph.linear(layer, layer, in, c.projectorUnits[l], c.projectorBias);
        if (l + 1 < c.projectorUnits.size())
            graph.activation(layer + ".act", c.projectorUnits[l], ModelConfig::Activation::Gelu);
        in = c.projectorUnits[l];
    }
    appendDecoder(graph, language, "text_model.", Op::Stack::Decoder, c.sequenceLength);
    graph.setContext(Op::Stack::None, -1, c.sequenceLength);
    graph.loss("loss", language.vocabSize);
}

} // namespace

void buildVisionGraph(GraphAssembler& graph, const ModelConfig& config)
{
    switch (config.family) {
    case F::VisionTransformer:
        return buildViT(graph, config);
    case F::Dit:
        return buildDit(graph, config);
    case F::Dino:
        return buildDino(graph, config);
    default:
        return buildMultimodal(graph, config);
    }
}

} // namespace waferscope::core
