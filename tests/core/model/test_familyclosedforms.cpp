// Parameter counts (and a few FLOPs) of the Model Zoo 2.10.0 families added for issue 25, against closed forms written
// here from each architecture as published (GPT-J, Falcon, BLOOM, Gemma 2, StarCoder, Jais, ESM-2, BERT heads, the
// transformer, MoE with shared experts, DPO, DPR). Nothing here calls the graph builder for an expectation; the
// static_asserts tie each closed form to the count an independent Python reference gave for the same file.
#include "testing.h"

#include "corefixtures.h"

#include "core/model/modelloader.h"

#include <filesystem>
#include <string>

using namespace waferscope::core;
using waferscope::test::reportFailure;
using waferscope::test::sharedDir;

namespace {

using Count = std::int64_t;

// Pre-norm LayerNorm with weight and bias.
constexpr Count layerNorm(Count h)
{
    return 2 * h;
}

// q, k, v, o projections: q and o are h x inner, k and v h x kv; biases on q, k, v (projection) and o.
constexpr Count attention(Count h, Count inner, Count kv, bool projectionBias, bool outputBias)
{
    return 2 * h * inner + 2 * h * kv + (projectionBias ? inner + 2 * kv : 0) + (outputBias ? h : 0);
}

// FFN h -> f -> h; gated (SwiGLU/GeGLU) has a second h x f matrix; biases on every linear.
constexpr Count ffn(Count h, Count f, bool gated, bool bias)
{
    return (gated ? 3 : 2) * h * f + (bias ? (gated ? 2 : 1) * f + h : 0);
}

// GPT-J 6B: untied head with a bias, one LayerNorm per parallel block, no attention biases.
constexpr Count gptj(Count V, Count h, Count f, Count L)
{
    return V * h + L * (attention(h, h, h, false, false) + ffn(h, f, false, true) + layerNorm(h)) + layerNorm(h) + V * h
        + V;
}
// Falcon 40B: 8 KV groups of head size 64, two LayerNorms per parallel block (untied), no biases, tied head.
constexpr Count falcon40b(Count V, Count h, Count f, Count L, Count kv)
{
    return V * h + L * (attention(h, h, kv, false, false) + ffn(h, f, false, false) + 2 * layerNorm(h)) + layerNorm(h);
}
// BLOOM: ALiBi (no position table), a LayerNorm after the embedding, biases everywhere, tied head.
constexpr Count bloom(Count V, Count h, Count f, Count L)
{
    return V * h + layerNorm(h) + L * (attention(h, h, h, true, true) + ffn(h, f, false, true) + 2 * layerNorm(h))
        + layerNorm(h);
}
// Gemma 2: RMSNorm (weight only), four norms per block (sandwich), GeGLU, attention width 4096, 8 KV heads of 256.
constexpr Count gemma2(Count V, Count h, Count f, Count L, Count inner, Count kv)
{
    return V * h + L * (attention(h, inner, kv, false, false) + ffn(h, f, true, false) + 4 * h) + h;
}
// StarCoder / SantaCoder: multi-query (one KV head), learned positions, biases, tied head.
constexpr Count starcoder(Count V, Count P, Count h, Count f, Count L, Count headDim)
{
    return V * h + P * h + L * (attention(h, h, headDim, true, true) + ffn(h, f, false, true) + 2 * layerNorm(h))
        + layerNorm(h);
}
// Jais / BTLM: ALiBi, SwiGLU with biases, LayerNorm, tied head.
constexpr Count alibiSwiglu(Count V, Count h, Count f, Count L)
{
    return V * h + L * (attention(h, h, h, true, true) + ffn(h, f, true, true) + 2 * layerNorm(h)) + layerNorm(h);
}
// BERT encoder without pooler: tokens, positions, segments, embedding LayerNorm, post-norm blocks.
constexpr Count bertEncoder(Count V, Count P, Count segments, Count h, Count f, Count L)
{
    return V * h + P * h + segments * h + layerNorm(h)
        + L * (attention(h, h, h, true, true) + ffn(h, f, false, true) + 2 * layerNorm(h));
}
// ESM-2: rotary, no segments, no embedding norm, a final LayerNorm, MLM head (dense, LayerNorm, tied decoder + bias).
constexpr Count esm2(Count V, Count h, Count f, Count L)
{
    return V * h + L * (attention(h, h, h, true, true) + ffn(h, f, false, true) + 2 * layerNorm(h)) + layerNorm(h)
        + h * h + h + layerNorm(h) + V;
}
// The transformer (base): one embedding for both sides tied to the head, sinusoidal positions, LayerNorms,
// no attention biases; encoder blocks of attention, FFN, two norms; decoder blocks add cross-attention and a norm.
constexpr Count transformer(Count V, Count d, Count f, Count L)
{
    const Count attn = attention(d, d, d, false, false);
    return V * d + L * (attn + ffn(d, f, false, true) + 2 * layerNorm(d)) + layerNorm(d)
        + L * (2 * attn + ffn(d, f, false, true) + 3 * layerNorm(d)) + layerNorm(d);
}
// MoE with shared experts: E routed plus S shared SwiGLU experts with biases, a router h x E, ALiBi, tied head.
constexpr Count moeShared(Count V, Count h, Count f, Count L, Count E, Count S)
{
    return V * h + L * (attention(h, h, h, true, true) + (E + S) * ffn(h, f, true, true) + h * E + 2 * layerNorm(h))
        + layerNorm(h);
}
// Mistral 7B (the DPO policy): GQA 8 of 32 heads, SwiGLU, RMSNorm, untied head.
constexpr Count mistral7b()
{
    constexpr Count V = 32000, h = 4096, f = 14336, L = 32, kv = 8 * 128;
    return 2 * V * h + L * (attention(h, h, kv, false, false) + ffn(h, f, true, false) + 2 * h) + h;
}

// The independent Python reference's counts for the same files.
static_assert(gptj(50257, 4096, 16384, 28) == 6'049'711'185);
static_assert(falcon40b(65024, 8192, 32768, 60, 8 * 64) == 41'303'293'952);
static_assert(bloom(250880, 4096, 16384, 30) == 7'069'016'064); // the BLOOM-7B1 model card's exact count
static_assert(gemma2(256000, 3584, 14336, 42, 4096, 8 * 256) == 9'241'705'984); // the Gemma 2 paper's 9B total
static_assert(starcoder(49152, 8192, 6144, 24576, 40, 128) == 15'517'456'384);
static_assert(starcoder(49280, 2048, 2048, 8192, 24, 128) == 1'124'886'528); // SantaCoder
static_assert(alibiSwiglu(84992, 5120, 13653, 40) == 13'020'811'920); // Jais 13B
static_assert(alibiSwiglu(50257, 2560, 6826, 32) == 2'646'255'744); // BTLM-3B-8K
static_assert(esm2(33, 480, 1920, 12) == 33'501'153);
static_assert(bertEncoder(30522, 512, 2, 768, 3072, 12) + 768 * 7 + 7 == 108'897'031); // token classifier, 7 classes
static_assert(bertEncoder(30522, 1532, 2, 768, 3072, 12) + 768 * 2 + 2 == 109'676'546); // summarisation
static_assert(transformer(36550, 512, 2048, 6) == 62'817'280);
static_assert(moeShared(50257, 768, 2048, 10, 4, 1) == 298'456'832);
static_assert(mistral7b() == 7'241'732'096);
static_assert(2 * bertEncoder(30522, 512, 2, 768, 3072, 12) == 217'783'296); // DPR: two encoders, no pooler

struct Case {
    const char* file; // under ../shared/modelzoo-release-2.10.0
    Count total;
    Count frozen;
};

const Case kCases[] = {
    { "nlp/gptj/configs/params_gptj_6B.yaml", gptj(50257, 4096, 16384, 28), 0 },
    { "nlp/falcon/configs/params_falcon_40b.yaml", falcon40b(65024, 8192, 32768, 60, 8 * 64), 0 },
    { "nlp/bloom/configs/params_bloom_7b.yaml", bloom(250880, 4096, 16384, 30), 0 },
    { "nlp/gemma2/configs/params_gemma2_9b_msl8k.yaml", gemma2(256000, 3584, 14336, 42, 4096, 8 * 256), 0 },
    { "nlp/starcoder/configs/params_starcoder_15b.yaml", starcoder(49152, 8192, 6144, 24576, 40, 128), 0 },
    { "nlp/santacoder/configs/params_santacoder_1b.yaml", starcoder(49280, 2048, 2048, 8192, 24, 128), 0 },
    { "nlp/jais/configs/params_jais_13b.yaml", alibiSwiglu(84992, 5120, 13653, 40), 0 },
    { "nlp/btlm/configs/params_btlm_2p7b_8k.yaml", alibiSwiglu(50257, 2560, 6826, 32), 0 },
    { "nlp/esm2/configs/params_esm2_t12_35M_UR50D.yaml", esm2(33, 480, 1920, 12), 0 },
    { "nlp/bert/token_classifier/configs/bert_base_ner_bc5cdr_chem.yaml",
        bertEncoder(30522, 512, 2, 768, 3072, 12) + 768 * 7 + 7, 0 },
    { "nlp/bert/extractive_summarization/configs/bert_base_summarization.yaml",
        bertEncoder(30522, 1532, 2, 768, 3072, 12) + 768 * 2 + 2, 0 },
    { "nlp/transformer/configs/transformer_base.yaml", transformer(36550, 512, 2048, 6), 0 },
    { "nlp/mixtral/configs/params_moe_111M_with_shared_expert.yaml", moeShared(50257, 768, 2048, 10, 4, 1), 0 },
    { "nlp/dpo/configs/params_zephyr_7b_dpo.yaml", 2 * mistral7b(), mistral7b() },
    { "nlp/dpr/configs/params_dpr_base_nq.yaml", 2 * bertEncoder(30522, 512, 2, 768, 3072, 12), 0 },
};

std::filesystem::path corpus()
{
    return waferscope::test::modelZooRelease();
}

ModelGraph loadCorpusFile(const std::string& relative)
{
    return waferscope::test::loadModelZooRelease(relative);
}

} // namespace

WS_TEST(newFamiliesMatchTheirClosedForms)
{
    if (!std::filesystem::is_directory(corpus()))
        WS_SKIP("Model Zoo 2.10.0 corpus not found at " + corpus().string());
    for (const Case& c : kCases) {
        const ModelGraph graph = loadCorpusFile(c.file);
        if (graph.totalParams != c.total || graph.frozenParams != c.frozen
            || graph.trainableParams + graph.frozenParams != graph.totalParams)
            reportFailure(__FILE__, __LINE__,
                std::string(c.file) + ": total " + std::to_string(graph.totalParams) + " (expected "
                    + std::to_string(c.total) + "), frozen " + std::to_string(graph.frozenParams) + " (expected "
                    + std::to_string(c.frozen) + "), trainable " + std::to_string(graph.trainableParams));
    }
}

WS_TEST(dpoReferenceRunsForwardOnlyOnChosenAndRejected)
{
    if (!std::filesystem::is_directory(corpus()))
        WS_SKIP("Model Zoo 2.10.0 corpus not found");
    const ModelGraph graph = loadCorpusFile("nlp/dpo/configs/params_zephyr_7b_dpo.yaml");
    // A frozen reference has no optimizer state: AdamW keeps fp32 master weights and two moments (12 bytes) per
    // trainable parameter only.
    WS_CHECK_EQ(graph.optimizerStateBytes, 12 * mistral7b());
    WS_CHECK_EQ(graph.gradientParams, mistral7b());
    const std::int64_t sequence = 32768; // the file's max_position_embeddings: no max_sequence_length is given
    for (const Op& op : graph.ops) {
        WS_CHECK_EQ(op.tokensPerSample, 2 * sequence); // a chosen and a rejected completion per sample
        if (op.stack == Op::Stack::Reference) {
            WS_CHECK(op.frozen);
            WS_CHECK_EQ(op.bwdFlopsPerToken, 0.0);
        }
    }
}

WS_TEST(gemma2AlternatesFullAndWindowedAttention)
{
    if (!std::filesystem::is_directory(corpus()))
        WS_SKIP("Model Zoo 2.10.0 corpus not found");
    const ModelGraph graph = loadCorpusFile("nlp/gemma2/configs/params_gemma2_9b_msl8k.yaml");
    // 16 heads of 256 over an 8,192-token sequence; every other block (from the second) sees a 4,096-key window.
    // QK^T and PV: 4 * keys * width; softmax 5 and the soft cap 3 FLOPs per score.
    constexpr double width = 16 * 256;
    auto coreFlops = [&](double keys) { return 4.0 * keys * width + (5.0 + 3.0) * keys * 16; };
    int checked = 0;
    for (const Op& op : graph.ops) {
        if (op.kind != Op::Kind::AttentionCore)
            continue;
        const double keys = op.layer % 2 == 0 ? 8192.0 : 4096.0;
        WS_CHECK_NEAR(op.fwdFlopsPerToken, coreFlops(keys), 1e-12);
        ++checked;
    }
    WS_CHECK_EQ(checked, 42);
}
