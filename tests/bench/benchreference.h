#pragma once

#include <nlohmann/json.hpp>

// The reference decoder of the cycle-level run (core/cyclelevel): seconds to generate 2 tokens
// after a 16-token prompt, seeded weights, for GPT-2 small (`reference_generate_s_gpt2_small`)
// and, unless `quick` or without the Model Zoo corpus beside the source tree, Llama 3.2 1B
// (`reference_generate_s_llama3p2_1b`).
bool referenceFigures(nlohmann::ordered_json& figures, bool quick);
