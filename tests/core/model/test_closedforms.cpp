// Parameter counts and FLOPs of the model graph against closed forms written here from the hyper-parameters alone:
// tests/data/models/*.yaml (both schema generations), the shared Model Zoo corpus (the published counts of its configs)
// and the project's samples/. Nothing here reads ModelConfig fields or calls the code under test to get an expectation.
#include "testing.h"

#include "core/model/modelloader.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace waferscope::core;
using waferscope::test::dataDir;
using waferscope::test::describe;
using waferscope::test::reportFailure;
using waferscope::test::sharedDir;
using waferscope::test::sourceDir;

namespace {

using Count = std::int64_t;

// ---- Closed forms --------------------------------------------------------------------------------------------------

// GPT-2/3 block: q, k, v, o weights and biases (4h^2 + 4h), FFN weights and biases (2hf + f + h), two LayerNorms with
// weight and bias (4h).
constexpr Count gptBlockParams(Count h, Count f)
{
    return 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h;
}

// GPT-2/3: token embedding V*h tied to the LM head, learned positions P*h, L blocks, final LayerNorm 2h.
constexpr Count gptParams(Count V, Count P, Count h, Count f, Count L)
{
    return V * h + P * h + L * gptBlockParams(h, f) + 2 * h;
}

// Llama block, no biases: q and o are h x h, k and v are h x (g*d) with d = h/n; SwiGLU FFN has three h x f
// matrices (gate, up, down); two RMSNorm weights.
constexpr Count llamaBlockParams(Count h, Count n, Count g, Count f)
{
    return 2 * h * h + 2 * h * g * (h / n) + 3 * h * f + 2 * h;
}

// Llama: token embedding and untied LM head (2*V*h), L blocks, final RMSNorm weight h.
constexpr Count llamaParams(Count V, Count h, Count n, Count g, Count f, Count L)
{
    return 2 * V * h + L * llamaBlockParams(h, n, g, f) + h;
}

// Mixtral block: attention and norms as Llama, E SwiGLU experts (E*3hf) and a router h x E. With E = top_k this is
// the block's active parameter count.
constexpr Count mixtralBlockParams(Count h, Count n, Count g, Count f, Count E)
{
    return 2 * h * h + 2 * h * g * (h / n) + E * 3 * h * f + h * E + 2 * h;
}

constexpr Count mixtralParams(Count V, Count h, Count n, Count g, Count f, Count E, Count L)
{
    return 2 * V * h + L * mixtralBlockParams(h, n, g, f, E) + h;
}

// T5 encoder block: self-attention q, k, v, o of h x (n*dkv), no biases; non-gated FFN 2*h*dff without biases; two
// RMSNorm weights.
constexpr Count t5EncoderBlockParams(Count h, Count n, Count dkv, Count dff)
{
    return 4 * h * (n * dkv) + 2 * h * dff + 2 * h;
}

// T5 decoder block: self- and cross-attention (8 matrices), FFN, three RMSNorm weights.
constexpr Count t5DecoderBlockParams(Count h, Count n, Count dkv, Count dff)
{
    return 8 * h * (n * dkv) + 2 * h * dff + 3 * h;
}

// T5: one embedding V' x h shared by encoder, decoder and LM head; a final RMSNorm per stack; a relative position bias
// table of 32 buckets x n heads once per stack.
constexpr Count t5Params(
    Count vocabWithExtraIds, Count h, Count n, Count dkv, Count dff, Count encoderLayers, Count decoderLayers)
{
    return vocabWithExtraIds * h + encoderLayers * t5EncoderBlockParams(h, n, dkv, dff) + h
        + decoderLayers * t5DecoderBlockParams(h, n, dkv, dff) + h + 2 * 32 * n;
}

// BERT: token, position and token-type embeddings with a LayerNorm; post-LN blocks shaped as GPT's; pooler h x h with
// bias; MLM head transform h x h with bias, its LayerNorm, decoder tied to the token embedding with its own bias V;
// NSP classifier h x 2 with bias.
constexpr Count bertParams(Count V, Count P, Count types, Count h, Count f, Count L, bool nsp)
{
    const Count embeddings = (V + P + types) * h + 2 * h;
    const Count pooler = h * h + h;
    const Count mlmHead = h * h + h + 2 * h + V;
    return embeddings + L * gptBlockParams(h, f) + pooler + mlmHead + (nsp ? 2 * h + 2 : 0);
}

// Attention core per token and layer at sequence length S over an attention width w (= heads x head dim): Q K^T and
// P V, each 2*S*w FLOPs when every key is counted. A causal mask may halve it.
constexpr double attentionCoreFlops(Count S, Count width, Count L)
{
    return 4.0 * double(S) * double(width) * double(L);
}

// The numbers the test data's header comments state, recomputed from the closed forms at compile time.
static_assert(gptParams(50257, 2048, 5120, 20480, 40) == 12'853'386'240);
static_assert(llamaParams(32000, 8192, 64, 8, 28672, 80) == 68'976'648'192);
static_assert(llamaParams(128256, 8192, 64, 8, 28672, 80) == 70'553'706'496);
static_assert(mixtralParams(32000, 4096, 32, 8, 14336, 8, 32) == 46'702'792'704);
static_assert(mixtralParams(32000, 4096, 32, 8, 14336, 2, 32) == 12'879'138'816);
static_assert(t5Params(32100, 1024, 128, 128, 65536, 24, 24) == 11'307'292'672);
static_assert(bertParams(30522, 512, 2, 1024, 4096, 24, true) == 336'226'108);
// The shared corpus's published counts, as cross-checks of the closed forms themselves.
static_assert(gptParams(50257, 2048, 768, 3072, 12) == 125'226'240); // params_gpt2_small: 125.2 M
static_assert(gptParams(50257, 2048, 2048, 8192, 24) == 1'315'723'264); // gpt3_xl: 1.3157 B
static_assert(llamaParams(32000, 4096, 32, 32, 11008, 32) == 6'738'415'616); // llama2_7b: 6.738 B
static_assert(llamaParams(128256, 4096, 32, 8, 14336, 32) == 8'030'261'248); // llama3_8b: 8.030 B
static_assert(bertParams(30522, 512, 2, 768, 3072, 12, true) == 110'106'428); // bert_base: about 110 M

// ---- Graph helpers -------------------------------------------------------------------------------------------------

ModelGraph load(const std::string& path)
{
    Expected<ModelGraph> graph = loadModel(path);
    if (!graph) {
        reportFailure(__FILE__, __LINE__, "loading " + path + ": " + graph.error().format());
        throw ::waferscope::test::Abort {};
    }
    return graph.value();
}

ModelGraph loadTestModel(const char* name)
{
    return load(dataDir() + "/models/" + name);
}

Count sumParams(const ModelGraph& graph, const std::function<bool(const Op&)>& select)
{
    Count sum = 0;
    for (const Op& op : graph.ops) {
        if (select(op))
            sum += op.params;
    }
    return sum;
}

Count sumKind(const ModelGraph& graph, Op::Kind kind)
{
    return sumParams(graph, [kind](const Op& op) { return op.kind == kind; });
}

Count layerParams(const ModelGraph& graph, int layer, const std::string& stack = {})
{
    return sumParams(
        graph, [&](const Op& op) { return op.layer == layer && (stack.empty() || nameOf(op.stack) == stack); });
}

std::size_t distinctLayers(const ModelGraph& graph, const std::string& stack = {})
{
    std::set<int> layers;
    for (const Op& op : graph.ops) {
        if (op.layer >= 0 && (stack.empty() || nameOf(op.stack) == stack))
            layers.insert(op.layer);
    }
    return layers.size();
}

bool endsWith(const std::string& text, const std::string& suffix)
{
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Sum of the tensors (named as the Model Zoo names them) whose name ends with suffix, in one layer (-1: every layer).
Count tensorParams(const ModelGraph& graph, const std::string& suffix, int layer = -1, const std::string& stack = {})
{
    Count sum = 0;
    for (const Op& op : graph.ops) {
        if ((layer >= 0 && op.layer != layer) || (!stack.empty() && nameOf(op.stack) != stack))
            continue;
        for (const ParamTensor& tensor : op.tensors) {
            if (endsWith(tensor.name, suffix))
                sum += tensor.count;
        }
    }
    return sum;
}

#define CHECK_BETWEEN(actual, low, high)                                                                               \
    do {                                                                                                               \
        const double wsValue = (actual);                                                                               \
        const double wsLow = (low);                                                                                    \
        const double wsHigh = (high);                                                                                  \
        if (!(wsValue >= wsLow && wsValue <= wsHigh))                                                                  \
            reportFailure(__FILE__, __LINE__,                                                                          \
                #actual " in [" #low ", " #high "]: "                                                                  \
                    + describe(wsValue, "[" + std::to_string(wsLow) + ", " + std::to_string(wsHigh) + "]"));           \
    } while (0)

// Forward FLOPs per token: 2 per weight of every matrix a token goes through (matmulWeights), plus the attention
// core, between its causal half and all of it; 1% under and 2% over for element-wise work (biases, norms,
// activations, softmax) and rounding.
void checkForwardFlops(const ModelGraph& graph, double matmulWeights, double attentionCore)
{
    CHECK_BETWEEN(graph.fwdFlopsPerToken, 0.99 * (2 * matmulWeights + attentionCore / 2),
        1.02 * (2 * matmulWeights + attentionCore));
}

// Backward is two matmuls (input gradient and weight gradient) per forward matmul.
void checkBackwardIsTwiceForward(const ModelGraph& graph)
{
    WS_CHECK(graph.fwdFlopsPerToken > 0);
    WS_CHECK_NEAR(graph.bwdFlopsPerToken, 2 * graph.fwdFlopsPerToken, 0.05);
}

std::string withThousands(Count value)
{
    std::string digits = std::to_string(value);
    for (int at = int(digits.size()) - 3; at > 0; at -= 3)
        digits.insert(std::size_t(at), ",");
    return digits;
}

std::vector<std::filesystem::path> yamlFiles(const std::filesystem::path& root, bool recursive)
{
    std::vector<std::filesystem::path> files;
    auto consider = [&](const std::filesystem::directory_entry& entry) {
        if (entry.is_regular_file() && entry.path().extension() == ".yaml")
            files.push_back(entry.path());
    };
    if (recursive) {
        for (const auto& entry : std::filesystem::recursive_directory_iterator(root))
            consider(entry);
    } else {
        for (const auto& entry : std::filesystem::directory_iterator(root))
            consider(entry);
    }
    std::sort(files.begin(), files.end());
    return files;
}

} // namespace

// ---- tests/data/models ---------------------------------------------------------------------------------------------

WS_TEST(gpt3_13bMatchesClosedForm)
{
    constexpr Count V = 50257, P = 2048, h = 5120, f = 20480, L = 40, S = 2048;
    constexpr Count expected = gptParams(V, P, h, f, L);
    const ModelGraph graph = loadTestModel("gpt3_13b.yaml");

    WS_CHECK_NEAR(double(graph.totalParams), double(expected), 0.01);
    WS_CHECK_EQ(graph.nonzeroParams, graph.totalParams); // no sparsity block
    WS_CHECK_EQ(distinctLayers(graph), std::size_t(L));
    WS_CHECK_EQ(layerParams(graph, 0), gptBlockParams(h, f));
    WS_CHECK_EQ(layerParams(graph, int(L) - 1), gptBlockParams(h, f));
    // Tied: one V x h matrix between the token embedding and the LM head; learned positions P x h.
    WS_CHECK_EQ(sumKind(graph, Op::Kind::Embedding) + sumKind(graph, Op::Kind::LmHead), V * h);
    WS_CHECK_EQ(sumKind(graph, Op::Kind::PositionEmbedding), P * h);

    // A decoder's forward pass costs at least 2 FLOPs per non-embedding parameter.
    const double nonEmbedding = double(expected - V * h - P * h);
    WS_CHECK(graph.fwdFlopsPerToken >= 2 * nonEmbedding);
    // Matrices a token goes through: q, k, v, o, FFN in and out per block, then the tied LM head.
    checkForwardFlops(graph, double(L * (4 * h * h + 2 * h * f) + V * h), attentionCoreFlops(S, h, L));
    checkBackwardIsTwiceForward(graph);
}

WS_TEST(llama2_70bMatchesClosedFormWithGroupedKv)
{
    constexpr Count V = 32000, h = 8192, n = 64, g = 8, f = 28672, L = 80, S = 4096;
    constexpr Count d = h / n; // 128
    constexpr Count expected = llamaParams(V, h, n, g, f, L);
    const ModelGraph graph = loadTestModel("llama2_70b.yaml");

    WS_CHECK_NEAR(double(graph.totalParams), double(expected), 0.01);
    WS_CHECK_EQ(distinctLayers(graph), std::size_t(L));
    WS_CHECK_EQ(layerParams(graph, 0), llamaBlockParams(h, n, g, f));

    // Grouped-query attention: q and o are h x h, k and v only h x (g*d) = 8192 x 1024.
    WS_CHECK_EQ(tensorParams(graph, "layers.0.self_attn.proj_q_dense_layer.weight", 0), h * h);
    WS_CHECK_EQ(tensorParams(graph, "layers.0.self_attn.proj_k_dense_layer.weight", 0), h * g * d);
    WS_CHECK_EQ(tensorParams(graph, "layers.0.self_attn.proj_v_dense_layer.weight", 0), h * g * d);
    WS_CHECK_EQ(tensorParams(graph, "layers.0.self_attn.proj_output_dense_layer.weight", 0), h * h);
    WS_CHECK_EQ(tensorParams(graph, "self_attn.proj_k_dense_layer.weight"), L * h * g * d);
    WS_CHECK_EQ(tensorParams(graph, "self_attn.proj_v_dense_layer.weight"), L * h * g * d);

    // Untied: the LM head is a second V x h matrix; rotary positions hold no parameters.
    WS_CHECK_EQ(sumKind(graph, Op::Kind::LmHead), V * h);
    WS_CHECK_EQ(sumKind(graph, Op::Kind::Embedding) + sumKind(graph, Op::Kind::LmHead), 2 * V * h);
    WS_CHECK_EQ(sumKind(graph, Op::Kind::PositionEmbedding), Count(0));

    const double nonEmbedding = double(expected - V * h);
    WS_CHECK(graph.fwdFlopsPerToken >= 2 * nonEmbedding);
    checkForwardFlops(graph, double(L * (2 * h * h + 2 * h * g * d + 3 * h * f) + V * h), attentionCoreFlops(S, h, L));
    checkBackwardIsTwiceForward(graph);
}

WS_TEST(llama3_70bDiffersFromLlama2OnlyInVocabulary)
{
    constexpr Count V = 128256, h = 8192, n = 64, g = 8, f = 28672, L = 80, S = 8192;
    constexpr Count d = h / n;
    constexpr Count expected = llamaParams(V, h, n, g, f, L);
    const ModelGraph graph = loadTestModel("llama3_70b.yaml"); // trainer schema

    WS_CHECK_NEAR(double(graph.totalParams), double(expected), 0.01);
    WS_CHECK_EQ(layerParams(graph, 0), llamaBlockParams(h, n, g, f));
    WS_CHECK_EQ(tensorParams(graph, "layers.0.self_attn.proj_k_dense_layer.weight", 0), h * g * d);
    WS_CHECK_EQ(sumKind(graph, Op::Kind::LmHead), V * h);

    // Same blocks as Llama 2 70B; only the (untied) vocabulary grows, from 32,000 to 128,256, on both ends.
    const ModelGraph llama2 = loadTestModel("llama2_70b.yaml");
    WS_CHECK_EQ(graph.totalParams - llama2.totalParams, 2 * (V - 32000) * h);

    // 8192-token sequences: the attention core is about 13% of the forward pass here.
    checkForwardFlops(graph, double(L * (2 * h * h + 2 * h * g * d + 3 * h * f) + V * h), attentionCoreFlops(S, h, L));
    WS_CHECK(graph.fwdFlopsPerToken > llama2.fwdFlopsPerToken);
    checkBackwardIsTwiceForward(graph);
}

WS_TEST(mixtralCountsAllExpertsButComputesTopK)
{
    constexpr Count V = 32000, h = 4096, n = 32, g = 8, f = 14336, E = 8, K = 2, L = 32, S = 4096;
    constexpr Count d = h / n;
    constexpr Count expected = mixtralParams(V, h, n, g, f, E, L); // 46.70 B
    constexpr Count active = mixtralParams(V, h, n, g, f, K, L); // 12.88 B
    const ModelGraph graph = loadTestModel("mixtral_8x7b.yaml");

    WS_CHECK_NEAR(double(graph.totalParams), double(expected), 0.01);
    WS_CHECK_EQ(distinctLayers(graph), std::size_t(L));
    WS_CHECK_EQ(layerParams(graph, 0), mixtralBlockParams(h, n, g, f, E));
    // Every expert holds its weights, the router is h x E per layer.
    WS_CHECK_EQ(sumKind(graph, Op::Kind::Experts), L * E * 3 * h * f);
    WS_CHECK_EQ(sumKind(graph, Op::Kind::MoeRouter), L * h * E);
    WS_CHECK_EQ(sumKind(graph, Op::Kind::LmHead), V * h);

    // Each token goes through top_k = 2 experts only: about 2 x 12.9 B FLOPs plus the attention core, far below
    // 2 x 46.7 B.
    const double activeMatmuls = double(L * (2 * h * h + 2 * h * g * d + K * 3 * h * f + h * E) + V * h);
    checkForwardFlops(graph, activeMatmuls, attentionCoreFlops(S, h, L));
    WS_CHECK_NEAR(graph.fwdFlopsPerToken, 2.0 * double(active - V * h), 0.10);
    WS_CHECK(graph.fwdFlopsPerToken < 0.35 * 2.0 * double(expected));
    checkBackwardIsTwiceForward(graph);
}

WS_TEST(t5_11bMatchesClosedFormWithWideAttention)
{
    constexpr Count vocab = 32000 + 100; // src_vocab_size + extra_ids
    constexpr Count h = 1024, n = 128, dkv = 128, dff = 65536, Le = 24, Ld = 24;
    constexpr Count expected = t5Params(vocab, h, n, dkv, dff, Le, Ld);
    const ModelGraph graph = loadTestModel("t5_11b.yaml");

    WS_CHECK_NEAR(double(graph.totalParams), double(expected), 0.01);
    WS_CHECK_EQ(distinctLayers(graph, "encoder"), std::size_t(Le));
    WS_CHECK_EQ(distinctLayers(graph, "decoder"), std::size_t(Ld));
    // Per-block sums; 1e-4 leaves room for the 32 x 128 relative bias table sitting in block 0.
    WS_CHECK_NEAR(double(layerParams(graph, 0, "encoder")), double(t5EncoderBlockParams(h, n, dkv, dff)), 1e-4);
    WS_CHECK_NEAR(double(layerParams(graph, 0, "decoder")), double(t5DecoderBlockParams(h, n, dkv, dff)), 1e-4);
    WS_CHECK_NEAR(double(layerParams(graph, 5, "decoder")), double(t5DecoderBlockParams(h, n, dkv, dff)), 1e-4);
    // Attention is n * d_kv = 16384 wide, 16 times d_model: q is 1024 x 16384, not 1024 x 1024.
    WS_CHECK_EQ(tensorParams(graph, "self_attn.proj_q_dense_layer.weight", 0, "encoder"), h * n * dkv);
    // One embedding for encoder, decoder and LM head.
    WS_CHECK_EQ(sumKind(graph, Op::Kind::Embedding) + sumKind(graph, Op::Kind::LmHead), vocab * h);
    WS_CHECK(graph.fwdFlopsPerToken > 0);
}

WS_TEST(bertLargeMatchesClosedFormWithHeads)
{
    constexpr Count V = 30522, P = 512, types = 2, h = 1024, f = 4096, L = 24, S = 512;
    constexpr Count expected = bertParams(V, P, types, h, f, L, true);
    const ModelGraph graph = loadTestModel("bert_large.yaml");

    WS_CHECK_NEAR(double(graph.totalParams), double(expected), 0.01);
    WS_CHECK_EQ(distinctLayers(graph, "encoder"), std::size_t(L));
    WS_CHECK_EQ(layerParams(graph, 0, "encoder"), gptBlockParams(h, f));
    WS_CHECK_EQ(sumKind(graph, Op::Kind::Pooler), h * h + h);
    // disable_nsp: False keeps the next-sentence classifier, h -> 2 with bias.
    bool nspHead = false;
    for (const Op& op : graph.ops)
        nspHead = nspHead || (op.inFeatures == h && op.outFeatures == 2 && op.params == 2 * h + 2);
    WS_CHECK(nspHead);

    // Bidirectional encoder: every block's matrices, the attention core over all 512 positions; the MLM transform and
    // tied decoder may run on every position (upper bound) or on the masked ones only (lower bound).
    const double blocks = double(L * (4 * h * h + 2 * h * f));
    CHECK_BETWEEN(graph.fwdFlopsPerToken, 0.99 * (2 * blocks + attentionCoreFlops(S, h, L) / 2),
        1.02 * (2 * (blocks + h * h + h * h + V * h) + attentionCoreFlops(S, h, L)));
    checkBackwardIsTwiceForward(graph);
}

WS_TEST(bothSchemaGenerationsAreRepresented)
{
    // gpt3_13b, llama2_70b, t5_11b, bert_large are legacy; llama3_70b and mixtral_8x7b are trainer files.
    WS_CHECK(loadTestModel("gpt3_13b.yaml").config.schema == ModelConfig::Schema::Legacy);
    WS_CHECK(loadTestModel("llama3_70b.yaml").config.schema == ModelConfig::Schema::Trainer);
    WS_CHECK(loadTestModel("mixtral_8x7b.yaml").config.schema == ModelConfig::Schema::Trainer);
}

// ---- ../shared/modelzoo (published counts) --------------------------------------------------------------------------

WS_TEST(modelZooCorpusMatchesReferenceCounts)
{
    const std::filesystem::path root = std::filesystem::path(sharedDir()) / "modelzoo";
    if (!std::filesystem::is_directory(root))
        WS_SKIP("Model Zoo corpus not found at " + root.string() + " (CI provides ../shared/modelzoo)");

    struct Expectation {
        double params;
        double tolerance;
        double nonzeroParams; // 0: no sparsity, nonzero == total
    };
    // Published counts: GPT-2 and GPT-3 papers, Cerebras-GPT, the Llama 2 paper and Llama 3 model card, BERT and T5.
    const std::map<std::string, Expectation> expectations {
        { "legacy-params/params_gpt2_small.yaml", { 125.2e6, 0.005, 0 } },
        { "legacy-params/params_gpt3_xl.yaml", { 1.3157e9, 0.005, 0 } },
        { "trainer/params_gpt3_xl.yaml", { 1.3157e9, 0.005, 0 } },
        { "tf-weight-streaming/params_gpt3_xl_ws.yaml", { 1.3157e9, 0.005, 0 } },
        // param_filter selects 84.93 M weights; 0.75 of them are zero: 125.2 M - 63.70 M = 61.53 M.
        { "legacy-params/params_gpt3_125m_static75.yaml", { 125.2e6, 0.005, 61.53e6 } },
        { "legacy-params/params_llama2_7b.yaml", { 6.738e9, 0.005, 0 } },
        { "legacy-params/params_llama3_8b.yaml", { 8.030e9, 0.005, 0 } },
        { "trainer/params_llama3p1_8b_msl_8k.yaml", { 8.030e9, 0.005, 0 } },
        { "legacy-params/bert_base_MSL128.yaml", { 110e6, 0.01, 0 } },
        { "legacy-params/t5_base.yaml", { 223e6, 0.01, 0 } },
    };

    std::set<std::string> seen;
    for (const std::filesystem::path& file : yamlFiles(root, true)) {
        const std::string relative = file.lexically_relative(root).generic_string();
        seen.insert(relative);
        const auto found = expectations.find(relative);
        if (found == expectations.end()) {
            reportFailure(__FILE__, __LINE__, relative + ": no expected parameter count; add its published count");
            continue;
        }
        Expected<ModelGraph> graph = loadModel(file.string());
        if (!graph) {
            reportFailure(__FILE__, __LINE__, relative + ": " + graph.error().format());
            continue;
        }
        const Expectation& expected = found->second;
        if (std::fabs(double(graph->totalParams) - expected.params) > expected.tolerance * expected.params)
            reportFailure(
                __FILE__, __LINE__, relative + ": total params " + describe(graph->totalParams, expected.params));
        const double nonzero = expected.nonzeroParams > 0 ? expected.nonzeroParams : double(graph->totalParams);
        if (std::fabs(double(graph->nonzeroParams) - nonzero) > 0.005 * nonzero)
            reportFailure(__FILE__, __LINE__, relative + ": nonzero params " + describe(graph->nonzeroParams, nonzero));
    }
    for (const auto& [relative, expected] : expectations) {
        if (!seen.count(relative))
            reportFailure(__FILE__, __LINE__, relative + ": listed here but missing from " + root.string());
    }
}

// ---- samples/ ------------------------------------------------------------------------------------------------------

WS_TEST(everySampleLoadsWithItsDocumentedCount)
{
    // Recomputed here from each sample's hyper-parameters; the sample's header comment must state the same number.
    const std::map<std::string, Count> expectations {
        { "fc_mnist.yaml", (784 * 500 + 500) + (500 * 300 + 300) + (300 * 10 + 10) },
        { "gpt2_small.yaml", gptParams(50257, 1024, 768, 3072, 12) },
        { "gpt3_6p7b.yaml", gptParams(50257, 2048, 4096, 16384, 32) },
        { "gpt3_xl.yaml", gptParams(50257, 2048, 2048, 8192, 24) },
        { "gpt3_xl_sparse90.yaml", gptParams(50257, 2048, 2048, 8192, 24) },
        { "gpt_1t_synthetic.yaml", gptParams(50257, 2048, 25600, 102400, 128) },
        { "llama2_70b.yaml", llamaParams(32000, 8192, 64, 8, 28672, 80) },
        { "llama3_8b.yaml", llamaParams(128256, 4096, 32, 8, 14336, 32) },
        { "llama3p1_70b.yaml", llamaParams(128256, 8192, 64, 8, 28672, 80) },
        { "llama3p1_405b.yaml", llamaParams(128256, 16384, 128, 8, 53248, 126) },
        { "llama3p2_1b.yaml", llamaParams(128256, 2048, 32, 8, 8192, 16) - 128256 * 2048 }, // tied LM head
    };

    const std::filesystem::path root = std::filesystem::path(sourceDir()) / "samples";
    WS_REQUIRE(std::filesystem::is_directory(root));
    std::set<std::string> seen;
    for (const std::filesystem::path& file : yamlFiles(root, false)) {
        const std::string name = file.filename().string();
        seen.insert(name);
        const auto found = expectations.find(name);
        if (found == expectations.end()) {
            reportFailure(__FILE__, __LINE__, "samples/" + name + ": no expected parameter count in this test");
            continue;
        }
        const Count expected = found->second;

        std::ifstream stream(file);
        std::string header, line;
        while (std::getline(stream, line) && (line.empty() || line[0] == '#'))
            header += line + '\n';
        WS_CHECK_CONTAINS(header, withThousands(expected));

        Expected<ModelGraph> graph = loadModel(file.string());
        if (!graph) {
            reportFailure(__FILE__, __LINE__, "samples/" + name + ": " + graph.error().format());
            continue;
        }
        if (std::fabs(double(graph->totalParams) - double(expected)) > 0.005 * double(expected))
            reportFailure(
                __FILE__, __LINE__, "samples/" + name + ": total params " + describe(graph->totalParams, expected));
        if (name == "gpt3_xl_sparse90.yaml") {
            // 90% of every block matrix is zero: 24 x (4h^2 + 2hf) weights at h = 2048, f = 8192.
            const double zeros = 0.9 * 24.0 * (4.0 * 2048 * 2048 + 2.0 * 2048 * 8192);
            WS_CHECK_NEAR(double(graph->nonzeroParams), double(expected) - zeros, 1e-6);
        }
    }
    for (const auto& [name, expected] : expectations) {
        if (!seen.count(name))
            reportFailure(__FILE__, __LINE__, "samples/" + name + ": expected but missing");
    }
}
