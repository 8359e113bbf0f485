#include "core/model/modelconfig.h"
#include "core/model/modelgraph.h"

#include <iterator>

namespace waferscope::core {

namespace {

using F = ModelConfig::Family;
// The names of the families are what `inspect --json` prints as "family" (and a nameless model's
// name): the Model Zoo's model names, a BERT head as bert/<head>.
constexpr EnumName<F> kFamilies[] = { { F::Gpt2, "gpt2" }, { F::Gpt3, "gpt3" }, { F::GptJ, "gptj" },
    { F::Falcon, "falcon" }, { F::Bloom, "bloom" }, { F::Btlm, "btlm" }, { F::Jais, "jais" },
    { F::StarCoder, "starcoder" }, { F::SantaCoder, "santacoder" }, { F::Gemma2, "gemma2" }, { F::Mpt, "mpt" },
    { F::Llama, "llama" }, { F::Mixtral, "mixtral" }, { F::Bert, "bert" }, { F::BertClassifier, "bert/classifier" },
    { F::BertTokenClassifier, "bert/token_classifier" }, { F::BertSummarization, "bert/extractive_summarization" },
    { F::BertQuestionAnswering, "bert/qa" }, { F::Esm2, "esm2" }, { F::Dpr, "dpr" }, { F::Dpo, "dpo" }, { F::T5, "t5" },
    { F::Transformer, "transformer" }, { F::LayersApiDemo, "layers_api_demo" }, { F::FcMnist, "fc_mnist" },
    { F::VisionTransformer, "vision_transformer" }, { F::Dino, "dino" }, { F::Dit, "dit" }, { F::Llava, "llava" },
    { F::MultimodalSimple, "multimodal_simple" }, { F::Unet, "unet" }, { F::Linformer, "linformer" } };
static_assert(inDeclarationOrder(kFamilies) && namesUnique(kFamilies));
static_assert(std::size(kFamilies) == std::size_t(F::Linformer) + 1);

constexpr EnumName<ModelConfig::Schema> kSchemas[] = { { ModelConfig::Schema::Legacy, "legacy" },
    { ModelConfig::Schema::Trainer, "trainer" }, { ModelConfig::Schema::TfWeightStreaming, "tf_weight_streaming" } };
static_assert(inDeclarationOrder(kSchemas) && namesUnique(kSchemas));

} // namespace

template <>
std::span<const EnumName<ModelConfig::Family>> nameTable<ModelConfig::Family>()
{
    return kFamilies;
}

template <>
std::span<const EnumName<ModelConfig::Schema>> nameTable<ModelConfig::Schema>()
{
    return kSchemas;
}

const char* toString(ModelConfig::Family family)
{
    return nameOf(family);
}

bool isDecoderLanguageModel(ModelConfig::Family family)
{
    switch (family) {
    case F::Gpt2:
    case F::Gpt3:
    case F::GptJ:
    case F::Falcon:
    case F::Bloom:
    case F::Btlm:
    case F::Jais:
    case F::StarCoder:
    case F::SantaCoder:
    case F::Gemma2:
    case F::Mpt:
    case F::Llama:
    case F::Mixtral:
        return true;
    default:
        return false;
    }
}

const char* toString(ModelConfig::Schema schema)
{
    return nameOf(schema);
}

namespace {

constexpr EnumName<OpRole> kOpRoles[] = { { OpRole::Other, "other" }, { OpRole::Embedding, "embedding" },
    { OpRole::PositionEmbedding, "position_embedding" }, { OpRole::EmbeddingNorm, "embedding_norm" },
    { OpRole::AttentionNorm, "attention_norm" }, { OpRole::Query, "q" }, { OpRole::Key, "k" }, { OpRole::Value, "v" },
    { OpRole::QueryNorm, "q_norm" }, { OpRole::KeyNorm, "k_norm" }, { OpRole::AttentionCore, "attention" },
    { OpRole::AttentionOut, "attention_out" }, { OpRole::CrossQuery, "cross_q" }, { OpRole::CrossKey, "cross_k" },
    { OpRole::CrossValue, "cross_v" }, { OpRole::CrossAttentionCore, "cross_attention" },
    { OpRole::CrossAttentionOut, "cross_attention_out" }, { OpRole::PostAttentionNorm, "post_attention_norm" },
    { OpRole::FfnNorm, "ffn_norm" }, { OpRole::Up, "ffn_up" }, { OpRole::Gate, "ffn_gate" },
    { OpRole::Activation, "ffn_activation" }, { OpRole::Down, "ffn_down" }, { OpRole::Router, "router" },
    { OpRole::Experts, "experts" }, { OpRole::SharedExperts, "shared_experts" },
    { OpRole::PostFfnNorm, "post_ffn_norm" }, { OpRole::FinalNorm, "final_norm" }, { OpRole::LmHead, "lm_head" } };

constexpr bool rolesInOrder()
{
    for (std::size_t i = 0; i < std::size(kOpRoles); ++i)
        if (std::size_t(kOpRoles[i].value) != i)
            return false;
    return std::size(kOpRoles) == std::size_t(OpRole::LmHead) + 1;
}
static_assert(rolesInOrder());

} // namespace

template <>
std::span<const EnumName<OpRole>> nameTable<OpRole>()
{
    return kOpRoles;
}

const char* toString(OpRole role)
{
    return kOpRoles[std::size_t(role)].name;
}

const char* toString(Op::Kind kind)
{
    return nameOf(kind);
}

namespace {

constexpr EnumName<Op::Kind> kOpKinds[] = { { Op::Kind::Embedding, "embedding" },
    { Op::Kind::PositionEmbedding, "position_embedding" }, { Op::Kind::Norm, "norm" }, { Op::Kind::Linear, "linear" },
    { Op::Kind::AttentionCore, "attention_core" }, { Op::Kind::Activation, "activation" },
    { Op::Kind::MoeRouter, "moe_router" }, { Op::Kind::Experts, "experts" }, { Op::Kind::LmHead, "lm_head" },
    { Op::Kind::Pooler, "pooler" }, { Op::Kind::Loss, "loss" }, { Op::Kind::PatchEmbedding, "patch_embedding" },
    { Op::Kind::Convolution, "convolution" }, { Op::Kind::Pooling, "pooling" },
    { Op::Kind::Upsampling, "upsampling" } };
static_assert(inDeclarationOrder(kOpKinds) && namesUnique(kOpKinds));

} // namespace

template <>
std::span<const EnumName<Op::Kind>> nameTable<Op::Kind>()
{
    return kOpKinds;
}

namespace {

// A part's stack is named as the reader names the part (ModelConfig::Part::role).
constexpr EnumName<Op::Stack> kOpStacks[] = { { Op::Stack::None, "" }, { Op::Stack::Decoder, "decoder" },
    { Op::Stack::Encoder, "encoder" }, { Op::Stack::Reference, "reference" }, { Op::Stack::Projector, "projector" },
    { Op::Stack::QuestionEncoder, "question_encoder" }, { Op::Stack::ContextEncoder, "context_encoder" },
    { Op::Stack::Teacher, "teacher" }, { Op::Stack::Student, "student" }, { Op::Stack::ImageModel, "image_model" } };
static_assert(inDeclarationOrder(kOpStacks) && namesUnique(kOpStacks));
static_assert(std::size(kOpStacks) == std::size_t(Op::Stack::ImageModel) + 1);

} // namespace

template <>
std::span<const EnumName<Op::Stack>> nameTable<Op::Stack>()
{
    return kOpStacks;
}

const char* toString(Op::Stack stack)
{
    return nameOf(stack);
}

} // namespace waferscope::core
