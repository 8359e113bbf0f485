#pragma once

#include <nlohmann/json.hpp>

// A decode token executed on the cycle-level fabric (core/cyclelevel): seconds of one token
// (the first decode step after a one-token prompt, the plan already built) and the process's
// peak resident memory while building and running it, on every core (`..._decode_token_threads`;
// the bands of rows follow the token's active rows). GPT-2 small also reports
// `fabric_gpt2_small_decode_token_s_1_thread` and `..._s_N_threads` for N cores.
// GPT-2 small on a full CS-2 (`fabric_gpt2_small_decode_token_s`, `..._peak_rss_mb`) and Llama
// 3.2 1B on a full CS-3 (`fabric_llama3p2_1b_decode_token_s`, `..._peak_rss_mb`), both from
// samples/, with their cycles per token; and a weight-streaming training step of fc_mnist with 16
// samples on a full CS-2 (`fabric_fc_mnist_train_step_s`, `..._cycles`, `..._peak_rss_mb`). `quick`
// runs a small Llama on a full CS-2 instead.
// A decoder's training step at cycle level: the tiny GPT-2 of the tests whole, and with `heavy`
// GPT-2 small's first block (`fabric_gpt2_small_block_train_s`, at its defaults: hours on 2 cores,
// so only `waferscope-bench --train` runs it); --quick: the tiny one's single block of 16 tokens.
bool trainFigures(nlohmann::ordered_json& figures, bool quick, bool heavy);

bool cycleLevelFigures(nlohmann::ordered_json& figures, bool quick);
