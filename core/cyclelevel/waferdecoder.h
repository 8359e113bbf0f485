#pragma once

#include "core/common/expected.h"
#include "core/compiler/plan.h"
#include "core/cyclelevel/decoder.h"
#include "core/cyclelevel/weights.h"
#include "core/fabric/fabric.h"
#include "core/hardware/systemspec.h"
#include "core/kernels/kernelspec.h"
#include "core/model/modelgraph.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// One region's share of a token measured on the fabric.
struct RegionCycles {
    std::string op; // the plan's op name ("layers.3.attn.core")
    RegionKernelKind kernel = RegionKernelKind::Gemv;
    std::uint64_t measuredCycles = 0; // from the previous region's finish to its own
    std::uint64_t finishCycle = 0; // cycles into the token at which its last PE finished
    std::uint64_t linkWavelets = 0; // wavelets its routers sent over links during the token
    double busyFraction = 0.0; // engine-busy cycles / (PEs x measuredCycles)
    std::int64_t pes = 0;
    std::vector<int> expertsChosen; // experts: the ones the router chose for the token, in order
};

struct TokenOnFabric {
    std::int64_t position = 0;
    std::int32_t input = 0; // the token fed at this position
    std::int32_t output = -1; // the argmax the fabric computed
    std::uint64_t cycles = 0;
    std::vector<float> logits; // read back from the LM head's PEs
    std::vector<RegionCycles> regions;
    double wallS = 0.0;
};

struct FabricDecodeOptions {
    int threads = 1;
    int queueDepth = 4;
    std::uint64_t seed = 1;
    int capacity = 32; // positions the KV cache holds
    std::uint64_t maxCyclesPerToken = 50'000'000; // beyond it a token is a livelock (an internal error)
    // Called every few thousand cycles with the fabric and the token's position; false cancels.
    std::function<bool(const fabric::Fabric&, std::int64_t position)> observer;
    std::uint64_t observeEveryCycles = 2048; // cycles of a token between observer calls
    // > 0: the first this many prompt positions may run at once on the prefill kernels
    // (prefill()), built on a block of their own below the plan's regions when they can run it.
    int prefillTokens = 0;
};

// A prompt's positions run at once on the prefill kernels.
struct PrefillOnFabric {
    std::int64_t positions = 0;
    std::uint64_t cycles = 0; // from the ids leaving the host until every cache holds them
    // The closed forms of its kernels one after another, each block's cache move after it
    // (WaferDecoder's prefill kernels, core/kernels/prefill*.h).
    double modelCycles = 0.0;
    int block = 0; // g: the g x g block of PEs the prompt ran on
    double wallS = 0.0;
};

// A decoder language model's single-wafer inference plan built on the cycle-level fabric: every
// region's kernel (regionkernels.h), the streams between them with the colors the route book
// gives, and the weights (seeded, DecoderWeights) in the PEs' SRAM. Then tokens run one at a time:
// the token id enters the embedding (from the host, or from the LM head's argmax), flows through
// every region on the fabric, and leaves as logits and the next token id.
//
// Thread: owned by one thread; a token runs on the fabric's threads inside decode().
class WaferDecoder {
public:
    // CannotMap when the plan is not a single-wafer decoder plan the kernels can run (names the
    // region and the reason), or a PE's SRAM would overflow.
    static Expected<std::unique_ptr<WaferDecoder>> build(const ModelGraph& graph, const ExecutionPlan& plan,
        const SystemSpec& system, const FabricDecodeOptions& options);
    ~WaferDecoder();

    const DecoderShape& shape() const;
    const DecoderWeights& weights() const;
    const fabric::Fabric& fabric() const;
    // The region (plan index) of each kernel, for drawing.
    std::size_t peakSramBytesPerPe() const;
    int colorsAtBusiestRouter() const;
    std::size_t hostBytes() const; // simulation state

    // Runs one token at `position` (positions in order from 0). `fromHost`: the id comes in
    // from off-wafer I/O (a prompt token); otherwise the token starts as the LM head sends its
    // previous argmax back to the embedding, and `token` is only what the caller expects it to be.
    Expected<TokenOnFabric> decode(std::int64_t position, std::int32_t token, bool fromHost);

    // Whether the build placed the prefill kernels (FabricDecodeOptions::prefillTokens), and if
    // not, why not (empty when they were not asked for).
    bool hasPrefill() const;
    const std::string& prefillRefusal() const;
    // Runs positions 0 .. prompt.size() - 1 (prefillTokens of them) at once: the embedding and
    // every block on the prefill block, each block's keys and values then sent to its attention
    // region's cache. Decode then goes on from position prompt.size().
    Expected<PrefillOnFabric> prefill(std::span<const std::int32_t> prompt);
    // What block `layer`'s cache holds for query head `head` at `position`: its key or its value.
    std::vector<float> cached(int layer, int head, std::int64_t position, bool value) const;

    // A host-memory estimate of building this plan, before building it.
    static std::int64_t estimateHostBytes(const ExecutionPlan& plan, const SystemSpec& system);

private:
    WaferDecoder();
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace waferscope::core::cyclelevel
