// The reader is as tolerant as the Model Zoo's own loader (tests/data/quirks): what Cerebras's tools accept loads,
// with a located warning where the file looks odd; a file that is not a model's params file gets one error that says
// what it is. Expected sizes are the files' own numbers and published vocabulary sizes, not the reader's output.
#include "testing.h"

#include "core/model/modelloader.h"

#include <string>

using namespace waferscope::core;
using waferscope::test::dataDir;
using waferscope::test::reportFailure;

namespace {

ModelConfig readQuirk(const std::string& name)
{
    Expected<ModelConfig> config = readParamsFile(dataDir() + "/quirks/" + name);
    if (!config) {
        reportFailure(__FILE__, __LINE__, name + ": " + config.error().format());
        throw ::waferscope::test::Abort {};
    }
    return config.value();
}

// The warning at line:column, or nullptr.
const ModelConfig::Warning* warningAt(const ModelConfig& config, int line, int column)
{
    for (const ModelConfig::Warning& warning : config.warnings)
        if (warning.line == line && warning.column == column)
            return &warning;
    return nullptr;
}

} // namespace

WS_TEST(aDuplicateKeyKeepsTheLastValueWithALocatedWarning)
{
    const ModelConfig config = readQuirk("duplicate_key.yaml");
    WS_CHECK_EQ(config.hiddenSize, 1536); // the second of "hidden_size: 768" and "hidden_size: 1536"
    const ModelConfig::Warning* warning = warningAt(config, 11, 5);
    WS_REQUIRE(warning != nullptr);
    WS_CHECK_CONTAINS(warning->message, "duplicate key 'hidden_size'");
    WS_CHECK_CONTAINS(warning->message, "line 10");
}

WS_TEST(mergeKeysBringTheirMappingAndExplicitKeysWin)
{
    const ModelConfig config = readQuirk("merge_keys.yaml");
    WS_CHECK_EQ(config.hiddenSize, 768); // set in the mapping itself, over the merged 512
    WS_CHECK_EQ(config.numLayers, 12); // merged
    WS_CHECK_EQ(config.vocabSize, 30522); // merged
    WS_CHECK(config.warnings.empty());
}

WS_TEST(tensorFlowEraGptKeepsItsVocabularyWithTheInput)
{
    Expected<ModelGraph> graph = loadModel(dataDir() + "/quirks/tf_gpt2_vocab_in_train_input.yaml");
    WS_REQUIRE(graph.hasValue());
    WS_CHECK_EQ(graph->config.vocabSize, 50257);
    // GPT-2 small (124M in the GPT-2 paper): tied 50257 x 768 embedding, 1024 x 768 positions, 12 blocks of
    // 4h^2+4h (attention) + 2hf+f+h (FFN) + 4h (norms), final norm 2h.
    constexpr std::int64_t h = 768, f = 3072;
    constexpr std::int64_t expected
        = 50257 * h + 1024 * h + 12 * (4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h) + 2 * h;
    static_assert(expected == 124'439'808);
    WS_CHECK_EQ(graph->totalParams, expected);
}

WS_TEST(aKnownVocabularyFileGivesItsPublishedSizeWithAWarning)
{
    const ModelConfig bert = readQuirk("tf_bert_vocab_file.yaml");
    WS_CHECK_EQ(bert.vocabSize, 30522); // Google's BERT uncased vocab.txt
    const ModelConfig::Warning* warning = warningAt(bert, 5, 17);
    WS_REQUIRE(warning != nullptr);
    WS_CHECK_CONTAINS(warning->message, "BERT uncased");
    WS_CHECK_CONTAINS(warning->message, "vocab_size");

    const ModelConfig t5 = readQuirk("tf_t5_vocab_file.yaml");
    WS_CHECK_EQ(t5.srcVocabSize, 32001 + 100); // the C4 SentencePiece file plus extra_ids from train_input
    WS_CHECK_EQ(t5.tgtVocabSize, 32001 + 100);
    WS_CHECK(warningAt(t5, 4, 17) != nullptr);
}

WS_TEST(aSequenceLongerThanThePositionTableIsAWarning)
{
    const ModelConfig config = readQuirk("bert_sequence_beyond_positions.yaml");
    WS_CHECK_EQ(config.sequenceLength, 1532);
    WS_CHECK_EQ(config.maxPositions, 512);
    const ModelConfig::Warning* warning = warningAt(config, 6, 26);
    WS_REQUIRE(warning != nullptr);
    WS_CHECK_CONTAINS(warning->message, "exceeds max_position_embeddings 512");
}

WS_TEST(aDataPreparationConfigSaysWhatItIs)
{
    Expected<ModelConfig> config = readParamsFile(dataDir() + "/notmodel/data_preparation.yaml");
    WS_REQUIRE(!config.hasValue());
    WS_CHECK_CONTAINS(config.error().message, "data-preparation config");
    WS_CHECK_EQ(config.error().line, 1);
}

WS_TEST(aTensorFlowFineTuningConfigTakesItsEncoderFromThePretrainingConfig)
{
    Expected<ModelGraph> graph
        = loadModel(dataDir() + "/quirks/tf_finetuning/bert/fine_tuning/classifier/configs/params_bert_base_mnli.yaml");
    WS_REQUIRE(graph.hasValue());
    WS_CHECK(graph->config.family == ModelConfig::Family::BertClassifier); // from the folder
    // BERT-base encoder (30,522 tokens from the known vocabulary file, 512 positions, 2 segments, embedding
    // LayerNorm, 12 post-norm blocks), the pooler, and a 3-way classifier.
    constexpr std::int64_t h = 768, f = 3072;
    constexpr std::int64_t block = 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h;
    constexpr std::int64_t expected = (30522 + 512 + 2) * h + 2 * h + 12 * block + h * h + h + 3 * h + 3;
    static_assert(expected == 109'484'547); // BertForSequenceClassification, 3 labels
    WS_CHECK_EQ(graph->totalParams, expected);
}

WS_TEST(aFileWithoutAModelNameTakesItsFamilyFromItsFolder)
{
    Expected<ModelGraph> graph = loadModel(dataDir() + "/quirks/r17_folder/gptj/configs/params_gpt_neox_small.yaml");
    WS_REQUIRE(graph.hasValue());
    WS_CHECK(graph->config.family == ModelConfig::Family::GptJ);
    // Parallel blocks with two LayerNorms each, biases everywhere, rotary positions, untied head.
    constexpr std::int64_t V = 50257, h = 768, f = 3072;
    constexpr std::int64_t block = 4 * h * h + 4 * h + 2 * h * f + f + h + 2 * 2 * h;
    WS_CHECK_EQ(graph->totalParams, V * h + 12 * block + 2 * h + V * h);
}

WS_TEST(linformerProjectsKeysAndValuesAlongTheSequence)
{
    Expected<ModelGraph> graph = loadModel(dataDir() + "/families/linformer_small.yaml");
    WS_REQUIRE(graph.hasValue());
    // RoBERTa-style MLM encoder without segments, NSP or pooler: tokens and 128 positions, an embedding LayerNorm,
    // two post-norm blocks each with E and F (128 -> 32, with biases), the MLM head (dense, LayerNorm, tied decoder
    // with its bias).
    constexpr std::int64_t V = 1000, h = 64, f = 256, S = 128, k = 32;
    constexpr std::int64_t block = 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h + 2 * (S * k + k);
    WS_CHECK_EQ(graph->totalParams, V * h + S * h + 2 * h + 2 * block + h * h + h + 2 * h + V);
    for (const Op& op : graph->ops) {
        if (op.kind == Op::Kind::AttentionCore) // each query attends the 32 projected keys
            WS_CHECK_NEAR(op.fwdFlopsPerToken, 4.0 * k * h + 5.0 * k * 4, 1e-12);
        if (op.name.find("e_projection") != std::string::npos) // a GEMM along the sequence for each feature
            WS_CHECK_NEAR(op.fwdFlopsPerToken * double(op.tokensPerSample), 2.0 * S * k * h + double(k * h), 1e-12);
    }
}

WS_TEST(theLayersApiDemoTakesItsFamilyFromItsFolder)
{
    Expected<ModelGraph> graph = loadModel(dataDir() + "/families/layers_api_demo/configs/params.yaml");
    WS_REQUIRE(graph.hasValue());
    WS_CHECK(graph->config.family == ModelConfig::Family::LayersApiDemo);
    // Token embedding 26 x 64; two blocks of attention without biases (4 x 64^2), an FFN without biases
    // (2 x 64 x 64) and two LayerNorms; no final norm; the output projection 64 -> 26 with its bias. This is the
    // 53,018 trainable parameters of the Model Zoo's demo (its 640 sinusoid values are constants).
    constexpr std::int64_t d = 64;
    constexpr std::int64_t expected = 26 * d + 2 * (4 * d * d + 2 * d * 64 + 4 * d) + d * 26 + 26;
    static_assert(expected == 53'018);
    WS_CHECK_EQ(graph->totalParams, expected);
}
