#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core {

// Everything WaferScope takes from a Model Zoo params YAML, normalised across the schema
// generations (legacy train_input/model/optimizer/runconfig, trainer:, R1.6 TF weight
// streaming). Produced by readParams(); every size here has been validated.
struct ModelConfig {
    enum class Schema { Legacy, Trainer, TfWeightStreaming };
    enum class Family { Gpt2, Gpt3, Llama, Mixtral, Bert, T5, FcMnist };
    enum class Norm { LayerNorm, RmsNorm };
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
    bool shareEmbeddingWeights = true; // LM head tied to the token embedding
    Norm norm = Norm::LayerNorm;
    Activation activation = Activation::Gelu;
    bool projectionBiasInAttention = true; // q, k, v biases
    bool ffnBiasInAttention = true; // output projection bias
    bool ffnBias = true;
    bool biasInOutput = false; // LM head bias
    std::int64_t slidingWindow = 0; // 0 = full causal attention

    // Mixture of experts (any decoder with a moe block).
    std::int64_t numExperts = 0; // 0 = dense
    std::int64_t topK = 0;

    // BERT.
    std::int64_t typeVocabSize = 2; // token-type (segment) embeddings
    bool disableNsp = false;

    // T5.
    std::int64_t dKv = 0; // per-head size; inner attention dim = dKv * numHeads
    std::int64_t encoderLayers = 0;
    std::int64_t decoderLayers = 0;
    std::int64_t srcVocabSize = 0; // including extra_ids
    std::int64_t tgtVocabSize = 0;
    std::int64_t relativeBuckets = 32;

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
const char* toString(ModelConfig::Schema schema);

} // namespace waferscope::core
