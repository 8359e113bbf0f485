#pragma once

#include "core/common/expected.h"
#include "core/cyclelevel/cyclerun.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// `run --mode train --level cycle`: training steps with weight streaming executed on the
// cycle-level fabric. The micro-batch's tokens stay resident on R x C PEs (PE column c holds
// tokens [c T, (c + 1) T), every PE row a band of each op's outputs); every layer's weights
// stream in from MemoryX through SwarmX at the system's I/O pace for the forward
// (streamgemmkernel.h) and again for the backward delta (the same kernel on W^T), and its weight
// gradient (streamgradientkernel.h) streams out at that pace, with each layer's activation and its
// derivative on the bands
// (localstepkernel.h), the column all-gathers that make one op's output bands the next op's
// resident operand (columngatherkernel.h) and the softmax cross-entropy on the gathered logits.
// Each kernel runs on the fabric after the one before, loaded with the values that kernel left
// on the same PEs; the gradients go to MemoryX, where the config's optimizer updates FP32 master
// weights (trainnet.h). A reference step in plain loops (trainreference.h) checks the loss and
// the gradients, and trains a second copy of the weights alongside for the losses it reaches.
struct TrainRunOptions {
    std::int64_t microBatch = 0; // samples a step; 0: 16 (a classifier), 1 (a decoder)
    std::int64_t sequence = 0; // a decoder's tokens a sample; 0: the config's
    int steps = 1;
    int layers = 0; // > 0: keep that many hidden layers and the output layer, or a decoder's blocks
    double learningRate = 0.0; // > 0: a constant rate instead of the config's schedule
    std::uint64_t seed = 1;
    int threads = 1;
    std::uint64_t maxCyclesPerKernel = 200'000'000;
    // Between kernels: phase "train", the kernel's index in the run, the kernels in all, the
    // fabric it ran on. False cancels.
    CycleProgress progress;
};

// One kernel's run in the step: the `regions[]` of the JSON.
struct TrainKernelRecord {
    std::string op; // the layer: "fc0"; "loss"
    std::string kernel; // gemm_stream, gradient_stream, activation, gather, loss
    Pass pass = Pass::Forward;
    std::uint64_t measuredCycles = 0;
    double modelCycles = 0.0; // its closed form, at the edge's pace for a stream
    std::uint64_t linkWavelets = 0;
    double modelLinkWavelets = 0.0;
    double busyFraction = 0.0; // engine cycles over the frame's PEs x cycles
    double modelBusyFraction = 0.0;
    std::int64_t bytesIn = 0; // from off the wafer: the stream's wavelets, 4 bytes each
    std::int64_t bytesOut = 0; // to off the wafer: the gradient's, 4 bytes a kept weight
    std::uint64_t fmacs = 0;
    double wallS = 0.0; // the simulation's: its fabric built, loaded and run
};

struct TrainRunResult {
    std::string model;
    std::string system;
    std::string execution = "weight_streaming";
    std::int64_t microBatch = 0;
    std::int64_t tokens = 0; // a step's
    int layers = 0;
    int rows = 0; // R
    int columns = 0; // C
    int tokensPerPe = 0; // T
    // The edge: the system's I/O in wavelets a cycle, the pace of each row's stream (at most
    // paceWavelets every paceCycles) and the cycles before its first wavelet.
    double ioWaveletsPerCycle = 0.0;
    std::uint32_t paceWavelets = 1;
    std::uint32_t paceCycles = 1;
    std::uint64_t edgeStartCycles = 0;
    double loss = 0.0; // the first step's, on the fabric
    double referenceLoss = 0.0;
    double maxAbsGradError = 0.0; // the first step's gradients against the reference's
    double worstBoundShare = 0.0; // the largest |error| / bound over the weights
    bool gradsMatchReference = false;
    bool lossMatchesReference = false; // the first step's, to the bit
    std::uint64_t cyclesPerStep = 0; // the last step's kernels, one after another
    double modelCyclesPerStep = 0.0;
    double clockHz = 0.0;
    double samplesPerS = 0.0; // at the clock
    std::vector<double> losses; // a step each
    std::vector<double> referenceLosses;
    std::vector<double> learningRates;
    std::vector<TrainKernelRecord> regions; // the last step's kernels
    std::size_t peakSramBytesPerPe = 0;
    double buildS = 0.0;
    double fabricS = 0.0; // all steps' kernels
    double referenceS = 0.0;
    std::vector<std::string> notes;
};

// CannotMap for a graph it cannot train yet or a layout the wafer cannot hold; BadInput for
// options out of range.
Expected<TrainRunResult> runTrainCycleLevel(
    const ModelGraph& graph, const SystemSpec& system, const TrainRunOptions& options);

std::string trainRunToJson(const TrainRunResult& result);

} // namespace waferscope::core::cyclelevel
