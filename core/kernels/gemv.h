#pragma once

// A GEMV region kernel's spec: where it sits, the lanes it takes and gives, its weights' source
// and what it does at its exits. The cycle-level GemvKernel (core/cyclelevel/kernels/gemvkernel.h)
// is built from it, and its closed form, costDecodeGemv below, reads it.

#include "core/kernels/geometry.h"
#include "core/kernels/kernelcost.h"
#include "core/kernels/kernelspec.h"
#include "core/kernels/weightsource.h"

#include <string>

namespace waferscope::core {

// y = W x on a region, the input arriving in lanes along rows, the output left in lanes along
// rows: the chain-reduced GEMV of the SDK examples with a turn at the input. The region's GEMV
// columns (u >= firstColumn) are dealt to input lanes in turn: column t takes lane t mod L and,
// when several columns take one lane, an equal part of it; a region with fewer columns C than
// lanes gives column t the lanes t, t + C, t + 2C, ..., each turned onto a color of its own. A
// lane's stream passes along its row to its columns; each such PE multiplies its part and turns
// the stream onto its column, down which every PE with output rows multiplies it too. PE
// (u, row) holds W[the row's outputs, the column's inputs]; each output row's partial sums are
// reduced along the row to its last column, which applies the epilogue and sends the lane on:
// along a chain through every column (the SDK examples'), or, `treeReduced`, along a binary tree
// rooted at the last column (MeshGEMV-style, fabric::reductionTreeNode): a color a level, and a PE
// adds each level's vector whole but the last, whose sums it forwards as they are added.
struct GemvSpec {
    std::string name;
    Frame frame;
    int firstColumn = 0; // 1 when a NormColumn holds u = 0
    Lanes input; // on rows of the frame
    Lanes output; // output blocks: rows of the frame (distinct), ranges of W's rows (may repeat)
    WeightTensor weight = WeightTensor::absent(Storage::Fp16); // rows = outputs, cols = inputs
    WeightTensor bias = WeightTensor::absent(Storage::Fp16);
    Epilogue epilogue = Epilogue::Round;
    Activation activation = Activation::Gelu;
    double ropeTheta = 10000.0;
    // MoE: experts and the router's top k; `expert` >= 0 dispatches: the GEMV multiplies only when
    // the routing weights it receives first choose that expert, and drops its input otherwise.
    int experts = 0;
    int topK = 0;
    int expert = -1;
    bool lastExpert = false; // Combine: ends the chain
    bool treeReduced = false;
};

// The closed form of a GemvSpec's GEMV: GEMV column t (region column firstColumn + t) takes input
// lane t mod inputs (a part of it when several columns share the lane), turns it down its column,
// and each output row's partial sums are reduced along the row (or its tree) to its last column.
// Only the spec's geometry, epilogue and tree matter here; its weights are the cycle-level run's.
// A dispatched expert's piece is timed with the others by costDecodeExperts (experts.h); here it
// is timed as a GEMV that is not dispatched.
KernelCost costDecodeGemv(const GemvSpec& spec, int simdWidth);

} // namespace waferscope::core
