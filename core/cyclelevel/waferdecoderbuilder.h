#pragma once

// Private to WaferDecoder: the builder of a plan's decoder on the fabric, in named phases. Its
// kernel phases are waferdecoderbuilder.cpp; the streams between regions, waferdecoderstreams.cpp;
// WaferDecoder::build (waferdecoder.cpp) runs them in order.
#include "core/compiler/decodelayout.h"
#include "core/cyclelevel/waferdecoderimpl.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

inline Diagnostic refuse(const std::string& what, const std::string& why)
{
    return { what, 0, 0, why, Diagnostic::Kind::CannotMap };
}

// Builds a plan's decoder on the fabric in named phases: the strips of the plan's typed regions,
// the kernels (embedding, each block's attention and its feed-forward or experts, the head), their
// own streams, the streams between regions, the token ids' streams, and the SRAM.
class WaferDecoder::Impl::Builder {
public:
    Builder(Impl& impl, const ModelGraph& graph, const ExecutionPlan& plan, const FabricDecodeOptions& options)
        : m_impl(impl)
        , m_graph(graph)
        , m_s(impl.shape)
        , m_weights(impl.weights)
        , m_context(impl.context)
        , m_usable(plan.usable)
        , m_options(options)
        , m_decoded(graph, plan)
        , m_absent(WeightTensor::absent(impl.shape.storage))
        , m_ffnParts(impl.shape.gated() ? 3 : 2)
    {
    }

    std::optional<Diagnostic> findRegions();
    std::optional<Diagnostic> checkBlock(int layer) const;
    void buildEmbedding();
    void buildAttention(int layer, Layer& block);
    void buildFeedForward(int layer, Layer& block);
    void buildExperts(int layer, Layer& block);
    void buildHead();
    void routeKernels();
    void connectBlock(std::size_t layer);
    void connectHead();
    void connectTokenIds();
    void loadSram();
    // The prefill kernels (FabricDecodeOptions::prefillTokens): why they cannot be placed, or
    // nothing (then m_impl.prefill holds them).
    std::optional<std::string> buildPrefill(std::int64_t sramPerPeBytes);

private:
    // A block's strip: its regions by role (the parts of every block, in flow order).
    struct Strip {
        int y = 0;
        int h = 0;
        bool westward = false;
        std::map<OpRole, const Region*> regions;
        const Region& operator[](OpRole role) const { return *regions.at(role); }
    };
    // One GEMV of a block: where, on what lanes, which tensors, what it does at its exits.
    struct GemvPart {
        std::string name;
        Frame frame;
        int firstColumn = 0;
        Lanes input;
        Lanes output;
        Tensor weight = Tensor::Wq;
        Tensor bias = Tensor::Bq;
        bool hasBias = false;
        Epilogue epilogue = Epilogue::Round;
        int expert = -1; // MoE: the expert it dispatches for
        bool treeReduced = false;
        bool measured = true; // a region of its own in the token's measurements
    };

    std::vector<OpRole> blockParts() const;
    Frame frameOf(const Region& region, int stripY, int stripH, bool westward) const
    {
        return Frame { region.rect.x - m_usable.x, stripY - m_usable.y, region.rect.w, stripH, westward };
    }
    Frame frameIn(const Strip& strip, OpRole role) const
    {
        return frameOf(strip[role], strip.y, strip.h, strip.westward);
    }
    std::unique_ptr<GemvKernel> gemv(int layer, GemvPart part);
    std::unique_ptr<GemvKernel> gemvOf(int layer, OpRole role, Tensor weight, Tensor bias, bool hasBias);
    // The plan's GEMV of a region (decodeGemvPlan), its lanes on the rows from y0.
    DecodeGemvPlan gemvPlan(const Region& region) const;
    std::unique_ptr<NormColumn> norm(const std::string& name, const Frame& frame, const Lanes& normLanes, Tensor weight,
        Tensor bias, int layer) const;
    Lanes ffnLanes(int layer, int y0) const;
    Lanes headLanes(int y0, bool kv) const;
    std::vector<Frame> expertFrames(const Frame& frame) const;
    int routingWeights(const Layer& block, const Strip& strip, const std::string& name);
    // Lane streams from a sender per lane along its row, `forward`, to that lane's taps.
    int place(
        const std::string& name, int forward, const std::vector<Pe>& senders, const std::vector<std::vector<Pe>>& taps);
    std::vector<int> rowsOfLanes(int y) const
    {
        std::vector<int> rows;
        for (const Lane& lane : m_impl.hiddenLanes(y - m_usable.y))
            rows.push_back(lane.y);
        return rows;
    }
    std::vector<std::uint32_t> laneSizes() const
    {
        std::vector<std::uint32_t> sizes;
        for (const Lane& lane : m_impl.hiddenLanes(0))
            sizes.push_back(lane.size());
        return sizes;
    }

    Impl& m_impl;
    const ModelGraph& m_graph;
    const DecoderShape& m_s;
    const DecoderWeights& m_weights;
    const KernelContext& m_context;
    Rect m_usable;
    const FabricDecodeOptions& m_options;
    DecodeRegionIndex m_decoded;
    WeightTensor m_absent;
    int m_ffnParts; // an MoE expert's projections: up, gate and down, or up and down
    const Region* m_embedding = nullptr;
    const Region* m_head = nullptr;
    std::vector<Strip> m_strips; // a block's each

    std::optional<std::string> placePrefillRoutes(Prefill& built);
};

} // namespace waferscope::core::cyclelevel
