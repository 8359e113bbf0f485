#pragma once

#include "core/common/names.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core {

// Everything WaferScope takes from a Model Zoo params YAML, normalised across the schema
// generations (legacy train_input/model/optimizer/runconfig, trainer:, R1.6 TF weight
// streaming). Produced by readParams(); every size here has been validated.
struct ModelConfig {
    enum class Schema { Legacy, Trainer, TfWeightStreaming };
    enum class Family {
        Gpt2,
        Gpt3,
        GptJ, // also GPT-NeoX: parallel attention and FFN
        Falcon,
        Bloom,
        Btlm,
        Jais,
        StarCoder,
        SantaCoder,
        Gemma2,
        Mpt,
        Llama, // also Mistral
        Mixtral,
        Bert,
        BertClassifier,
        BertTokenClassifier,
        BertSummarization,
        BertQuestionAnswering,
        Esm2,
        Dpr,
        Dpo,
        T5,
        Transformer, // the encoder-decoder of "Attention Is All You Need"
        LayersApiDemo,
        FcMnist,
        VisionTransformer, // ViT classification
        Dino, // DINOv2: teacher and student trunks with their heads
        Dit, // diffusion transformer over VAE latents
        Llava, // vision tower, projector, language model
        MultimodalSimple, // the same, with a list of image encoders
        Unet, // a convolutional encoder-decoder over 2-D or 3-D images (Releases 1.x to 2.0)
        Linformer // RoBERTa with keys and values projected along the sequence (Release 1.7, TensorFlow)
    };
    enum class Norm { LayerNorm, RmsNorm, BiaslessLayerNorm, NonParametric };
    enum class Activation { Gelu, Relu, Silu, Tanh, SwiGlu, GeGlu, ReGlu };
    enum class Positions { Learned, Fixed, Relative, Rotary, Alibi, None };
    enum class Optimizer { Adam, AdamW, Sgd, AdaFactor, Lamb, Other };

    std::string fileName; // as given by the user
    Schema schema = Schema::Legacy;
    Family family = Family::Gpt2;
    std::string name; // display name: model.name if given, else the family name

    // Decoder/encoder transformer shape (GPT, Llama, Mixtral, BERT).
    std::int64_t vocabSize = 0;
    std::int64_t hiddenSize = 0;
    std::int64_t numLayers = 0;
    std::int64_t numHeads = 0;
    std::int64_t numKvGroups = 0; // == numHeads for plain multi-head attention
    std::int64_t attentionInnerDim = 0; // width of q and of the output projection's input: num_heads x head size
    std::int64_t filterSize = 0; // FFN inner size
    std::int64_t maxPositions = 0; // max_position_embeddings
    Positions positions = Positions::Learned;
    double ropeTheta = 10000.0; // rotary base (rope_theta); the frequency of pair i is theta^(-2i/head size)
    bool shareEmbeddingWeights = true; // LM head tied to the token embedding
    Norm norm = Norm::LayerNorm;
    Activation activation = Activation::Gelu;
    bool projectionBiasInAttention = true; // q, k, v biases
    bool ffnBiasInAttention = true; // output projection bias
    bool ffnBias = true;
    bool biasInOutput = false; // LM head bias
    std::int64_t slidingWindow = 0; // 0 = full causal attention
    bool alternateSlidingWindow = false; // Gemma 2: the window on every other layer only
    bool slidingWindowFirst = false; // ... starting with layer 0 (else full attention first)
    std::int64_t attentionSinkTokens = 0; // keys always visible besides the window (StreamingLLM sinks)
    bool parallelAttention = false; // GPT-J, NeoX, Falcon: attention and FFN read one normed input, summed
    bool untiedParallelNorms = false; // NeoX, Falcon 40B/180B: a norm per branch of the parallel block
    bool embeddingLayerNorm = false; // BLOOM, ESM-2: a norm right after the token embedding
    bool sandwichNorms = false; // Gemma 2: norms after attention and FFN as well as before
    bool finalNorm = true; // the norm after the last block (ESM-2: use_final_layer_norm)
    bool trainableAlibiSlopes = false; // one slope per head as a parameter
    std::int64_t qkNormWidth = 0; // > 0: a norm of this width on q and on k in every attention
    bool attentionSinkParameter = false; // GPT-OSS-style learned sink logit per head
    double attentionLogitSoftcap = 0.0; // Gemma 2: cap * tanh(score / cap), FLOPs only
    double finalLogitSoftcap = 0.0;

    // Mixture of experts (any decoder with a moe block).
    std::int64_t numExperts = 0; // 0 = dense
    std::int64_t topK = 0;
    std::int64_t numSharedExperts = 0; // experts every token goes through besides its top_k
    bool routerBias = false;

    // BERT.
    std::int64_t typeVocabSize = 2; // token-type (segment) embeddings
    bool disableNsp = false;
    bool pooler = true; // the [CLS] dense + tanh
    bool mlmOutputBias = true;
    std::int64_t numLabels = 0; // classifier, token-classifier and summarisation heads
    bool classifierBias = true;
    std::int64_t linformerDims = 0; // Linformer: keys and values projected from the sequence to this many
    bool linformerSharedKv = false; // ... by one projection for both
    std::int64_t headTokensPerSample = 1; // tokens a classifier head sees: [CLS], every token, or the sentences
    std::int64_t positionTableRows = 0; // learned position rows; 0 = maxPositions (RoBERTa adds padding rows)

    // T5.
    std::int64_t dKv = 0; // per-head size; inner attention dim = dKv * numHeads
    std::int64_t encoderLayers = 0;
    std::int64_t decoderLayers = 0;
    std::int64_t srcVocabSize = 0; // including extra_ids
    std::int64_t tgtVocabSize = 0;
    std::int64_t relativeBuckets = 32;
    bool shareEncoderDecoderEmbedding = true; // one table for source and target tokens

    // Models made of other models: DPO's policy, DPR's question and context encoders. Each part is
    // a complete config of its own family; `frozenReference` adds a frozen copy of part 0.
    struct Part {
        std::string role; // "policy", "question_encoder", ...
        std::vector<ModelConfig> config; // exactly one (a vector, so that ModelConfig can nest)
    };
    std::vector<Part> parts;
    bool frozenReference = false; // DPO: the reference model, a frozen copy of the policy

    // Vision: an image (or a latent, for DiT) cut into patches, each a token.
    std::int64_t imageHeight = 0; // pixels, or latent cells
    std::int64_t imageWidth = 0;
    std::int64_t numChannels = 0;
    std::int64_t patchHeight = 0;
    std::int64_t patchWidth = 0;
    bool clsToken = false; // a learned [CLS] token ahead of the patches
    bool patchBias = true;
    bool postEmbedNorm = false; // a LayerNorm after the embeddings (CLIP's pre-norm)
    bool maskToken = false; // DINOv2's learned token for masked patches
    bool layerScale = false; // a learned per-channel scale on each residual branch
    std::int64_t layersRun = 0; // encoder layers that run (LLaVA stops one short); 0 = all
    bool dinoClassifier = false; // the classifier reads [CLS] and the mean patch token (2 x hidden)
    std::int64_t patches() const
    {
        return patchHeight > 0 && patchWidth > 0 ? (imageHeight / patchHeight) * (imageWidth / patchWidth) : 0;
    }
    std::int64_t imageTokens() const { return patches() + (clsToken ? 1 : 0); }
    // An encoder that sees several views of a sample (DINOv2's crops): its patches and tokens per
    // sample, and the keys its queries attend on average; 0 = one image of imageTokens().
    std::int64_t viewPatchesPerSample = 0;
    std::int64_t viewTokensPerSample = 0;
    double viewKeysPerToken = 0.0;

    // DiT: timestep and class conditioning.
    std::int64_t frequencyEmbeddingSize = 0;
    std::int64_t labelRows = 0; // classes, plus the null class when labels are dropped for guidance

    // DINOv2: views of each sample (global and local crops) and the projection heads.
    std::int64_t globalCrops = 0;
    std::int64_t localCrops = 0;
    std::int64_t localImageSize = 0;
    struct ProjectionHead {
        std::int64_t input = 0;
        std::int64_t hidden = 0;
        std::int64_t bottleneck = 0;
        std::int64_t output = 0;
        std::int64_t layers = 3;
        bool bias = true;
        int trunk = 0; // the trunk whose outputs it reads
        std::int64_t tokensPerSample = 0; // [CLS] tokens and patch tokens it sees per sample
    };
    std::vector<ProjectionHead> heads;

    // LLaVA and multimodal_simple: the projector from image features to the language model.
    std::vector<std::int64_t> projectorUnits; // output width of each layer
    std::int64_t projectorInput = 0;
    bool projectorBias = true;

    // U-Net: filters per encoder block (the bottleneck last) and per decoder block.
    std::vector<std::int64_t> imageShape; // spatial sizes, 2 or 3 of them
    std::vector<std::int64_t> encoderFilters;
    std::vector<std::int64_t> decoderFilters;
    int convsPerBlock = 2; // 3^d convolutions per block
    bool convBias = true;
    bool convNorm = true; // a group or batch norm (weight and bias per channel) after each convolution
    bool stridedDownscale = false; // a stride-2 convolution instead of max pooling
    bool downscaleFirstConv = false; // ... the block's first convolution (else its last)
    std::vector<bool> downscaleBlocks; // per encoder block
    bool downscaleBottleneck = false;
    std::int64_t outputChannels = 0;

    // Regexes over parameter names (the Model Zoo's `freeze`); matching weights are frozen.
    std::vector<std::string> freezePatterns;

    // fc_mnist.
    std::int64_t inputSize = 0;
    std::vector<std::int64_t> hiddenSizes;
    std::int64_t numClasses = 0;

    // Batch and sequence.
    std::int64_t sequenceLength = 0; // tokens per sample (max_sequence_length or max_position_embeddings)
    std::int64_t targetSequenceLength = 0; // T5 decoder tokens per sample
    std::int64_t batchSize = 0; // global, split evenly across num_csx
    std::int64_t microBatchSize = 0; // per system; 0 = not set (compiler chooses)

    // Precision and optimizer.
    std::string fp16Type = "float16"; // float16, bfloat16, cbfloat16
    bool mixedPrecision = true;
    int weightBytes = 2; // bytes per weight as streamed/stored on the wafer
    Optimizer optimizer = Optimizer::AdamW;
    bool optimizerMomentum = false; // SGD with momentum keeps one state tensor
    // One piece of a learning-rate schedule (learning_rate: [{scheduler: Linear, ...}, ...]).
    struct LearningRateSegment {
        std::string scheduler; // as written: "Linear", "CosineDecay", "Constant", ...
        double initial = 0.0; // initial_learning_rate (Constant: learning_rate)
        double end = 0.0; // end_learning_rate
        std::int64_t steps = 0; // total_iters (decay_steps, steps); 0: to the end
    };
    // What the cycle level's training step updates the weights with (the model level needs only
    // the optimizer's kind). Unset keys keep these defaults: PyTorch's for the betas and eps.
    struct OptimizerSettings {
        double learningRate = 0.0; // a constant learning_rate
        std::vector<LearningRateSegment> schedule; // a schedule instead, in order
        double momentum = 0.0;
        double beta1 = 0.9;
        double beta2 = 0.999;
        double epsilon = 1e-8;
        double weightDecay = 0.0;
        double maxGradientNorm = 0.0; // max_gradient_norm; 0: no clipping
        double lossScale = 1.0; // loss_scaling_factor; 0: "dynamic"
    };
    OptimizerSettings optimizerSettings;

    // Weight sparsity.
    double sparsity = 0.0; // fraction of zeros in the filtered weights, [0, 1)
    std::string sparsityAlgorithm; // static, rigl, set, gmp
    std::vector<std::string> sparsityFilter; // globs over parameter names; empty = all weight matrices

    // Run configuration.
    std::int64_t maxSteps = 0;
    std::int64_t numCsx = 1;
    std::int64_t checkpointSteps = 0;

    struct Warning {
        int line = 0;
        int column = 0;
        std::string message;
    };
    std::vector<Warning> warnings; // unknown keys and inferred choices, with location
};

const char* toString(ModelConfig::Family family);
// The GPT-2 and GPT-J backbone families: causal decoders that generate (and can be DPO policies).
bool isDecoderLanguageModel(ModelConfig::Family family);
const char* toString(ModelConfig::Schema schema);
template <>
std::span<const EnumName<ModelConfig::Family>> nameTable<ModelConfig::Family>();
template <>
std::span<const EnumName<ModelConfig::Schema>> nameTable<ModelConfig::Schema>();

} // namespace waferscope::core
