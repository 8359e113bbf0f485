#pragma once

// The prefill kernels of the cycle-level run, one file each (prefillgemmkernel,
// prefillnormkernel, prefillringattentionkernel, prefillembeddingkernel, prefillshiftkernel,
// prefillcombinekernel), all behind PrefillKernel. They run one after another on one g x g block
// of PEs, each taking its input where the kernel before left it (outputTiles()), and move tiles
// only along the block's shared ring edges (PrefillRings).
//
// A kernel is built in three passes, as the region kernels are (regionkernel.h):
//   1. construction from its spec, with the input tiles of the kernel before (or lanes: the
//      embedding's ids, a GEMM fed from outside the block);
//   2. load(): its SRAM (weights, buffers); needRings() / useRings(): the ring edges it shifts
//      tiles on, then their colors once the block's rings are placed;
//   3. program(): the PE programs of the whole prompt.
// Its closed form (core/kernels) is built from the same spec, for its inputs in place at cycle 0
// (lanes: fed as the kernel tests feed them).
//
// Adding a prefill kernel: a spec and a class here implementing PrefillKernel in a file of its
// own, its closed form in core/kernels from the same spec, and its place in PrefillLayer
// (core/cyclelevel/prefilllayer.cpp) or the prefill build (waferprefill.cpp).

#include "core/cyclelevel/kernels/prefillgrid.h"
#include "core/cyclelevel/kernels/prefillrings.h"
#include "core/cyclelevel/kernels/regionkernel.h"
#include "core/kernels/kernelcost.h"

#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

class PrefillKernel {
public:
    virtual ~PrefillKernel() = default;
    virtual const std::string& name() const = 0;
    // Forward for the prefill kernels; a training kernel says which backward pass it runs.
    virtual Pass pass() const { return Pass::Forward; }
    // What streams in from the wafer's edge during its run instead of living in SRAM: nothing
    // for a kernel whose weights are loaded; a weight-streaming GEMM's weights.
    virtual std::vector<WeightTensor> streamed() const { return {}; }
    // The ring edges it shifts tiles on (none: a kernel that moves nothing), then their colors.
    virtual void needRings(PrefillRings& rings) const = 0;
    virtual void useRings(const PrefillRings& rings) = 0;
    virtual void load(fabric::StaticColorFabric& fabric) = 0;
    // The whole prompt. `inputColor`: the color its input lanes come on, for a kernel fed in lanes
    // (the embedding; a GEMM fed from outside the block); -1 for one whose input is in place.
    virtual void program(ProgramWriter& writer, int inputColor) const = 0;
    // Where its outputs are after a run.
    virtual const std::vector<PrefillOutputTile>& outputTiles() const = 0;
    // Its closed form, from the same spec: cycles, busy PE-cycles and link wavelets for its inputs
    // in place at cycle 0 (lanes: each block row's sent along the row from the PE before its first
    // column, a wavelet a cycle from cycle 0).
    virtual KernelCost closedForm() const = 0;
};

} // namespace waferscope::core::cyclelevel
