#pragma once

// Internal to core/model: blocks the family builders share (graphbuilder.cpp defines them).

#include "core/model/graphassembler.h"

#include <string>

namespace waferscope::core {

// Self- or cross-attention: q, k, v projections, the core over `keysPerToken` keys, the output
// projection. `innerDim` is q's width (heads x head size), `kvDim` that of k and v. The ops take
// the attention roles (OpRole::Query, ...), or with `cross` the cross-attention ones.
void attentionBlock(GraphAssembler& graph, const ModelConfig& c, const std::string& name, const std::string& tensors,
    std::int64_t keysPerToken, std::int64_t innerDim, std::int64_t kvDim, bool cross = false);

// The FFN (gated or not), or the router and experts of a mixture of experts.
void feedForward(GraphAssembler& graph, const ModelConfig& c, const std::string& name, const std::string& tensors);

// The Model Zoo's GPT-2 and GPT-J backbones over `tokens` per sample, names prefixed by `prefix`.
void appendDecoder(
    GraphAssembler& graph, const ModelConfig& c, const std::string& prefix, Op::Stack stack, std::int64_t tokens);

// The stack of a part's ops, named as the part (DPR's question_encoder, DINOv2's teacher). A part
// whose role names no stack is a reader's bug: std::bad_optional_access, an internal error.
Op::Stack stackOfPart(const ModelConfig::Part& part);

// The vision and multimodal families (visionbuilder.cpp), and U-Net (unetbuilder.cpp).
void buildVisionGraph(GraphAssembler& graph, const ModelConfig& config);
void buildUnet(GraphAssembler& graph, const ModelConfig& config);

} // namespace waferscope::core
