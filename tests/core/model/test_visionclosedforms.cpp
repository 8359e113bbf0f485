// Vision and multimodal families against closed forms written from each architecture: ViT-B/16, DiT-XL/2, the CLIP
// tower and projector of LLaVA-1.5, DINOv2-L/16's trunks and heads; what `freeze` leaves trainable; which frozen
// parts run forward only; and the totals published for the models they describe.
#include "testing.h"

#include "corefixtures.h"

#include "core/model/modelloader.h"

#include <cmath>
#include <filesystem>
#include <string>

using namespace waferscope::core;
using waferscope::test::describe;
using waferscope::test::reportFailure;
using waferscope::test::sharedDir;

namespace {

using Count = std::int64_t;

// A pre-norm ViT block: q, k, v, o with biases, a 4h FFN with biases, two LayerNorms, optional layer scales.
constexpr Count vitBlock(Count h, Count f, bool layerScale = false)
{
    return 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h + (layerScale ? 2 * h : 0);
}
// Patch embedding (C x p x p -> h, bias optional), [CLS], learned positions for every token.
constexpr Count vitEmbedding(Count h, Count channels, Count patch, Count tokens, bool bias)
{
    return channels * patch * patch * h + (bias ? h : 0) + h + tokens * h;
}
// ViT-B/16 at 224: 196 patches + [CLS], 12 blocks, final LayerNorm, 1000-way classifier with bias.
constexpr Count vitB16()
{
    return vitEmbedding(768, 3, 16, 197, true) + 12 * vitBlock(768, 3072) + 2 * 768 + 768 * 1000 + 1000;
}
// DiT-XL/2 over 32 x 32 x 4 latents: patch embedding (bias), timestep MLP (256 -> h -> h), 1001 class rows (the
// extra one for guidance), 28 blocks of attention + FFN + six h x h modulation linears (with biases), the final
// modulation (two), and the transposed-convolution head (h -> 4 x 2 x 2, four biases). Sin-cos tables are
// constants, not parameters.
constexpr Count ditXl2()
{
    constexpr Count h = 1152, f = 4608;
    const Count block = 4 * h * h + 4 * h + 2 * h * f + f + h + 6 * (h * h + h);
    return 4 * 2 * 2 * h + h + (256 * h + h + h * h + h) + 1001 * h + 28 * block + 2 * (h * h + h) + h * 16 + 4;
}
// CLIP ViT-L/14 at 336: no patch bias, a pre-norm LayerNorm, 577 positions, 24 blocks, final LayerNorm.
constexpr Count clipTower()
{
    return vitEmbedding(1024, 3, 14, 577, false) + 2 * 1024 + 24 * vitBlock(1024, 4096) + 2 * 1024;
}
// LLaVA-1.5's projector: 1024 -> h -> h with biases.
constexpr Count projector(Count h)
{
    return 1024 * h + h + h * h + h;
}
// Vicuna-7B (Llama 2 7B): untied head, SwiGLU, RMSNorm.
constexpr Count vicuna7b()
{
    constexpr Count V = 32000, h = 4096, f = 11008;
    return 2 * V * h + 32 * (4 * h * h + 3 * h * f + 2 * h) + h;
}
// DINOv2-L/16 trunk at 224 (linear patchify with bias, mask token, layer scales) and a DINO head (1024 -> 2048 ->
// 2048 -> 256 with biases, then 65,536 weight-normed prototypes: direction and magnitude).
constexpr Count dinoTrunk()
{
    return vitEmbedding(1024, 3, 16, 197, true) + 1024 + 24 * vitBlock(1024, 4096, true) + 2 * 1024;
}
constexpr Count dinoHead()
{
    return 1024 * 2048 + 2048 + 2048 * 2048 + 2048 + 2048 * 256 + 256 + 65536 * 256 + 65536;
}

static_assert(vitB16() == 86'567'656); // timm / torchvision ViT-B/16
static_assert(ditXl2() == 674'816'260);
static_assert(clipTower() == 303'507'456);
static_assert(clipTower() + projector(4096) + vicuna7b() == 7'062'902'784);
static_assert(2 * (dinoTrunk() + dinoHead()) == 654'029'312);

std::filesystem::path corpus()
{
    return waferscope::test::modelZooRelease();
}

ModelGraph loadCorpusFile(const std::string& relative)
{
    return waferscope::test::loadModelZooRelease(relative);
}

} // namespace

WS_TEST(visionFamiliesMatchTheirClosedForms)
{
    if (!std::filesystem::is_directory(corpus()))
        WS_SKIP("Model Zoo 2.10.0 corpus not found");
    struct Case {
        const char* file;
        Count total;
        Count trainable;
    };
    const Case cases[] = {
        { "vision/vision_transformer/configs/params_vit_base_patch_16_imagenet_1k.yaml", vitB16(), vitB16() },
        { "vision/dit/configs/params_dit_xlarge_patchsize_2x2.yaml", ditXl2(), ditXl2() },
        // Phase 1 freezes the tower and the language model: only the projector trains.
        { "multimodal/llava/configs/params_llava_v1p5_pretrain_7b_phase1_MSL2K.yaml",
            clipTower() + projector(4096) + vicuna7b(), projector(4096) },
        // Phase 2 trains the language model too.
        { "multimodal/llava/configs/params_llava_v1p5_pretrain_7b_phase2_MSL2K.yaml",
            clipTower() + projector(4096) + vicuna7b(), projector(4096) + vicuna7b() },
        // The teacher trunk and head are frozen (updated by EMA): the student half trains.
        { "vision/dino/configs/params_dinov2_large_patch16_img224.yaml", 2 * (dinoTrunk() + dinoHead()),
            dinoTrunk() + dinoHead() },
    };
    for (const Case& c : cases) {
        const ModelGraph graph = loadCorpusFile(c.file);
        if (graph.totalParams != c.total || graph.trainableParams != c.trainable)
            reportFailure(__FILE__, __LINE__,
                std::string(c.file) + ": total " + std::to_string(graph.totalParams) + " (expected "
                    + std::to_string(c.total) + "), trainable " + std::to_string(graph.trainableParams) + " (expected "
                    + std::to_string(c.trainable) + ")");
    }
}

WS_TEST(frozenPartsRunForwardOnlyOrPassDeltas)
{
    if (!std::filesystem::is_directory(corpus()))
        WS_SKIP("Model Zoo 2.10.0 corpus not found");
    // LLaVA phase 1: the tower has nothing trainable before it (forward only); the language model comes after the
    // trainable projector, so its backward computes input deltas for it but no weight gradients (half a weighted
    // op's backward).
    const ModelGraph llava = loadCorpusFile("multimodal/llava/configs/params_llava_v1p5_pretrain_7b_phase1_MSL2K.yaml");
    int tower = 0, language = 0, projectorOps = 0;
    for (const Op& op : llava.ops) {
        if (op.name.rfind("image_model.", 0) == 0) {
            WS_CHECK(op.frozen);
            WS_CHECK_EQ(op.bwdFlopsPerToken, 0.0);
            ++tower;
        } else if (op.name.rfind("projector_image_model.", 0) == 0 && op.kind == Op::Kind::Linear) {
            WS_CHECK(!op.frozen);
            WS_CHECK_NEAR(op.bwdFlopsPerToken, 2.0 * op.fwdFlopsPerToken, 1e-12);
            ++projectorOps;
        } else if (op.name.rfind("text_model.layers.", 0) == 0 && op.kind == Op::Kind::Linear) {
            WS_CHECK(op.frozen);
            WS_CHECK_NEAR(op.bwdFlopsPerToken, op.fwdFlopsPerToken, 1e-12);
            ++language;
        }
    }
    WS_CHECK(tower > 0 && projectorOps == 2 && language == 32 * 7);
    // No optimizer state but the projector's: AdamW keeps 12 bytes per trainable parameter.
    WS_CHECK_EQ(llava.optimizerStateBytes, 12 * projector(4096));
    // The tower runs 23 of its 24 blocks (image_feature_select_layer_idx -2) on 577 tokens; the projector sees the
    // 576 patch tokens.
    int towerBlocks = 0;
    for (const Op& op : llava.ops)
        if (op.name.rfind("image_model.layers.", 0) == 0 && op.kind == Op::Kind::AttentionCore) {
            WS_CHECK_EQ(op.tokensPerSample, 577);
            ++towerBlocks;
        }
    WS_CHECK_EQ(towerBlocks, 23);
}

WS_TEST(dinoStudentSeesGlobalAndLocalCrops)
{
    if (!std::filesystem::is_directory(corpus()))
        WS_SKIP("Model Zoo 2.10.0 corpus not found");
    // Two 224-pixel global crops (197 tokens each) and eight 96-pixel local crops (36 patches + [CLS] = 37): the
    // student's blocks see 2 x 197 + 8 x 37 tokens per sample, the teacher's 2 x 197. Attention: each crop's tokens
    // attend its own tokens, so the core's FLOPs per token average (2 x 197^2 + 8 x 37^2) / 690 keys.
    const ModelGraph dino = loadCorpusFile("vision/dino/configs/params_dinov2_large_patch16_img224.yaml");
    const double studentKeys = (2.0 * 197 * 197 + 8.0 * 37 * 37) / 690.0;
    for (const Op& op : dino.ops) {
        if (op.kind != Op::Kind::AttentionCore)
            continue;
        const bool teacher = op.name.rfind("image_model_trunks.model.0.", 0) == 0;
        WS_CHECK_EQ(op.tokensPerSample, teacher ? 394 : 690);
        const double keys = teacher ? 197.0 : std::floor(studentKeys + 0.5);
        WS_CHECK_NEAR(op.fwdFlopsPerToken, 4.0 * keys * 1024 + 5.0 * keys * 16, 1e-12);
        WS_CHECK_EQ(op.bwdFlopsPerToken > 0.0, !teacher);
    }
}

WS_TEST(visionTotalsMatchPublishedFigures)
{
    if (!std::filesystem::is_directory(corpus()))
        WS_SKIP("Model Zoo 2.10.0 corpus not found");
    struct Published {
        const char* file;
        double params;
    };
    const Published published[] = {
        // Dosovitskiy et al., ViT (arXiv:2010.11929), Table 1: ViT-Base 86 M (86.6 M in timm and torchvision).
        { "vision/vision_transformer/configs/params_vit_base_patch_16_imagenet_1k.yaml", 86.6e6 },
        // Peebles and Xie, DiT (arXiv:2212.09748), Table 1: DiT-XL/2 675 M (its head predicts 8 channels with
        // learned sigma; the Model Zoo's predicts 4).
        { "vision/dit/configs/params_dit_xlarge_patchsize_2x2.yaml", 675e6 },
        // Liu et al., LLaVA-1.5 (arXiv:2310.03744): CLIP ViT-L/336 + MLP projector + Vicuna-7B, 7.06 B.
        { "multimodal/llava/configs/params_llava_v1p5_pretrain_7b_phase1_MSL2K.yaml", 7.06e9 },
        // The same with Vicuna-13B: 13.35 B.
        { "multimodal/llava/configs/params_llava_v1p5_pretrain_13b_phase1_MSL2K.yaml", 13.35e9 },
    };
    for (const Published& p : published) {
        const ModelGraph graph = loadCorpusFile(p.file);
        if (std::fabs(double(graph.totalParams) - p.params) > 0.01 * p.params)
            reportFailure(__FILE__, __LINE__, std::string(p.file) + ": total " + describe(graph.totalParams, p.params));
    }
}

WS_TEST(smallVisionModelsOfTheTestDataMatchTheirClosedForms)
{
    // tests/data/families: a ViT over 32-pixel images in 8-pixel patches (16 + [CLS] tokens, 2 blocks of width 64,
    // 10 classes), and a LLaVA-style model whose 3-block tower runs 2 blocks, with a 64 -> 128 -> 128 projector and
    // a 2-block Llama-style decoder of width 128 (vocabulary 1,000, SwiGLU 344, untied).
    Expected<ModelGraph> vit = loadModel(waferscope::test::dataDir() + "/families/vit_tiny.yaml");
    WS_REQUIRE(vit.hasValue());
    WS_CHECK_EQ(vit->totalParams, vitEmbedding(64, 3, 8, 17, true) + 2 * vitBlock(64, 256) + 2 * 64 + 64 * 10 + 10);
    Expected<ModelGraph> llava = loadModel(waferscope::test::dataDir() + "/families/llava_tiny.yaml");
    WS_REQUIRE(llava.hasValue());
    constexpr Count tower = vitEmbedding(64, 3, 8, 17, false) + 2 * 64 + 3 * vitBlock(64, 256) + 2 * 64;
    constexpr Count projection = 64 * 128 + 128 + 128 * 128 + 128;
    constexpr Count language = 2 * 1000 * 128 + 2 * (4 * 128 * 128 + 3 * 128 * 344 + 2 * 128) + 128;
    WS_CHECK_EQ(llava->totalParams, tower + projection + language);
    WS_CHECK_EQ(llava->trainableParams, projection);
}

WS_TEST(aSmallUnetMatchesItsClosedForm)
{
    // tests/data/families/unet: no model name, so the family comes from its folder. 3 x 3 convolutions without
    // biases, each with a group norm (weight and bias): encoder 3 -> 8 -> 8, 8 -> 16 -> 16, 16 -> 32 -> 32, bottleneck
    // 32 -> 64 -> 64; decoder blocks of a 2 x 2 transposed convolution (no bias) and two convolutions over the
    // upsampled channels joined with the skip; a 1 x 1 convolution with bias to the 5 classes.
    Expected<ModelGraph> unet
        = loadModel(waferscope::test::dataDir() + "/families/unet/configs/params_unet_small.yaml");
    WS_REQUIRE(unet.hasValue());
    WS_CHECK(unet->config.family == ModelConfig::Family::Unet);
    auto block = [](Count in, Count out) { return 9 * in * out + 2 * out + 9 * out * out + 2 * out; };
    const Count encoder = block(3, 8) + block(8, 16) + block(16, 32) + block(32, 64);
    const Count decoder
        = 64 * 32 * 4 + block(32 + 32, 32) + 32 * 16 * 4 + block(16 + 16, 16) + 16 * 8 * 4 + block(8 + 8, 8);
    WS_CHECK_EQ(unet->totalParams, encoder + decoder + 8 * 5 + 5);
    // The first convolution runs over every pixel: 64 x 64 rows of a 27 x 8 GEMM.
    WS_CHECK_EQ(unet->ops.front().tokensPerSample, 64 * 64);
    WS_CHECK_NEAR(unet->ops.front().fwdFlopsPerToken, 2.0 * 27 * 8, 1e-12);
}

WS_TEST(mptAndMultimodalSimpleMatchTheirClosedForms)
{
    // MPT: ALiBi (no position table), weight-only LayerNorms, no biases, tied head.
    Expected<ModelGraph> mpt = loadModel(waferscope::test::dataDir() + "/families/mpt_small.yaml");
    WS_REQUIRE(mpt.hasValue());
    WS_CHECK_EQ(mpt->totalParams, 1000 * 64 + 2 * (4 * 64 * 64 + 2 * 64 * 256 + 2 * 64) + 64);
    if (!std::filesystem::is_directory(corpus()))
        WS_SKIP("Model Zoo 2.10.0 corpus not found");
    // multimodal_simple phase 2 keeps the language model frozen (unlike LLaVA's phase 2): the projector trains.
    const ModelGraph simple
        = loadCorpusFile("multimodal/multimodal_simple/configs/params_mm_llava_llama2_7b_phase2.yaml");
    WS_CHECK_EQ(simple.totalParams, clipTower() + projector(4096) + vicuna7b());
    WS_CHECK_EQ(simple.trainableParams, projector(4096));
}
