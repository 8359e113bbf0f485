#pragma once

// Private to WaferDecoder (waferdecoder.cpp builds a plan on the fabric, waferdecodertoken.cpp
// runs its tokens): what a built decoder holds.
#include "core/cyclelevel/kernels/attentionkernel.h"
#include "core/cyclelevel/kernels/embeddingkernel.h"
#include "core/cyclelevel/kernels/gemvkernel.h"
#include "core/cyclelevel/kernels/normcolumn.h"
#include "core/cyclelevel/kernels/prefillembeddingkernel.h"
#include "core/cyclelevel/prefilllayer.h"
#include "core/cyclelevel/waferdecoder.h"
#include "core/fabric/staticcolorfabric.h"

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

struct WaferDecoder::Impl {
    DecoderShape shape;
    DecoderWeights weights { DecoderShape {}, 0 };
    KernelContext context;
    std::unique_ptr<fabric::StaticColorFabric> fabric;
    std::unique_ptr<RouteBook> routes;
    DecodeLayout layout; // the plan's (core/compiler/decodelayout.h): the lanes the engine times too
    int lanes = 0; // L: lanes of the hidden vector between blocks (layout.hiddenLanesOn(0))
    Lanes hiddenLanes(int y0) const { return evenLanes(y0, lanes, std::uint32_t(shape.hidden)); }

    // A handoff between strips: lane i leaves its sender, turns down at relay[i] onto the next
    // strip's row and is spread along it.
    struct Turn {
        std::vector<Pe> relays;
        std::vector<std::uint32_t> sizes;
        int down = -1; // C1: sender to relay
        int along = -1; // C2: relay to the taps
    };
    struct Ffn {
        std::unique_ptr<GemvKernel> up, gate, down;
        int u = -1; // up to gate (or down)
        int h = -1; // gate to down
        int combine = -1; // MoE: this expert's weighted output to the next expert's down
    };
    struct Layer {
        std::unique_ptr<NormColumn> norm1, norm3;
        std::unique_ptr<GemvKernel> q, k, v, out;
        std::unique_ptr<AttentionKernel> attention;
        std::unique_ptr<GemvKernel> router; // MoE
        std::vector<Ffn> ffn; // the feed-forward, or each expert's
        Turn in; // x into the block
        int a = -1, qs = -1, ks = -1, vs = -1, o = -1, x2 = -1, b = -1, weights = -1;
        const GemvKernel& last() const { return *ffn.back().down; } // whose exits leave the block
        // Every kernel of the block in flow order (the order their own streams take colors in).
        template <typename Visit>
        void forEachKernel(Visit&& visit)
        {
            visit(*norm1);
            visit(*q);
            visit(*k);
            visit(*v);
            visit(*attention);
            visit(*out);
            visit(*norm3);
            if (router)
                visit(*router);
            for (Ffn& expert : ffn) {
                visit(*expert.up);
                if (expert.gate)
                    visit(*expert.gate);
                visit(*expert.down);
            }
        }
    };
    std::unique_ptr<EmbeddingKernel> embedding;
    std::vector<Layer> layers;
    Turn intoHead;
    std::unique_ptr<NormColumn> finalNorm;
    std::unique_ptr<GemvKernel> lmHead;
    int f = -1; // final norm to LM head
    int hostColor = -1; // prompt ids from off-wafer I/O into the embedding's root
    int feedbackColor = -1; // the argmax back to the root
    std::function<bool(const fabric::Fabric&, std::int64_t)> observer;
    std::uint64_t observeEveryCycles = 2048;
    bool validated = false;
    std::uint64_t cycleLimit = 50'000'000; // far beyond any token: a livelock
    std::string describeStuck() const;

    struct Measured {
        std::string op;
        RegionKernelKind kernel = RegionKernelKind::Gemv;
        Frame frame;
        const GemvKernel* router = nullptr; // experts: the router whose weights choose them
    };
    std::vector<Measured> measured;

    // The prompt's prefill: the embedding and every block on a g x g block below the plan's
    // regions, the ids' lanes from the host, and per block a chain along each of the block's rows
    // into a tree to the block's attention region that carries every position's key and value.
    struct Prefill {
        Frame frame;
        std::int64_t tokens = 0;
        std::unique_ptr<PrefillEmbeddingKernel> embedding;
        std::vector<std::unique_ptr<PrefillLayer>> layers;
        int idsColor = -1;
        int chain[2] = { -1, -1 };
        std::vector<int> delivery; // per block
    };
    std::unique_ptr<Prefill> prefill;
    std::string prefillRefusal;
    void programPrefill(ProgramWriter& writer) const;
    void programCacheMove(ProgramWriter& writer, std::size_t layer) const;
    double prefillModelCycles() const;
    // Runs the programs written until they finish: the cycles, or the stall or cancel.
    Expected<std::uint64_t> runPrograms(std::int64_t position);

    Turn turn(const std::string& name, const std::vector<Pe>& senders, const std::vector<int>& rows,
        const std::vector<std::vector<Pe>>& taps, const std::vector<std::uint32_t>& sizes, bool straightDown,
        int flowDirection);
    void programToken(ProgramWriter& writer, std::int64_t position, bool fromHost);
    class Builder; // waferdecoder.cpp: builds a plan's decoder in named phases
};

} // namespace waferscope::core::cyclelevel
