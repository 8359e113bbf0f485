#pragma once

// Private to core/compiler: how weight streaming keeps what the backward pass needs when the
// block outputs of a micro-batch do not all fit in SRAM.

#include "core/compiler/plan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core::compiler {

// What a weight-streaming step costs per sample and what links it has, for comparing strategies.
struct StreamingProfile {
    std::vector<std::int64_t> stageOutputBytes; // per stage, per sample: the stage's last output
    std::vector<std::int64_t> workingBytes; // per unit, per sample: its inputs and outputs while it runs
    std::int64_t sramBytes = 0; // usable SRAM of the wafer
    std::int64_t samplesPerSystem = 1; // of one training step
    std::int64_t requestedMicroBatch = 0; // the config's micro_batch_size; 0 = the compiler's choice
    double forwardFlopsPerSample = 0.0; // every op
    double backwardFlopsPerSample = 0.0;
    std::vector<double> stageForwardFlopsPerSample; // per stage
    double weightBytesPerPass = 0.0; // every streamed weight once
    std::vector<double> stageWeightBytes; // per stage, once
    double peakFlopsPerS = 0.0; // one wafer
    double weightStreamBytesPerS = 0.0; // the narrowest of MemoryX, SwarmX and the CS-X port
    double checkpointBytesPerS = 0.0; // one system's share of the path to MemoryX
};

struct CheckpointChoice {
    CheckpointStrategy strategy = CheckpointStrategy::AllBlocks;
    int every = 1; // every_k: a checkpoint at the end of every k-th stage
    std::int64_t maxMicroBatch = 0; // 0: no strategy fits
    std::int64_t microBatch = 0;
    std::int64_t keptBytesPerSample = 0; // block outputs resident in SRAM per sample
    std::vector<bool> recomputedStage; // every_k: stages run forward once more in backward
    double recomputeFlopsPerSample = 0.0; // that extra forward
    std::int64_t memoryxBytesPerSample = 0; // memoryx: written once and read back once
    double estimatedStepS = 0.0;
    std::string why; // for the plan's notes
};

// Chooses, among the strategies that fit, the one whose estimated step is shortest: every
// block output in SRAM; checkpoints every k stages with the rest recomputed; or every block
// output written to MemoryX and read back for backward. With none fitting, maxMicroBatch is 0
// and `why` says which limit binds.
CheckpointChoice chooseCheckpointing(const StreamingProfile& profile);

} // namespace waferscope::core::compiler
