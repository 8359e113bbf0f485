#include "core/cyclelevel/waferdecoder.h"

#include "core/compiler/decodelayout.h"

#include "core/common/units.h"
#include "core/cyclelevel/waferdecoderimpl.h"
#include "core/fabric/staticcolorfabric.h"

#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <map>
#include <optional>

namespace waferscope::core::cyclelevel {

using namespace fabric;

namespace {

Diagnostic refuse(const std::string& what, const std::string& why)
{
    return { what, 0, 0, why, Diagnostic::Kind::CannotMap };
}

// Lane streams from a sender per lane along its row, in `direction`, to that lane's taps.
StreamTree rowStreams(
    const std::string& name, const std::vector<Pe>& senders, const std::vector<std::vector<Pe>>& taps, int direction)
{
    StreamTree tree(name);
    for (std::size_t lane = 0; lane < senders.size(); ++lane) {
        const Pe from = senders[lane];
        int farthest = 0;
        std::vector<int> at;
        for (const Pe& tap : taps[lane]) {
            if (tap.y != from.y)
                throw std::logic_error(name + ": a tap off its lane's row");
            const int distance = direction == East ? tap.x - from.x : from.x - tap.x;
            if (distance <= 0)
                throw std::logic_error(name + ": a tap behind its sender");
            at.push_back(distance);
            farthest = std::max(farthest, distance);
        }
        if (farthest == 0)
            continue;
        std::vector<bool> deliver(std::size_t(farthest) + 1, false);
        for (const int distance : at)
            deliver[std::size_t(distance)] = true;
        tree.run(from.x, from.y, direction, farthest + 1, Fabric::kRampPort, deliver);
    }
    return tree;
}

// Appends a run from the relay (x, y) along its row to the taps on both sides.
void spreadAlongRow(StreamTree& tree, int x, int y, const std::vector<Pe>& taps)
{
    int west = 0;
    int east = 0;
    for (const Pe& tap : taps) {
        if (tap.x == x || tap.y != y)
            throw std::logic_error(tree.name() + ": a relay on a tap or a tap off its row");
        (tap.x < x ? west : east) = std::max(tap.x < x ? west : east, std::abs(tap.x - x));
    }
    std::uint8_t tx = 0;
    if (west)
        tx |= directionBit(West);
    if (east)
        tx |= directionBit(East);
    tree.hop(x, y, Fabric::kRampPort, tx);
    for (const auto& [direction, length] : { std::pair { West, west }, std::pair { East, east } }) {
        if (!length)
            continue;
        std::vector<bool> deliver(std::size_t(length), false);
        for (const Pe& tap : taps)
            if ((direction == West) == (tap.x < x))
                deliver[std::size_t(std::abs(tap.x - x) - 1)] = true;
        tree.run(direction == West ? x - 1 : x + 1, y, direction, length, opposite(direction), deliver);
    }
}

} // namespace

WaferDecoder::Impl::Turn WaferDecoder::Impl::turn(const std::string& name, const std::vector<Pe>& senders,
    const std::vector<int>& rows, const std::vector<std::vector<Pe>>& taps, const std::vector<std::uint32_t>& sizes,
    bool straightDown, int flowDirection)
{
    Turn result;
    result.sizes = sizes;
    const std::size_t count = senders.size();
    std::vector<int> columns(count);
    // A relay must not sit in a column where its row's stream is taken.
    std::vector<bool> bad(std::size_t(fabric->width()), false);
    for (const std::vector<Pe>& laneTaps : taps)
        for (const Pe& tap : laneTaps)
            bad[std::size_t(tap.x)] = true;
    if (straightDown) {
        // Each lane goes down from its sender's column, or the nearest good one before the
        // next sender's on either side (all senders are on one row).
        std::vector<bool> sender(std::size_t(fabric->width()), false);
        for (const Pe& pe : senders)
            sender[std::size_t(pe.x)] = true;
        for (std::size_t i = 0; i < count; ++i) {
            columns[i] = -1;
            bool westOpen = true;
            bool eastOpen = true;
            for (int d = 0; columns[i] < 0 && (westOpen || eastOpen); ++d) {
                for (const int x : { senders[i].x - d, senders[i].x + d }) {
                    const bool west = x < senders[i].x;
                    if (x < 0 || x >= fabric->width() || (d > 0 && sender[std::size_t(x)])) {
                        (west ? westOpen : eastOpen) = false;
                        continue;
                    }
                    if ((west ? westOpen : eastOpen || d == 0) && !bad[std::size_t(x)] && columns[i] < 0)
                        columns[i] = x;
                }
            }
            if (columns[i] < 0)
                throw std::logic_error(name + ": no column to bring lane " + std::to_string(i) + " down");
        }
    } else {
        // Lane i runs along its row to a column of its own, down to its new row, and is relayed
        // onto another color along that row. Going away from the senders, the upper lanes turn
        // further out, so that no lane's descent crosses a lower lane's row run.
        const int xe = senders.front().x;
        for (const Pe& sender : senders)
            if (sender.x != xe)
                throw std::logic_error(name + ": turning lanes must leave from one column");
        const auto candidates = [&](int direction) {
            std::vector<int> found;
            for (int x = xe + (direction == East ? 1 : -1); x >= 0 && x < fabric->width() && found.size() < count;
                 x += direction == East ? 1 : -1)
                if (!bad[std::size_t(x)])
                    found.push_back(x);
            return found;
        };
        std::vector<int> found = candidates(flowDirection);
        if (found.size() < count)
            found = candidates(opposite(flowDirection));
        if (found.size() < count)
            throw std::logic_error(name + ": no room to turn the lanes");
        for (std::size_t i = 0; i < count; ++i)
            columns[i] = found[count - 1 - i];
    }
    StreamTree down(name + " turn");
    StreamTree along(name + " row");
    for (std::size_t i = 0; i < count; ++i) {
        const Pe from = senders[i];
        const int x = columns[i];
        int rx = Fabric::kRampPort;
        if (x != from.x) {
            const int direction = x > from.x ? East : West;
            const int length = std::abs(x - from.x) + 1; // its last PE turns south, below
            down.run(from.x, from.y, direction, length, Fabric::kRampPort, {});
            rx = opposite(direction);
        }
        down.hop(x, from.y, rx, directionBit(South));
        std::vector<bool> deliver(std::size_t(rows[i] - from.y), false);
        deliver.back() = true;
        down.run(x, from.y + 1, South, rows[i] - from.y, North, deliver);
        spreadAlongRow(along, x, rows[i], taps[i]);
        result.relays.push_back({ x, rows[i] });
    }
    result.down = routes->place(down);
    result.along = routes->place(along);
    return result;
}

std::int64_t WaferDecoder::estimateHostBytes(const ExecutionPlan& plan, const SystemSpec& system)
{
    // Router queues and state, the PE's task table and program, then the weights and cache the
    // plan puts in SRAM (held as the simulated SRAM).
    const std::int64_t pes = plan.usable.area();
    const std::int64_t perPe = std::int64_t(system.wafer.routableColors) * (4 * 8 + 2 + 2) + 64 + 200
        + std::int64_t(system.wafer.routableColors) * std::int64_t(sizeof(DataTask)) + 40 * 8;
    std::int64_t sram = 0;
    for (const Region& region : plan.regions)
        sram += region.weightBytes + region.kvCacheBytes / 16;
    return pes * perPe + sram;
}

// Builds a plan's decoder on the fabric in named phases: the strips of the plan's typed regions,
// the kernels (embedding, each block's attention and its feed-forward or experts, the head), their
// own streams, the streams between regions, the token ids' streams, and the SRAM.
class WaferDecoder::Impl::Builder {
public:
    Builder(Impl& impl, const ModelGraph& graph, const ExecutionPlan& plan, const FabricDecodeOptions& options)
        : m_impl(impl)
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
    std::unique_ptr<GemvKernel> gemvOf(int layer, OpRole role, int firstColumn, Lanes input, Lanes output,
        Tensor weight, Tensor bias, bool hasBias, Epilogue epilogue);
    std::unique_ptr<NormColumn> norm(const std::string& name, const Frame& frame, const Lanes& normLanes, Tensor weight,
        Tensor bias, int layer) const;
    Lanes ffnLanes(const Strip& strip, int y0) const;
    Lanes headLanes(int y0, bool kv) const;
    std::vector<Frame> expertFrames(const Frame& frame) const;
    int routingWeights(const Layer& block, const Strip& strip, const std::string& name);
    int place(
        const std::string& name, int forward, const std::vector<Pe>& senders, const std::vector<std::vector<Pe>>& taps)
    {
        return m_impl.routes->place(rowStreams(name, senders, taps, forward));
    }
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
};

namespace {

std::vector<Pe> exitsOf(const auto& kernel, std::size_t count)
{
    std::vector<Pe> pes;
    for (std::size_t i = 0; i < count; ++i)
        pes.push_back(kernel.exit(i));
    return pes;
}

std::vector<std::vector<Pe>> tapsOf(const auto& kernel, std::size_t count)
{
    std::vector<std::vector<Pe>> taps;
    for (std::size_t i = 0; i < count; ++i)
        taps.push_back(kernel.taps(i));
    return taps;
}

std::vector<std::vector<Pe>> exitTaps(const auto& kernel, std::size_t count)
{
    std::vector<std::vector<Pe>> taps;
    for (std::size_t i = 0; i < count; ++i)
        taps.push_back({ kernel.exit(i) });
    return taps;
}

std::vector<std::vector<Pe>> concat(std::vector<std::vector<Pe>> into, const std::vector<std::vector<Pe>>& more)
{
    for (std::size_t i = 0; i < into.size(); ++i)
        into[i].insert(into[i].end(), more[i].begin(), more[i].end());
    return into;
}

} // namespace

std::vector<OpRole> WaferDecoder::Impl::Builder::blockParts() const
{
    std::vector<OpRole> parts { OpRole::Query, OpRole::Key, OpRole::Value, OpRole::AttentionCore,
        OpRole::AttentionOut };
    if (m_s.experts > 0)
        parts.insert(parts.end(), { OpRole::Router, OpRole::Experts });
    else if (m_s.gated())
        parts.insert(parts.end(), { OpRole::Up, OpRole::Gate, OpRole::Down });
    else
        parts.insert(parts.end(), { OpRole::Up, OpRole::Down });
    return parts;
}

// The plan's embedding and head, and each block's strip: its parts' regions side by side.
std::optional<Diagnostic> WaferDecoder::Impl::Builder::findRegions()
{
    m_embedding = m_decoded.find(OpRole::Embedding);
    m_head = m_decoded.find(OpRole::LmHead);
    if (!m_embedding || !m_head)
        return refuse("--level", "the plan has no embedding or LM head region");
    const std::vector<OpRole> parts = blockParts();
    for (int layer = 0; layer < int(m_s.layers); ++layer) {
        Strip strip;
        for (const OpRole part : parts) {
            const Region* region = m_decoded.find(part, layer);
            if (!region)
                return refuse("--level",
                    "the plan has no " + std::string(toString(part)) + " region in block " + std::to_string(layer));
            strip.regions[part] = region;
        }
        strip.y = strip[parts.front()].rect.y;
        for (const auto& [role, region] : strip.regions) {
            if (region->rect.y != strip.y)
                return refuse("--level", "the regions of block " + std::to_string(layer) + " do not share a strip");
            strip.h = std::max(strip.h, region->rect.h);
        }
        strip.westward = strip[parts.front()].rect.x > strip[parts.back()].rect.x;
        m_strips.push_back(strip);
    }
    return std::nullopt;
}

std::optional<Diagnostic> WaferDecoder::Impl::Builder::checkBlock(int layer) const
{
    const Strip& strip = m_strips[std::size_t(layer)];
    const auto tooNarrow = [&](const Region& region, int columns, const std::string& why) -> std::optional<Diagnostic> {
        if (region.rect.w >= columns)
            return std::nullopt;
        return refuse("--level",
            "region " + region.opName + " is " + std::to_string(region.rect.w)
                + " columns wide; its cycle-level kernel needs " + std::to_string(columns) + " (" + why + ")");
    };
    if (auto error = tooNarrow(strip[OpRole::AttentionOut], int(m_s.heads), "a column per head"))
        return error;
    for (const OpRole normed : { OpRole::Query, m_s.experts > 0 ? OpRole::Router : OpRole::Up })
        if (auto error = tooNarrow(strip[normed], 2, "its norm's column and a GEMV column"))
            return error;
    if (strip.h < m_s.heads)
        return refuse("--level",
            "block " + std::to_string(layer) + " has " + std::to_string(strip.h)
                + " rows; its attention needs one per head (" + std::to_string(m_s.heads) + ")");
    return std::nullopt;
}

// The feed-forward's hidden values: a lane per row, as many as the down projection has columns.
Lanes WaferDecoder::Impl::Builder::ffnLanes(const Strip& strip, int y0) const
{
    const Region& last = strip[m_s.experts > 0 ? OpRole::Experts : OpRole::Down];
    const int down = m_s.experts > 0 ? last.rect.w / int(m_s.experts * m_ffnParts) : last.rect.w;
    return evenLanes(y0, int(std::min<std::int64_t>({ strip.h, kTurnColors * down, m_s.ffn })), std::uint32_t(m_s.ffn));
}

// A row per query head (kv: its kv head's dimensions on that row).
Lanes WaferDecoder::Impl::Builder::headLanes(int y0, bool kv) const
{
    Lanes result;
    const std::int64_t group = m_s.heads / m_s.kvHeads;
    for (int h = 0; h < int(m_s.heads); ++h) {
        const auto head = std::uint32_t(kv ? h / group : h);
        result.push_back({ y0 + h, std::uint32_t(head * m_s.headDim), std::uint32_t((head + 1) * m_s.headDim) });
    }
    return result;
}

// The columns of an MoE strip's experts region: the experts side by side, each its up, gate and
// down projections (a third each; halves without a gate), in the strip's flow order.
std::vector<Frame> WaferDecoder::Impl::Builder::expertFrames(const Frame& frame) const
{
    std::vector<Frame> frames;
    const int pieces = int(m_s.experts) * m_ffnParts;
    for (int i = 0; i < pieces; ++i) {
        const auto begin = int(blockBegin(frame.w, pieces, i));
        const auto end = int(blockBegin(frame.w, pieces, i + 1));
        Frame sub = frame;
        sub.w = end - begin;
        sub.x0 = frame.westward ? frame.x0 + frame.w - end : frame.x0 + begin;
        frames.push_back(sub);
    }
    return frames;
}

std::unique_ptr<NormColumn> WaferDecoder::Impl::Builder::norm(
    const std::string& name, const Frame& frame, const Lanes& normLanes, Tensor weight, Tensor bias, int layer) const
{
    const bool withBias = m_s.norm == DecoderShape::Norm::LayerNorm && m_s.normBias;
    return std::make_unique<NormColumn>(name, frame, normLanes, m_s.norm, m_s.normEpsilon,
        m_weights.tensor(weight, layer, 0), withBias ? m_weights.tensor(bias, layer, 0) : m_absent, m_context);
}

std::unique_ptr<GemvKernel> WaferDecoder::Impl::Builder::gemv(int layer, GemvPart part)
{
    GemvSpec spec;
    spec.name = std::move(part.name);
    spec.frame = part.frame;
    spec.firstColumn = part.firstColumn;
    spec.input = std::move(part.input);
    spec.output = std::move(part.output);
    spec.weight = m_weights.tensor(part.weight, layer, std::max(part.expert, 0));
    spec.bias = part.hasBias ? m_weights.tensor(part.bias, layer, std::max(part.expert, 0)) : m_absent;
    spec.treeReduced = part.treeReduced;
    spec.epilogue = part.epilogue;
    spec.activation = m_s.activation;
    spec.ropeTheta = m_s.ropeTheta;
    spec.experts = int(m_s.experts);
    spec.topK = int(m_s.topK);
    spec.expert = part.expert;
    spec.lastExpert = part.expert + 1 == int(m_s.experts);
    if (part.measured)
        m_impl.measured.push_back(
            { spec.name, part.firstColumn ? RegionKernelKind::NormGemv : RegionKernelKind::Gemv, spec.frame });
    return std::make_unique<GemvKernel>(std::move(spec), m_context);
}

// The GEMV of a block's region of `role`.
std::unique_ptr<GemvKernel> WaferDecoder::Impl::Builder::gemvOf(int layer, OpRole role, int firstColumn, Lanes input,
    Lanes output, Tensor weight, Tensor bias, bool hasBias, Epilogue epilogue)
{
    const Strip& strip = m_strips[std::size_t(layer)];
    return gemv(layer,
        { strip[role].opName, frameIn(strip, role), firstColumn, std::move(input), std::move(output), weight, bias,
            hasBias, epilogue, -1, strip[role].kernel.treeReduced, true });
}

// The embedding, its lanes leaving downwards into block 0.
void WaferDecoder::Impl::Builder::buildEmbedding()
{
    const Frame frame = frameOf(*m_embedding, m_embedding->rect.y, m_embedding->rect.h, false);
    EmbeddingSpec spec;
    spec.name = "embedding";
    spec.frame = frame;
    spec.lanes = evenLanes(0, m_impl.lanes, std::uint32_t(m_s.hidden));
    spec.token = m_weights.tensor(Tensor::TokenEmbedding, 0, 0);
    spec.position = m_s.positions == DecoderShape::Positions::Learned
        ? m_weights.tensor(Tensor::PositionEmbedding, 0, 0)
        : m_absent;
    m_impl.embedding = std::make_unique<EmbeddingKernel>(spec, m_context);
    m_impl.measured.push_back({ m_embedding->opName, RegionKernelKind::Embedding, frame });
}

// norm1 in q's first column, the q, k and v projections, the attention and the output projection.
void WaferDecoder::Impl::Builder::buildAttention(int layer, Layer& block)
{
    const Strip& strip = m_strips[std::size_t(layer)];
    const int y0 = strip.y - m_usable.y;
    const Lanes x = m_impl.hiddenLanes(y0);
    const Lanes heads = headLanes(y0, false);
    const Lanes kvHeads = headLanes(y0, true);
    const std::string name = "layers." + std::to_string(layer);
    block.norm1
        = norm(name + ".norm1", frameIn(strip, OpRole::Query), x, Tensor::Norm1Weight, Tensor::Norm1Bias, layer);
    const Epilogue rotary = m_s.positions == DecoderShape::Positions::Rotary ? Epilogue::Rotary : Epilogue::Round;
    block.q = gemvOf(layer, OpRole::Query, 1, x, heads, Tensor::Wq, Tensor::Bq, m_s.qkvBias, rotary);
    block.k = gemvOf(layer, OpRole::Key, 0, x, kvHeads, Tensor::Wk, Tensor::Bk, m_s.qkvBias, rotary);
    block.v = gemvOf(layer, OpRole::Value, 0, x, kvHeads, Tensor::Wv, Tensor::Bv, m_s.qkvBias, Epilogue::Round);
    AttentionSpec spec;
    spec.name = strip[OpRole::AttentionCore].opName;
    spec.frame = frameIn(strip, OpRole::AttentionCore);
    spec.heads = int(m_s.heads);
    spec.headDim = int(m_s.headDim);
    spec.capacity = m_options.capacity;
    spec.alibi = m_s.positions == DecoderShape::Positions::Alibi;
    spec.q = heads;
    spec.k = kvHeads;
    spec.v = kvHeads;
    block.attention = std::make_unique<AttentionKernel>(spec, m_context);
    m_impl.measured.push_back({ spec.name, RegionKernelKind::Attention, spec.frame });
    block.out = gemvOf(layer, OpRole::AttentionOut, 0, block.attention->outputLanes(), x, Tensor::Wo, Tensor::Bo,
        m_s.outBias, Epilogue::Residual);
}

// norm3 in up's first column, then up (gate) and down.
void WaferDecoder::Impl::Builder::buildFeedForward(int layer, Layer& block)
{
    const Strip& strip = m_strips[std::size_t(layer)];
    const int y0 = strip.y - m_usable.y;
    const Lanes x = m_impl.hiddenLanes(y0);
    block.norm3 = norm("layers." + std::to_string(layer) + ".norm3", frameIn(strip, OpRole::Up), x, Tensor::Norm3Weight,
        Tensor::Norm3Bias, layer);
    const Lanes inner = ffnLanes(strip, y0);
    Ffn ffn;
    ffn.up = gemvOf(layer, OpRole::Up, 1, x, inner, Tensor::WUp, Tensor::BUp, m_s.ffnBias,
        m_s.gated() ? Epilogue::Round : Epilogue::Activation);
    if (m_s.gated())
        ffn.gate = gemvOf(layer, OpRole::Gate, 0, x, inner, Tensor::WGate, Tensor::BGate, m_s.ffnBias, Epilogue::Gated);
    ffn.down = gemvOf(layer, OpRole::Down, 0, inner, x, Tensor::WDown, Tensor::BDown, m_s.ffnBias, Epilogue::Residual);
    block.ffn.push_back(std::move(ffn));
}

// The router (its norm in column 0) leaves the routing weights on its first row; each expert's
// projections dispatch on them and the downs sum their weighted outputs.
void WaferDecoder::Impl::Builder::buildExperts(int layer, Layer& block)
{
    const Strip& strip = m_strips[std::size_t(layer)];
    const int y0 = strip.y - m_usable.y;
    const Lanes x = m_impl.hiddenLanes(y0);
    block.norm3 = norm("layers." + std::to_string(layer) + ".norm3", frameIn(strip, OpRole::Router), x,
        Tensor::Norm3Weight, Tensor::Norm3Bias, layer);
    const Lanes inner = ffnLanes(strip, y0);
    block.router = gemvOf(layer, OpRole::Router, 1, x, Lanes { { y0, 0, std::uint32_t(m_s.experts) } }, Tensor::Router,
        Tensor::Router, false, Epilogue::Route);
    const Region& region = strip[OpRole::Experts];
    const Frame frame = frameIn(strip, OpRole::Experts);
    const std::vector<Frame> pieces = expertFrames(frame);
    m_impl.measured.push_back({ region.opName, RegionKernelKind::Experts, frame, block.router.get() });
    const Epilogue upEpilogue = m_s.gated() ? Epilogue::Round : Epilogue::Activation;
    const bool tree = region.kernel.treeReduced;
    for (int e = 0; e < int(m_s.experts); ++e) {
        const auto piece = [&](int i) { return pieces[std::size_t(e * m_ffnParts + i)]; };
        const std::string expert = region.opName + "." + std::to_string(e);
        Ffn ffn;
        ffn.up = gemv(layer,
            { expert + ".up", piece(0), 0, x, inner, Tensor::WUp, Tensor::BUp, m_s.ffnBias, upEpilogue, e, tree,
                false });
        if (m_s.gated())
            ffn.gate = gemv(layer,
                { expert + ".gate", piece(1), 0, x, inner, Tensor::WGate, Tensor::BGate, m_s.ffnBias, Epilogue::Gated,
                    e, tree, false });
        ffn.down = gemv(layer,
            { expert + ".down", piece(m_ffnParts - 1), 0, inner, x, Tensor::WDown, Tensor::BDown, m_s.ffnBias,
                Epilogue::Combine, e, tree, false });
        block.ffn.push_back(std::move(ffn));
    }
}

// The LM head, its norm column on the side where the last block's lanes come down.
void WaferDecoder::Impl::Builder::buildHead()
{
    const Frame frame = frameOf(*m_head, m_head->rect.y, m_head->rect.h, !m_strips.back().westward);
    const int y0 = m_head->rect.y - m_usable.y;
    m_impl.finalNorm
        = norm("final_norm", frame, m_impl.hiddenLanes(y0), Tensor::FinalNormWeight, Tensor::FinalNormBias, 0);
    GemvPart part { m_head->opName, frame, 1, m_impl.hiddenLanes(y0),
        evenLanes(y0, m_head->rect.h, std::uint32_t(m_s.vocab)), Tensor::LmHead, Tensor::LmHeadBias, m_s.lmHeadBias,
        Epilogue::Logits, -1, m_head->kernel.treeReduced, false };
    m_impl.lmHead = gemv(0, std::move(part));
    m_impl.measured.push_back({ m_head->opName, RegionKernelKind::LmHead, frame });
}

// Every kernel's own streams get their colors first.
void WaferDecoder::Impl::Builder::routeKernels()
{
    RouteBook& book = *m_impl.routes;
    m_impl.embedding->route(book);
    for (Layer& block : m_impl.layers)
        block.forEachKernel([&](auto& kernel) { kernel.route(book); });
    m_impl.finalNorm->route(book);
    m_impl.lmHead->route(book);
}

// The streams of block `layer`: x into it (turned from the embedding or the block before), the
// norms' outputs to their GEMVs, q, k and v to the attention, its output to the projection, the
// residual, the feed-forward's inner lanes, the experts' running sum and routing weights.
void WaferDecoder::Impl::Builder::connectBlock(std::size_t layer)
{
    Layer& block = m_impl.layers[layer];
    const Strip& strip = m_strips[layer];
    const int forward = strip.westward ? West : East;
    const std::string name = "layers." + std::to_string(layer);
    const auto L = std::size_t(m_impl.lanes);
    const std::vector<int> rows = rowsOfLanes(strip.y);
    const std::vector<std::vector<Pe>> xTaps = concat(tapsOf(*block.norm1, L), exitTaps(*block.out, L));
    if (layer == 0)
        block.in = m_impl.turn(name + " input", exitsOf(*m_impl.embedding, L), rows, xTaps, laneSizes(), true, forward);
    else
        block.in = m_impl.turn(name + " input", exitsOf(m_impl.layers[layer - 1].last(), L), rows, xTaps, laneSizes(),
            false, m_strips[layer - 1].westward ? West : East);
    const auto along
        = [&](const std::string& what, const std::vector<Pe>& senders, const std::vector<std::vector<Pe>>& taps) {
              return place(name + " " + what, forward, senders, taps);
          };
    block.a = along("norm1", exitsOf(*block.norm1, L),
        concat(concat(tapsOf(*block.q, L), tapsOf(*block.k, L)), tapsOf(*block.v, L)));
    const auto H = std::size_t(m_s.heads);
    block.qs = along("q", exitsOf(*block.q, H), tapsOf(*block.attention, H));
    block.ks = along("k", exitsOf(*block.k, H), tapsOf(*block.attention, H));
    block.vs = along("v", exitsOf(*block.v, H), tapsOf(*block.attention, H));
    block.o = along("attention", exitsOf(*block.attention, H), tapsOf(*block.out, H));
    block.x2 = along("residual", exitsOf(*block.out, L), concat(tapsOf(*block.norm3, L), exitTaps(block.last(), L)));
    std::vector<std::vector<Pe>> bTaps(L);
    if (block.router)
        bTaps = concat(bTaps, tapsOf(*block.router, L));
    for (const Ffn& ffn : block.ffn) {
        bTaps = concat(bTaps, tapsOf(*ffn.up, L));
        if (ffn.gate)
            bTaps = concat(bTaps, tapsOf(*ffn.gate, L));
    }
    block.b = along("norm3", exitsOf(*block.norm3, L), bTaps);
    for (std::size_t e = 0; e < block.ffn.size(); ++e) {
        Ffn& ffn = block.ffn[e];
        const auto F = ffn.up->spec().output.size();
        if (ffn.gate) {
            ffn.u = along("up", exitsOf(*ffn.up, F), exitTaps(*ffn.gate, F));
            ffn.h = along("gate", exitsOf(*ffn.gate, F), tapsOf(*ffn.down, F));
        } else {
            ffn.u = along("up", exitsOf(*ffn.up, F), tapsOf(*ffn.down, F));
        }
        if (e + 1 < block.ffn.size())
            ffn.combine = along("expert sum", exitsOf(*ffn.down, L), exitTaps(*block.ffn[e + 1].down, L));
    }
    if (block.router)
        block.weights = routingWeights(block, strip, name);
}

// The routing weights from the router's exit along its row, and down every column of the experts
// to the PEs with work.
int WaferDecoder::Impl::Builder::routingWeights(const Layer& block, const Strip& strip, const std::string& name)
{
    const int forward = strip.westward ? West : East;
    const Pe from = block.router->exit(0);
    std::map<int, std::vector<int>> rowsAt; // column -> rows of workers
    for (const Ffn& ffn : block.ffn)
        for (const GemvKernel* kernel : { ffn.up.get(), ffn.gate.get(), ffn.down.get() })
            if (kernel)
                for (const Pe& pe : kernel->workers())
                    rowsAt[pe.x].push_back(pe.y);
    StreamTree tree(name + " routing weights");
    int farthest = 0;
    for (const auto& [x, rowList] : rowsAt)
        farthest = std::max(farthest, std::abs(x - from.x));
    const int step = forward == East ? 1 : -1;
    tree.hop(from.x, from.y, Fabric::kRampPort, directionBit(forward));
    for (int d = 1; d <= farthest; ++d) {
        const int x = from.x + step * d;
        std::uint8_t tx = d < farthest ? directionBit(forward) : 0;
        const auto it = rowsAt.find(x);
        int lowest = from.y;
        if (it != rowsAt.end()) {
            for (const int y : it->second) {
                lowest = std::max(lowest, y);
                if (y == from.y)
                    tx |= kRampBit;
            }
        }
        if (lowest > from.y)
            tx |= directionBit(South);
        tree.hop(x, from.y, opposite(forward), tx);
        for (int y = from.y + 1; y <= lowest; ++y) {
            const bool worker = std::find(it->second.begin(), it->second.end(), y) != it->second.end();
            tree.hop(x, y, North, std::uint8_t((y < lowest ? directionBit(South) : 0) | (worker ? kRampBit : 0)));
        }
    }
    return m_impl.routes->place(tree);
}

// The last block's lanes turned into the head's strip, and the final norm's to the LM head.
void WaferDecoder::Impl::Builder::connectHead()
{
    const auto L = std::size_t(m_impl.lanes);
    m_impl.intoHead = m_impl.turn("lm_head input", exitsOf(m_impl.layers.back().last(), L), rowsOfLanes(m_head->rect.y),
        tapsOf(*m_impl.finalNorm, L), laneSizes(), false, m_strips.back().westward ? West : East);
    const int forward = m_impl.finalNorm->exit(0).x < m_impl.lmHead->exit(0).x ? East : West;
    m_impl.f = place("final norm", forward, exitsOf(*m_impl.finalNorm, L), tapsOf(*m_impl.lmHead, L));
}

// Token ids: from the host through the root's north edge, and from the LM head's argmax up its
// column and along row 0 to the root.
void WaferDecoder::Impl::Builder::connectTokenIds()
{
    RouteBook& book = *m_impl.routes;
    const Pe root = m_impl.embedding->root();
    StreamTree host("token ids from the host");
    host.hop(root.x, root.y, North, kRampBit);
    m_impl.hostColor = book.place(host);
    m_impl.fabric->addEdgeSource(root.x, root.y, North, {});
    const Pe from = m_impl.lmHead->argmaxPe();
    StreamTree back("token id feedback");
    back.hop(from.x, from.y, Fabric::kRampPort, directionBit(North));
    for (int y = from.y - 1; y > root.y; --y)
        back.hop(from.x, y, South, directionBit(North));
    if (from.x == root.x) {
        back.hop(root.x, root.y, South, kRampBit);
    } else {
        const int direction = root.x > from.x ? East : West;
        back.hop(from.x, root.y, South, directionBit(direction));
        for (int x = from.x + (direction == East ? 1 : -1); x != root.x; x += direction == East ? 1 : -1)
            back.hop(x, root.y, opposite(direction), directionBit(direction));
        back.hop(root.x, root.y, opposite(direction), kRampBit);
    }
    m_impl.feedbackColor = book.place(back);
    // A token from the host leaves the feedback unarmed, and the other way round.
    m_impl.fabric->allowUnboundDelivery(root.x, root.y, m_impl.hostColor);
    m_impl.fabric->allowUnboundDelivery(root.x, root.y, m_impl.feedbackColor);
}

// SRAM: the kernels of different regions touch different PEs, so blocks load in parallel.
void WaferDecoder::Impl::Builder::loadSram()
{
    StaticColorFabric& wafer = *m_impl.fabric;
    m_impl.embedding->load(wafer);
    tbb::parallel_for(std::size_t(0), m_impl.layers.size(),
        [&](std::size_t layer) { m_impl.layers[layer].forEachKernel([&](auto& kernel) { kernel.load(wafer); }); });
    m_impl.finalNorm->load(wafer);
    m_impl.lmHead->load(wafer);
}

Expected<std::unique_ptr<WaferDecoder>> WaferDecoder::build(
    const ModelGraph& graph, const ExecutionPlan& plan, const SystemSpec& system, const FabricDecodeOptions& options)
{
    Expected<DecoderShape> shape = decoderShape(graph);
    if (!shape)
        return shape.error();
    if (plan.mode != ExecutionMode::Inference)
        return refuse("--level", "the cycle-level run executes inference plans; compile with --mode inference");
    if (plan.numSystems != 1)
        return refuse("--level",
            "the plan needs " + std::to_string(plan.numSystems)
                + " wafers; the cycle-level run executes single-wafer plans");
    if (options.capacity > shape->maxPositions)
        return refuse("--tokens",
            "prompt and generated tokens need " + std::to_string(options.capacity) + " positions; the model has "
                + std::to_string(shape->maxPositions));

    std::unique_ptr<WaferDecoder> decoder(new WaferDecoder());
    Impl& impl = *decoder->m_impl;
    impl.shape = *shape;
    impl.weights = DecoderWeights(*shape, options.seed);
    impl.context.storage = shape->storage;
    impl.context.simdWidth = system.wafer.fmacPerPePerCycle;
    impl.observer = options.observer;
    impl.observeEveryCycles = std::max<std::uint64_t>(1, options.observeEveryCycles);
    impl.cycleLimit = options.maxCyclesPerToken;
    Impl::Builder builder(impl, graph, plan, options);
    if (auto error = builder.findRegions())
        return *error;
    // Lanes of the hidden vector: a row each, in every strip; a column each where a region turns
    // them (after its norm column), and a chain each in the embedding. The compiler decided the
    // layout (core/compiler/decodelayout.h), which the engine times too.
    impl.lanes = decodeLayoutFor(graph, plan).hiddenLanesOn(0);
    if (impl.lanes < 1)
        return refuse("--level", "the plan's regions are too narrow for the decode kernels");

    FabricConfig config;
    config.width = plan.usable.w;
    config.height = plan.usable.h;
    config.colors = std::clamp(system.wafer.routableColors, 1, kMaxColors);
    config.queueDepth = options.queueDepth;
    config.simdWidth = system.wafer.fmacPerPePerCycle;
    impl.fabric = std::make_unique<StaticColorFabric>(config);
    impl.fabric->setThreads(options.threads);
    impl.routes = std::make_unique<RouteBook>(*impl.fabric);
    try {
        builder.buildEmbedding();
        for (int layer = 0; layer < int(shape->layers); ++layer) {
            if (auto error = builder.checkBlock(layer))
                return *error;
            Impl::Layer block;
            builder.buildAttention(layer, block);
            if (shape->experts > 0)
                builder.buildExperts(layer, block);
            else
                builder.buildFeedForward(layer, block);
            impl.layers.push_back(std::move(block));
        }
        builder.buildHead();
        builder.routeKernels();
        for (std::size_t layer = 0; layer < impl.layers.size(); ++layer)
            builder.connectBlock(layer);
        builder.connectHead();
        builder.connectTokenIds();
    } catch (const RouteError& error) {
        return refuse("--level", std::string("the plan's streams do not fit the fabric's colors: ") + error.what());
    } catch (const std::logic_error& error) {
        return refuse("--level", std::string("the plan cannot be built on the fabric: ") + error.what());
    }
    builder.loadSram();
    if (const auto peak = std::int64_t(decoder->peakSramBytesPerPe()); peak > system.wafer.sramPerPeBytes)
        return refuse("--level",
            "a PE would hold " + std::to_string(peak) + " bytes; the wafer's PEs have "
                + std::to_string(system.wafer.sramPerPeBytes));
    return decoder;
}

} // namespace waferscope::core::cyclelevel
