#include "core/compiler/decoderegions.h"

#include <algorithm>
#include <cstdlib>

namespace waferscope::core {

namespace {

// `count` lanes of `total` elements dealt evenly, on rows 0..count-1 of the region.
std::vector<DecodeLane> evenLanes(int count, std::int64_t total)
{
    std::vector<DecodeLane> lanes;
    for (int i = 0; i < count; ++i)
        lanes.push_back({ i, total * (i + 1) / count - total * i / count });
    return lanes;
}

// Lanes of consecutive elements, a DecodeLane's row and size each.
Lanes lanesOf(const std::vector<DecodeLane>& lanes)
{
    Lanes out;
    std::uint32_t begin = 0;
    for (const DecodeLane& lane : lanes) {
        out.push_back({ lane.row, begin, begin + std::uint32_t(lane.size) });
        begin += std::uint32_t(lane.size);
    }
    return out;
}

// A stacked plan's q region computes k and v too: each row's outputs are its part of q and its
// share of the keys and values (2 kvWidth, dealt over the rows).
std::vector<DecodeLane> withKeysAndValues(const std::vector<DecodeLane>& queryLanes, std::int64_t kvWidth, int rows)
{
    std::vector<std::int64_t> sizes(std::size_t(rows), 0);
    for (const DecodeLane& lane : queryLanes)
        sizes[std::size_t(lane.row)] += lane.size;
    for (const DecodeLane& lane : evenLanes(int(std::min<std::int64_t>(2 * kvWidth, rows)), 2 * kvWidth))
        sizes[std::size_t(lane.row)] += lane.size;
    std::vector<DecodeLane> out;
    for (int row = 0; row < rows; ++row)
        if (sizes[std::size_t(row)] > 0)
            out.push_back({ row, sizes[std::size_t(row)] });
    return out;
}

// An MoE experts region: from the router's last step, its routing weights cross the region while
// the experts' inputs are already in (core/kernels/experts.h). Shared experts, every token's,
// after the routed ones: no routing weights to wait for, the input lanes streamed in again, the
// outputs summed from exit to exit with the residual.
DecodeExpertsShape expertsShape(const ModelConfig& config, const Region& region, const std::vector<DecodeLane>& hidden,
    const std::vector<DecodeLane>& ffn, int simd, bool shared)
{
    DecodeExpertsShape experts;
    experts.width = region.rect.w;
    experts.height = region.rect.h;
    experts.experts = int(std::max<std::int64_t>(1, shared ? config.numSharedExperts : config.numExperts));
    experts.topK = shared ? experts.experts : int(std::max<std::int64_t>(1, config.topK));
    experts.routed = !shared;
    experts.gatedFfn = gatedFfn(config);
    experts.hidden = hidden;
    experts.ffn = ffn;
    experts.simdWidth = simd;
    experts.treeReduced = region.kernel.treeReduced;
    return experts;
}

double busyCycles(const KernelCost& cost, double pes)
{
    return cost.peBusyFraction * pes * cost.cycles;
}

// `second` after `first` on the same region of `pes` PEs (`firstPes` of them take part in the first).
KernelCost inSequence(const KernelCost& first, double firstPes, const KernelCost& second, double pes)
{
    KernelCost cost;
    cost.cycles = first.cycles + second.cycles;
    cost.computeCycles = std::max(first.computeCycles, second.computeCycles);
    cost.fabricCycles = std::max(first.fabricCycles, second.fabricCycles);
    cost.latencyCycles = std::max(0.0, cost.cycles - std::max(cost.computeCycles, cost.fabricCycles));
    cost.fmacs = first.fmacs + second.fmacs;
    cost.linkWavelets = first.linkWavelets + second.linkWavelets;
    cost.peBusyFraction = cost.cycles > 0.0
        ? std::min(1.0, (busyCycles(first, firstPes) + busyCycles(second, pes)) / (pes * cost.cycles))
        : 0.0;
    cost.bound = cost.latencyCycles > std::max(cost.computeCycles, cost.fabricCycles) ? Bound::Latency
        : cost.fabricCycles > cost.computeCycles                                      ? Bound::Fabric
                                                                                      : Bound::Compute;
    return cost;
}

} // namespace

DecodeRegions::DecodeRegions(const ModelGraph& graph, const ExecutionPlan& plan, const SystemSpec& system)
    : m_graph(graph)
    , m_simd(std::max(1, system.wafer.fmacPerPePerCycle))
    , m_layout(decodeLayoutFor(graph, plan))
    , m_index(graph, plan)
{
}

int DecodeRegions::hiddenLanes(int system) const
{
    return m_layout.hiddenLanesOn(system);
}

int DecodeRegions::rowsPerHead(int layer) const
{
    return m_layout.rowsPerHeadOf(layer);
}

int DecodeRegions::ffnLanes(int layer) const
{
    return m_layout.ffnLanesOf(layer);
}

std::optional<DecodeRegionCost> DecodeRegions::cost(const Region& region, std::int64_t position) const
{
    if (m_index.all().empty() || region.op < 0 || region.op >= int(m_graph.ops.size())
        || !inDecodedStack(m_graph.ops[std::size_t(region.op)]))
        return std::nullopt;
    const int layer = m_graph.ops[std::size_t(region.op)].layer;
    const bool inBlock = layer >= 0;
    Key key { region.role, region.rect.w, region.rect.h, hiddenLanes(region.system), inBlock ? ffnLanes(layer) : 0,
        inBlock ? rowsPerHead(layer) : 1, int(region.fused.size()), region.kernel.treeReduced, position };
    const auto found = m_costs.find(key);
    if (found != m_costs.end())
        return found->second;
    return m_costs.emplace(std::move(key), compute(region, position)).first->second;
}

std::optional<DecodeRegionCost> DecodeRegions::compute(const Region& region, std::int64_t position) const
{
    const ModelConfig& config = m_graph.config;
    const int lanes = hiddenLanes(region.system);
    if (lanes < 1 || region.op < 0 || region.op >= int(m_graph.ops.size()))
        return std::nullopt;
    const Op& op = m_graph.ops[std::size_t(region.op)];
    const OpRole role = region.role;
    const int w = region.rect.w;
    const int h = region.rect.h;
    const double pes = double(w) * double(h);
    const std::int64_t heads = config.numHeads;
    const std::int64_t headDim = decodeHeadDim(config);
    if (w < 1 || h < 1)
        return std::nullopt;

    const std::vector<DecodeLane> hidden = evenLanes(lanes, config.hiddenSize);
    std::vector<std::int64_t> hiddenSizes;
    for (const DecodeLane& lane : hidden)
        hiddenSizes.push_back(lane.size);
    const NormColumnShape norm { hiddenSizes, config.norm != ModelConfig::Norm::RmsNorm, m_simd };
    // A row per query head. With more heads than rows (the cycle-level kernel refuses those),
    // each row takes its share of the heads one after the other, costed as one head of their
    // combined width. A stacked plan's tall regions split each head's dimensions over as many
    // rows as the region has for it (AttentionSpec::rowsPerHead), so that q, attention and the
    // output projection use them.
    const int headRows = int(std::min<std::int64_t>(heads, h));
    const std::int64_t headsPerRow = (heads + headRows - 1) / std::max(1, headRows);
    const int rowsPerHead = op.layer >= 0 ? this->rowsPerHead(op.layer) : 1;
    std::vector<DecodeLane> headLanes = evenLanes(headRows, heads * headDim);
    if (rowsPerHead > 1) {
        headLanes.clear();
        for (std::int64_t head = 0; head < heads; ++head)
            for (int r = 0; r < rowsPerHead; ++r)
                headLanes.push_back(
                    { int(head) * rowsPerHead + r, headDim * (r + 1) / rowsPerHead - headDim * r / rowsPerHead });
    }
    // The region's GEMV as the cycle-level kernel's spec (its geometry; the weights are the
    // cycle-level run's), lanes on the rows of a frame at the region's top.
    const auto gemv = [&](int width, int firstColumn, const std::vector<DecodeLane>& in,
                          const std::vector<DecodeLane>& out, Epilogue epilogue) {
        GemvSpec spec;
        spec.name = region.opName;
        spec.frame = Frame { 0, 0, width, h, false };
        spec.firstColumn = firstColumn;
        spec.input = lanesOf(in);
        spec.output = lanesOf(out);
        spec.epilogue = epilogue;
        spec.treeReduced = region.kernel.treeReduced;
        return costDecodeGemv(spec, m_simd);
    };
    const KernelCost normCost = costNormColumn(norm);
    const double normCycles = normCost.cycles;
    const auto normThen = [&](const KernelCost& after) { return inSequence(normCost, double(lanes), after, pes); };
    // A GEMV behind its fused norm: the norm in the region's first column, the GEMV in the rest;
    // a region of one column (a strip too full to widen it) runs the norm, then the GEMV, on it.
    const auto normGemv = [&](std::vector<DecodeLane> out, Epilogue epilogue) {
        return normThen(gemv(w, w >= 2 ? 1 : 0, hidden, std::move(out), epilogue));
    };
    const bool rotary = config.positions == ModelConfig::Positions::Rotary;
    const auto ffn = [&] { return evenLanes(ffnLanes(op.layer), config.filterSize); };

    if (role == OpRole::Embedding)
        return DecodeRegionCost { costEmbeddingLookup({ w, h, hiddenSizes, m_simd }), RegionKernelKind::Embedding };
    if (role == OpRole::LmHead) {
        const std::vector<DecodeLane> logits = evenLanes(h, config.vocabSize);
        return DecodeRegionCost { normGemv(logits, Epilogue::Logits), RegionKernelKind::LmHead };
    }
    // The kv heads' values (of k or v) dealt over the region's rows, from which the attention rows
    // of their query heads take them. (The cycle-level kernel computes a kv head on each of its
    // query heads' rows, which small models afford; with grouped queries on a large one that
    // would hold the weights many times over.)
    const std::int64_t kvWidth = std::clamp<std::int64_t>(config.numKvGroups, 1, heads) * headDim;
    if (role == OpRole::Query) {
        // A stacked plan's q region also holds k and v (one GEMV of the three on the same input):
        // each row's outputs are its part of q and its share of the keys and values.
        const bool withKv = std::any_of(region.fused.begin(), region.fused.end(),
            [&](int index) { return m_graph.ops[std::size_t(index)].role == OpRole::Key; });
        const std::vector<DecodeLane> out = withKv ? withKeysAndValues(headLanes, kvWidth, h) : headLanes;
        return DecodeRegionCost { normGemv(out, rotary ? Epilogue::Rotary : Epilogue::Round),
            RegionKernelKind::NormGemv, normCycles };
    }
    if (role == OpRole::Key || role == OpRole::Value) {
        const std::vector<DecodeLane> kvLanes = evenLanes(int(std::min<std::int64_t>(kvWidth, h)), kvWidth);
        const bool rotate = rotary && role == OpRole::Key;
        return DecodeRegionCost { gemv(w, 0, hidden, kvLanes, rotate ? Epilogue::Rotary : Epilogue::Round),
            RegionKernelKind::Gemv };
    }
    if (role == OpRole::AttentionCore)
        return DecodeRegionCost { costDecodeAttention({ w, h, headRows, int(headDim * headsPerRow),
                                      std::max<std::int64_t>(0, position), m_simd, rowsPerHead }),
            RegionKernelKind::Attention };
    if (role == OpRole::AttentionOut)
        return DecodeRegionCost { gemv(w, 0, headLanes, hidden, Epilogue::Residual), RegionKernelKind::Gemv };
    if (ffnLanes(op.layer) >= 1) {
        if (role == OpRole::Up)
            return DecodeRegionCost { normGemv(ffn(), gatedFfn(config) ? Epilogue::Round : Epilogue::Activation),
                RegionKernelKind::NormGemv, normCycles };
        if (role == OpRole::Gate)
            return DecodeRegionCost { gemv(w, 0, hidden, ffn(), Epilogue::Gated), RegionKernelKind::Gemv };
        if (role == OpRole::Down)
            return DecodeRegionCost { gemv(w, 0, ffn(), hidden, Epilogue::Residual), RegionKernelKind::Gemv };
        if (role == OpRole::Router) // the routing weights on the first row, their softmax and top k at its exit
            return DecodeRegionCost { normGemv({ { 0, config.numExperts } }, Epilogue::Route),
                RegionKernelKind::NormGemv, normCycles };
        if (role == OpRole::Experts && w >= expertPieces(config))
            return DecodeRegionCost { costDecodeExperts(expertsShape(config, region, hidden, ffn(), m_simd, false)),
                RegionKernelKind::Experts };
        if (role == OpRole::SharedExperts && w >= sharedExpertPieces(config))
            return DecodeRegionCost { costDecodeExperts(expertsShape(config, region, hidden, ffn(), m_simd, true)),
                RegionKernelKind::Experts };
    }
    return std::nullopt;
}

double DecodeRegions::handOffCycles(const Region& from, const Region& to) const
{
    if (from.system != to.system || from.rect.y == to.rect.y)
        return 0.0;
    const double lanes = hiddenLanes(to.system);
    const double down = std::abs(to.rect.y - from.rect.y);
    constexpr double kRelay = 3.0; // the relay takes a wavelet and sends it on another color
    return from.role == OpRole::Embedding ? down + lanes : down + 2.0 * lanes + kRelay;
}

double DecodeRegions::feedbackCycles() const
{
    const Region* head = m_index.find(OpRole::LmHead);
    const Region* embedding = m_index.find(OpRole::Embedding);
    if (!head || !embedding || head->system != embedding->system || hiddenLanes(head->system) < 1)
        return 0.0;
    return double(
        std::abs(head->rect.y + head->rect.h - 1 - embedding->rect.y) + std::abs(head->rect.x - embedding->rect.x));
}

} // namespace waferscope::core
