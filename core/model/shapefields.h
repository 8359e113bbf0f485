#pragma once

// Internal to core/model: what the per-family shape readers share.

#include "core/model/modelsections.h"

#include <cstdint>
#include <string>

namespace waferscope::core {

inline constexpr std::int64_t kMaxHidden = 1 << 20;
inline constexpr std::int64_t kMaxLayers = 10'000;
inline constexpr std::int64_t kMaxVocab = 1 << 24;
inline constexpr std::int64_t kMaxFilter = 1 << 24;
inline constexpr std::int64_t kMaxPositions = 1 << 24;

// Keys that the Model Zoo defines and that do not change the graph's size or cost (dropout,
// initialisers, loss scaling, numerics, muP multipliers, embedding scales). They are read
// silently; any other key is a warning.
#define WS_NEUTRAL_MODEL_KEYS                                                                                          \
    "name", "dropout_rate", "attention_dropout_rate", "embedding_dropout_rate", "layer_norm_epsilon", "initializer",   \
        "embedding_initializer", "output_layer_initializer", "initializer_range", "loss_scaling", "loss_weight",       \
        "mixed_precision", "fp16_type", "attention_type", "attention_softmax_fp32", "boundary_casting", "tf_summary",  \
        "pos_scaling_factor", "pos_scaling_type", "pos_scaling_extra_args", "rope_theta", "rotary_dim",                \
        "use_position_embedding", "attention_module", "extra_attention_params", "label_smoothing",                     \
        "precision_opt_level", "attention_kernel", "use_bfloat16", "compute_eval_metrics", "scale_qk_dot_by_d",        \
        "attention_inner_dim", "head_dim", "fixed_sparse_attention", "norm_first", "attention_logit_alibi_slope",      \
        "attention_logits_alpha", "embeddings_scale", "output_logits_alpha", "output_logits_scale",                    \
        "mup_base_hidden_size", "mup_base_filter_size", "mup_base_d_model", "mup_base_d_ff",                           \
        "scale_qk_dot_by_layer_idx", "residual_dropout_rate", "use_bfloat16", "layer_norm_epsilon",                    \
        "attention_sliding_window_length", "position_embedding_type", "max_position_embeddings", "vocab_size",         \
        "hidden_size", "num_hidden_layers", "num_heads", "filter_size", "nonlinearity", "share_embedding_weights",     \
        "use_ffn_bias", "use_projection_bias_in_attention", "use_ffn_bias_in_attention", "norm_type", "vocab_file",    \
        "dropout"

#define WS_ACTIVATIONS                                                                                                 \
    "gelu", "gelu_new", "gelu_fast", "quick_gelu", "relu", "silu", "swish", "tanh", "swiglu", "geglu", "reglu", "liglu"

ModelConfig::Activation parseActivation(const std::string& name);
ModelConfig::Norm parseNorm(const YamlFields& fields, const YamlSection& model, ModelConfig::Norm fallback);

// A vocabulary size from the model section; else where TensorFlow-era files keep it (the input
// sections); else from a standard vocabulary file named there, with a located warning that names
// the assumption. An unknown file is an error that names the key to add.
std::int64_t readVocabularySize(const YamlFields& fields, const ParamsSections& sections, const std::string& sizeKey,
    std::initializer_list<const char*> fileKeys, ModelConfig& config);

// hidden_size, num_hidden_layers, num_heads, filter_size, max_position_embeddings, the vocabulary,
// and the attention width (num_heads x head size: hidden_size unless `attention_inner_dim` or a
// `head_dim` sets it, as Mistral NeMo does). `maxPositionsRequired` false: defaults to the sequence.
void readTransformerSizes(
    const YamlFields& fields, const ParamsSections& sections, ModelConfig& config, bool maxPositionsRequired = true);

// Per-family readers (decoderreader.cpp, encoderreader.cpp, seq2seqreader.cpp).
void readDecoder(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config);
void readEncoder(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config);
void readDpr(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config);
void readLayersApiDemo(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config);
void readSeq2Seq(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config);
void readVision(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config);
void readUnet(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config);

// A model made of parts (DPR, DPO, LLaVA, DINOv2) shows the shape of its main part, and carries
// the part's warnings as its own.
void adoptShape(ModelConfig& config, const ModelConfig& part);
void takeWarnings(ModelConfig& config, ModelConfig& part);

// The family a model name (or a Model Zoo folder name) stands for.
std::optional<ModelConfig::Family> familyFromName(const std::string& name);

} // namespace waferscope::core
