#include "core/compiler/checkpointing.h"

#include "core/common/units.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace waferscope::core::compiler {

namespace {

std::int64_t largestMicroBatch(const StreamingProfile& profile, std::int64_t keptPerSample)
{
    std::int64_t best = std::numeric_limits<std::int64_t>::max();
    for (std::int64_t working : profile.workingBytes)
        best = std::min(best, profile.sramBytes / std::max<std::int64_t>(1, keptPerSample + working));
    return profile.workingBytes.empty() ? 0 : best;
}

// One step of `choice` at its micro-batch: every micro-batch streams the weights for forward and
// backward (and for the recomputed stages once more) while the wafer computes the forward, the
// backward with each block's forward again, and any extra recompute; MemoryX checkpoints share
// the system's port with the weights.
double estimateStepS(const StreamingProfile& profile, const CheckpointChoice& choice)
{
    const double micro = double(choice.microBatch);
    const double microBatches = std::ceil(double(profile.samplesPerSystem) / micro);
    double recomputedWeights = 0.0;
    for (std::size_t s = 0; s < choice.recomputedStage.size(); ++s)
        recomputedWeights += choice.recomputedStage[s] ? profile.stageWeightBytes[s] : 0.0;
    const double weightS = (2.0 * profile.weightBytesPerPass + recomputedWeights) / profile.weightStreamBytesPerS;
    const double checkpointS = profile.checkpointBytesPerS > 0.0
        ? 2.0 * double(choice.memoryxBytesPerSample) * micro / profile.checkpointBytesPerS
        : 0.0;
    const double computeS
        = (2.0 * profile.forwardFlopsPerSample + profile.backwardFlopsPerSample + choice.recomputeFlopsPerSample)
        * micro / profile.peakFlopsPerS;
    return microBatches * std::max(weightS + checkpointS, computeS);
}

void settle(const StreamingProfile& profile, CheckpointChoice& choice)
{
    choice.maxMicroBatch = largestMicroBatch(profile, choice.keptBytesPerSample);
    if (choice.maxMicroBatch < 1)
        return;
    choice.microBatch = profile.requestedMicroBatch > 0 ? std::min(profile.requestedMicroBatch, choice.maxMicroBatch)
                                                        : std::min(choice.maxMicroBatch, profile.samplesPerSystem);
    choice.microBatch = std::max<std::int64_t>(1, choice.microBatch);
    choice.estimatedStepS = estimateStepS(profile, choice);
}

CheckpointChoice allBlocks(const StreamingProfile& profile)
{
    CheckpointChoice choice;
    for (std::int64_t bytes : profile.stageOutputBytes)
        choice.keptBytesPerSample += bytes;
    choice.recomputedStage.assign(profile.stageOutputBytes.size(), false);
    settle(profile, choice);
    return choice;
}

// Segments of k stages (the last one may be shorter): a segment's last output stays; in
// backward its other stages run forward again from the previous segment's output and are held
// while the segment's backward runs.
CheckpointChoice everyK(const StreamingProfile& profile, int k)
{
    CheckpointChoice choice;
    choice.strategy = CheckpointStrategy::EveryK;
    choice.every = k;
    const std::size_t stages = profile.stageOutputBytes.size();
    choice.recomputedStage.assign(stages, false);
    std::int64_t ends = 0;
    std::int64_t largestSegment = 0;
    std::int64_t segment = 0;
    for (std::size_t s = 0; s < stages; ++s) {
        const bool end = (s + 1) % std::size_t(k) == 0 || s + 1 == stages;
        if (end) {
            ends += profile.stageOutputBytes[s];
            largestSegment = std::max(largestSegment, segment);
            segment = 0;
        } else {
            segment += profile.stageOutputBytes[s];
            choice.recomputedStage[s] = true;
            choice.recomputeFlopsPerSample += profile.stageForwardFlopsPerSample[s];
        }
    }
    choice.keptBytesPerSample = ends + largestSegment;
    settle(profile, choice);
    return choice;
}

// Every stage's output goes to MemoryX as it is made and comes back before the next stage's
// backward; the wafer holds a stage's input and output.
CheckpointChoice inMemoryX(const StreamingProfile& profile)
{
    CheckpointChoice choice;
    choice.strategy = CheckpointStrategy::MemoryX;
    const std::size_t stages = profile.stageOutputBytes.size();
    choice.recomputedStage.assign(stages, false);
    std::int64_t largest = 0;
    for (std::size_t s = 0; s < stages; ++s) {
        largest = std::max(largest, profile.stageOutputBytes[s]);
        if (s + 1 < stages)
            choice.memoryxBytesPerSample += profile.stageOutputBytes[s];
    }
    choice.keptBytesPerSample = 2 * largest;
    if (profile.checkpointBytesPerS > 0.0)
        settle(profile, choice);
    return choice;
}

std::string describe(const CheckpointChoice& choice)
{
    std::ostringstream text;
    text.precision(3);
    if (choice.strategy == CheckpointStrategy::EveryK)
        text << "a checkpoint every " << choice.every << " blocks (" << formatBytes(double(choice.keptBytesPerSample))
             << " kept per sample, their forward run again in backward)";
    else
        text << "block outputs in MemoryX (" << formatBytes(double(choice.memoryxBytesPerSample))
             << " per sample written and read back, " << formatBytes(double(choice.keptBytesPerSample))
             << " on the wafer)";
    if (choice.maxMicroBatch >= 1)
        text << ": micro-batch " << choice.microBatch << ", about " << choice.estimatedStepS << " s per step";
    else
        text << ": does not fit";
    return text.str();
}

} // namespace

CheckpointChoice chooseCheckpointing(const StreamingProfile& profile)
{
    CheckpointChoice all = allBlocks(profile);
    if (all.maxMicroBatch >= 1)
        return all;
    // The k that keeps the fewest bytes (about the square root of the stage count) and those
    // around it; the fastest that fits wins.
    const int stages = int(profile.stageOutputBytes.size());
    CheckpointChoice bestK;
    bool kFits = false;
    for (int k = 2; k <= std::max(2, stages); ++k) {
        CheckpointChoice candidate = everyK(profile, k);
        if (candidate.maxMicroBatch >= 1) {
            if (!kFits || candidate.estimatedStepS < bestK.estimatedStepS)
                bestK = std::move(candidate);
            kFits = true;
        } else if (!kFits && (bestK.every == 1 || candidate.keptBytesPerSample < bestK.keptBytesPerSample)) {
            bestK = std::move(candidate);
        }
    }
    CheckpointChoice memoryx = inMemoryX(profile);
    std::int64_t largestWorking = 0;
    for (std::int64_t working : profile.workingBytes)
        largestWorking = std::max(largestWorking, working);
    const std::string blockOutputs = formatBytes(double(all.keptBytesPerSample)) + ", next to the largest op's "
        + formatBytes(double(largestWorking)) + " working set";
    const std::string options = describe(bestK) + "; " + describe(memoryx);
    const bool xFits = memoryx.maxMicroBatch >= 1;
    if (!kFits && !xFits) {
        CheckpointChoice none = memoryx;
        none.maxMicroBatch = 0;
        none.why = "the block outputs of one sample (" + blockOutputs + ") do not fit in "
            + formatBytes(double(profile.sramBytes)) + " of SRAM, and neither does any checkpointing: " + options
            + "; the largest op alone needs " + formatBytes(double(largestWorking)) + " for one sample";
        return none;
    }
    CheckpointChoice chosen
        = !xFits || (kFits && bestK.estimatedStepS <= memoryx.estimatedStepS) ? std::move(bestK) : std::move(memoryx);
    chosen.why = "the block outputs of one sample (" + blockOutputs + ") do not fit in "
        + formatBytes(double(profile.sramBytes)) + " of SRAM: " + options + "; chosen: " + toString(chosen.strategy)
        + (kFits && xFits ? ", the faster" : ", the one that fits");
    return chosen;
}

} // namespace waferscope::core::compiler
