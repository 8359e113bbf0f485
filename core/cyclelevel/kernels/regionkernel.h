#pragma once

// The region kernels of the cycle-level run, one file each (normcolumn, gemvkernel,
// attentionkernel, embeddingkernel), all behind RegionKernel. A kernel is built from its spec
// (core/kernels: where it sits, the lanes it takes and gives, and where its weights come from),
// the spec the model-level closed forms read too.
//
// A kernel is built in three passes, so that streams
// between regions can be given colors before any program names one:
//   1. construction: the geometry (which PEs take which lane of each input, which send the
//      outputs) and taps()/exits();
//   2. route(): its internal streams get colors; load(): its SRAM (weights, buffers, cache);
//   3. program(): the PE programs of one token, with the colors of its input and output streams.
// Internal streams: a kernel's reductions and multicasts inside its rectangle.

// Adding a kernel: a spec (core/kernels/), a class here implementing RegionKernel in a file of
// its own, its closed form from the same spec, a RegionKernelKind, and the phase of
// WaferDecoder::Impl::Builder (core/cyclelevel/waferdecoder.cpp) that places it; docs/ARCHITECTURE.md.

#include "core/cyclelevel/kernels/programwriter.h"
#include "core/cyclelevel/kernels/routebook.h"
#include "core/fabric/half.h"
#include "core/kernels/geometry.h"
#include "core/kernels/kernelcost.h"
#include "core/kernels/kernelspec.h"
#include "core/kernels/weightsource.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// Numeric settings every kernel needs.
struct KernelContext {
    Storage storage = Storage::Fp16;
    int simdWidth = 8;
    std::uint8_t flags() const { return storage == Storage::Bf16 ? 1 : 0; }
    fabric::Format16 format() const
    {
        return storage == Storage::Bf16 ? fabric::Format16::Bf16 : fabric::Format16::Fp16;
    }
};

// The colors of the streams a kernel's program reads and writes (-1: none).
struct KernelColors {
    int in = -1; // the input lanes (attention: the queries; the embedding: the token id)
    int side = -1; // a side input at the exits (the residual; a gate's up)
    int out = -1; // the output lanes
    int keys = -1; // attention
    int values = -1;
    int weights = -1; // MoE: the routing weights, multicast to every PE of the experts
    int combineIn = -1; // Combine: the running sum from the previous expert
    int combineOut = -1; // ... to the next
};

class RegionKernel {
public:
    virtual ~RegionKernel() = default;
    virtual const std::string& name() const = 0;
    // Forward for every kernel today; a training kernel says which backward pass it runs.
    virtual Pass pass() const { return Pass::Forward; }
    // 1. Geometry. The PEs that take input lane `lane` from its stream, in flow order.
    virtual std::vector<Pe> taps(std::size_t lane) const = 0;
    // The PE that sends output lane `lane` on.
    virtual Pe exit(std::size_t lane) const = 0;
    // 2. Its internal streams get colors.
    virtual void route(RouteBook& book) = 0;
    // 2. What it holds in SRAM: its weights (drawn from their WeightTensor source), buffers, cache.
    virtual void load(fabric::StaticColorFabric& fabric) = 0;
    // What streams in from the wafer's edge during a step instead of living in SRAM: nothing for a
    // forward kernel, whose weights are loaded; a training pass's weights.
    virtual std::vector<WeightTensor> streamed() const { return {}; }
    // 3. The PE programs of one token at `position`, reading and writing the streams of `colors`.
    virtual void program(ProgramWriter& writer, const KernelColors& colors, std::int64_t position) const = 0;
    // Where output lane `lane` is after a run: f32 offset at exit(lane).
    virtual std::uint32_t resultOffset(std::size_t lane) const = 0;
    // Its closed form for a token at `position`, from the same spec (core/kernels: the fabric's
    // timing rules followed through this program): cycles, busy PE-cycles and link wavelets for
    // the inputs fed as the kernel tests feed them (each lane along its row from the PE before
    // the first column, a wavelet a cycle from cycle 0).
    virtual KernelCost closedForm(std::int64_t position) const = 0;
};

} // namespace waferscope::core::cyclelevel
