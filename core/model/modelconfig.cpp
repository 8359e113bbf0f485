#include "core/model/modelconfig.h"
#include "core/model/modelgraph.h"

#include <iterator>

namespace waferscope::core {

const char* toString(ModelConfig::Family family)
{
    switch (family) {
    case ModelConfig::Family::Gpt2:
        return "gpt2";
    case ModelConfig::Family::Gpt3:
        return "gpt3";
    case ModelConfig::Family::GptJ:
        return "gptj";
    case ModelConfig::Family::Falcon:
        return "falcon";
    case ModelConfig::Family::Bloom:
        return "bloom";
    case ModelConfig::Family::Btlm:
        return "btlm";
    case ModelConfig::Family::Jais:
        return "jais";
    case ModelConfig::Family::StarCoder:
        return "starcoder";
    case ModelConfig::Family::SantaCoder:
        return "santacoder";
    case ModelConfig::Family::Gemma2:
        return "gemma2";
    case ModelConfig::Family::Mpt:
        return "mpt";
    case ModelConfig::Family::Llama:
        return "llama";
    case ModelConfig::Family::Mixtral:
        return "mixtral";
    case ModelConfig::Family::Bert:
        return "bert";
    case ModelConfig::Family::BertClassifier:
        return "bert/classifier";
    case ModelConfig::Family::BertTokenClassifier:
        return "bert/token_classifier";
    case ModelConfig::Family::BertSummarization:
        return "bert/extractive_summarization";
    case ModelConfig::Family::BertQuestionAnswering:
        return "bert/qa";
    case ModelConfig::Family::Esm2:
        return "esm2";
    case ModelConfig::Family::Dpr:
        return "dpr";
    case ModelConfig::Family::Dpo:
        return "dpo";
    case ModelConfig::Family::T5:
        return "t5";
    case ModelConfig::Family::Transformer:
        return "transformer";
    case ModelConfig::Family::LayersApiDemo:
        return "layers_api_demo";
    case ModelConfig::Family::FcMnist:
        return "fc_mnist";
    case ModelConfig::Family::VisionTransformer:
        return "vision_transformer";
    case ModelConfig::Family::Dino:
        return "dino";
    case ModelConfig::Family::Dit:
        return "dit";
    case ModelConfig::Family::Llava:
        return "llava";
    case ModelConfig::Family::MultimodalSimple:
        return "multimodal_simple";
    case ModelConfig::Family::Unet:
        return "unet";
    case ModelConfig::Family::Linformer:
        return "linformer";
    }
    return "unknown";
}

bool isDecoderLanguageModel(ModelConfig::Family family)
{
    using F = ModelConfig::Family;
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
    switch (schema) {
    case ModelConfig::Schema::Legacy:
        return "legacy";
    case ModelConfig::Schema::Trainer:
        return "trainer";
    case ModelConfig::Schema::TfWeightStreaming:
        return "tf_weight_streaming";
    }
    return "unknown";
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

} // namespace waferscope::core
