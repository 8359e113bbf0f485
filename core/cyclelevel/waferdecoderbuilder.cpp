#include "core/cyclelevel/waferdecoderbuilder.h"

#include <oneapi/tbb/parallel_for.h>

#include <algorithm>

namespace waferscope::core::cyclelevel {

using namespace fabric;

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

// The feed-forward's hidden values: a lane per row, as many as the plan's layout gives block
// `layer` (as many as the down projection's columns can turn).
Lanes WaferDecoder::Impl::Builder::ffnLanes(int layer, int y0) const
{
    return evenLanes(y0, m_impl.layout.ffnLanesOf(layer), std::uint32_t(m_s.ffn));
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

DecodeGemvPlan WaferDecoder::Impl::Builder::gemvPlan(const Region& region) const
{
    std::optional<DecodeGemvPlan> plan = decodeGemvPlan(m_graph, m_impl.layout, region);
    if (!plan)
        throw std::logic_error(region.opName + ": the plan lays out no GEMV for the region");
    return std::move(*plan);
}

// The GEMV of a block's region of `role`, as the plan lays it out (decodeGemvPlan, which the
// engine times): its norm column, lanes and epilogue. But k and v: the cycle level computes a kv
// head on each of its query heads' rows (headLanes), where the plan deals the kv values once over
// the region's rows for the attention rows to take.
std::unique_ptr<GemvKernel> WaferDecoder::Impl::Builder::gemvOf(
    int layer, OpRole role, Tensor weight, Tensor bias, bool hasBias)
{
    const Strip& strip = m_strips[std::size_t(layer)];
    const Region& region = strip[role];
    const int y0 = strip.y - m_usable.y;
    const DecodeGemvPlan plan = gemvPlan(region);
    Lanes output = role == OpRole::Key || role == OpRole::Value ? headLanes(y0, true) : lanesAt(y0, plan.output);
    return gemv(layer,
        { region.opName, frameIn(strip, role), plan.firstColumn, lanesAt(y0, plan.input), std::move(output), weight,
            bias, hasBias, plan.epilogue, -1, region.kernel.treeReduced, true });
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
    block.q = gemvOf(layer, OpRole::Query, Tensor::Wq, Tensor::Bq, m_s.qkvBias);
    block.k = gemvOf(layer, OpRole::Key, Tensor::Wk, Tensor::Bk, m_s.qkvBias);
    block.v = gemvOf(layer, OpRole::Value, Tensor::Wv, Tensor::Bv, m_s.qkvBias);
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
    block.out = gemvOf(layer, OpRole::AttentionOut, Tensor::Wo, Tensor::Bo, m_s.outBias);
    if (block.out->spec().input != block.attention->outputLanes())
        throw std::logic_error(spec.name + ": its output lanes are not the ones the plan's output projection takes");
}

// norm3 in up's first column, then up (gate) and down.
void WaferDecoder::Impl::Builder::buildFeedForward(int layer, Layer& block)
{
    const Strip& strip = m_strips[std::size_t(layer)];
    const int y0 = strip.y - m_usable.y;
    const Lanes x = m_impl.hiddenLanes(y0);
    block.norm3 = norm("layers." + std::to_string(layer) + ".norm3", frameIn(strip, OpRole::Up), x, Tensor::Norm3Weight,
        Tensor::Norm3Bias, layer);
    Ffn ffn;
    ffn.up = gemvOf(layer, OpRole::Up, Tensor::WUp, Tensor::BUp, m_s.ffnBias);
    if (m_s.gated())
        ffn.gate = gemvOf(layer, OpRole::Gate, Tensor::WGate, Tensor::BGate, m_s.ffnBias);
    ffn.down = gemvOf(layer, OpRole::Down, Tensor::WDown, Tensor::BDown, m_s.ffnBias);
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
    const Lanes inner = ffnLanes(layer, y0);
    block.router = gemvOf(layer, OpRole::Router, Tensor::Router, Tensor::Router, false);
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
    const DecodeGemvPlan plan = gemvPlan(*m_head);
    GemvPart part { m_head->opName, frame, plan.firstColumn, lanesAt(y0, plan.input), lanesAt(y0, plan.output),
        Tensor::LmHead, Tensor::LmHeadBias, m_s.lmHeadBias, plan.epilogue, -1, m_head->kernel.treeReduced, false };
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

} // namespace waferscope::core::cyclelevel
