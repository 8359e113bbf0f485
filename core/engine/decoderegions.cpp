#include "core/engine/decoderegions.h"

#include <algorithm>
#include <cstdlib>

namespace waferscope::core::engine {

namespace {

// `count` lanes of `total` elements dealt evenly, on rows 0..count-1 of the region.
std::vector<DecodeLane> evenLanes(int count, std::int64_t total)
{
    std::vector<DecodeLane> lanes;
    for (int i = 0; i < count; ++i)
        lanes.push_back({ i, total * (i + 1) / count - total * i / count });
    return lanes;
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

std::int64_t headDimOf(const ModelConfig& config)
{
    const std::int64_t heads = std::max<std::int64_t>(1, config.numHeads);
    return config.attentionInnerDim > 0 ? config.attentionInnerDim / heads : config.hiddenSize / heads;
}

bool gated(const ModelConfig& config)
{
    using Activation = ModelConfig::Activation;
    return config.activation == Activation::SwiGlu || config.activation == Activation::GeGlu
        || config.activation == Activation::ReGlu;
}

} // namespace

bool inDecodedStack(const Op& op)
{
    return op.stack.empty() || op.stack == "decoder";
}

bool hasDecodeLayout(const ModelGraph& graph)
{
    return std::none_of(graph.ops.begin(), graph.ops.end(), [](const Op& op) { return op.role == OpRole::CrossQuery; });
}

DecodeRegions::DecodeRegions(const ModelGraph& graph, const ExecutionPlan& plan, const SystemSpec& system)
    : m_graph(graph)
    , m_simd(std::max(1, system.wafer.fmacPerPePerCycle))
    , m_stacked(plan.stackedLayers)
    , m_layout(hasDecodeLayout(graph))
{
    const ModelConfig& config = graph.config;
    if (m_layout)
        for (const Region& region : plan.regions)
            if (region.replica == 0 && region.op >= 0 && region.op < int(graph.ops.size())
                && inDecodedStack(graph.ops[std::size_t(region.op)]))
                m_byRole.emplace(std::pair { region.layer < 0 ? -1 : region.layer, region.role }, &region);
    // A stacked plan's rows per query head, block by block: as many as the attention region has
    // for each head, no more than the output projection's columns can turn down (kTurnColors
    // lanes a column) nor than a head has dimensions.
    m_rowsPerHead.assign(std::size_t(std::max<std::int64_t>(0, config.numLayers)), 1);
    for (int layer = 0; m_stacked && layer < int(m_rowsPerHead.size()); ++layer) {
        const Region* core = find(OpRole::AttentionCore, layer);
        const Region* out = find(OpRole::AttentionOut, layer);
        if (!core || !out || config.numHeads < 1 || config.numHeads > core->rect.h)
            continue;
        const std::int64_t rows = std::min<std::int64_t>(
            core->rect.h / config.numHeads, std::int64_t(kTurnColors) * out->rect.w / config.numHeads);
        m_rowsPerHead[std::size_t(layer)]
            = int(std::clamp<std::int64_t>(rows, 1, std::max<std::int64_t>(1, headDimOf(config))));
    }
    m_hiddenLanes.assign(std::size_t(std::max(1, plan.numSystems)), int(std::max<std::int64_t>(0, config.hiddenSize)));
    if (!find(OpRole::Embedding) || !find(OpRole::LmHead) || config.numHeads < 1 || config.hiddenSize < 1) {
        std::fill(m_hiddenLanes.begin(), m_hiddenLanes.end(), 0);
        return;
    }
    // Every region a lane passes bounds the lanes: a row each in a block's strip, a turn of at
    // most kTurnColors down each GEMV column that takes the hidden vector (the norm column
    // aside), a chain each in the embedding.
    for (const auto& [at, region] : m_byRole) {
        if (region->system < 0 || region->system >= int(m_hiddenLanes.size()))
            continue;
        int& lanes = m_hiddenLanes[std::size_t(region->system)];
        const int w = region->rect.w;
        const int h = region->rect.h;
        const OpRole role = at.second;
        if (role == OpRole::LmHead)
            lanes = std::min({ lanes, h, kTurnColors * (w - 1) });
        else if (role == OpRole::Embedding)
            lanes = std::min(lanes, w);
        else if (at.first >= 0)
            lanes = std::min(lanes, h);
        if (role == OpRole::Query || role == OpRole::Up || role == OpRole::Router)
            lanes = std::min(lanes, kTurnColors * std::max(1, w - 1));
        else if (role == OpRole::Key || role == OpRole::Value || role == OpRole::Gate)
            lanes = std::min(lanes, kTurnColors * w);
        else if (role == OpRole::Experts)
            lanes = std::min(lanes, kTurnColors * (w / pieces()));
        else if (role == OpRole::SharedExperts)
            lanes = std::min(lanes, kTurnColors * (w / sharedPieces()));
    }
    for (int& lanes : m_hiddenLanes)
        lanes = std::max(0, lanes);
}

const Region* DecodeRegions::find(OpRole role, int layer) const
{
    const auto it = m_byRole.find({ layer, role });
    return it == m_byRole.end() ? nullptr : it->second;
}

int DecodeRegions::pieces() const
{
    const ModelConfig& config = m_graph.config;
    return int(std::max<std::int64_t>(1, config.numExperts)) * (gated(config) ? 3 : 2);
}

int DecodeRegions::sharedPieces() const
{
    const ModelConfig& config = m_graph.config;
    return int(std::max<std::int64_t>(1, config.numSharedExperts)) * (gated(config) ? 3 : 2);
}

int DecodeRegions::hiddenLanes(int system) const
{
    return system >= 0 && system < int(m_hiddenLanes.size()) ? m_hiddenLanes[std::size_t(system)] : 0;
}

int DecodeRegions::rowsPerHead(int layer) const
{
    return layer >= 0 && layer < int(m_rowsPerHead.size()) ? m_rowsPerHead[std::size_t(layer)] : 1;
}

int DecodeRegions::ffnLanes(int layer) const
{
    const ModelConfig& config = m_graph.config;
    int columns = 0;
    int rows = 0;
    if (const Region* down = find(OpRole::Down, layer)) {
        columns = down->rect.w;
        rows = down->rect.h;
    } else if (const Region* experts = find(OpRole::Experts, layer)) {
        columns = experts->rect.w / pieces();
        rows = experts->rect.h;
    }
    return int(std::max<std::int64_t>(
        0, std::min<std::int64_t>({ rows, kTurnColors * std::int64_t(columns), config.filterSize })));
}

std::optional<DecodeRegionCost> DecodeRegions::cost(const Region& region, std::int64_t position) const
{
    if (!m_layout || region.op < 0 || region.op >= int(m_graph.ops.size())
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
    const std::int64_t headDim = headDimOf(config);
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
    const auto gemv
        = [&](int width, int firstColumn, std::vector<DecodeLane> in, std::vector<DecodeLane> out, Epilogue epilogue) {
              DecodeGemvShape shape;
              shape.width = width;
              shape.height = h;
              shape.firstColumn = firstColumn;
              shape.inputs = std::move(in);
              shape.outputs = std::move(out);
              shape.epilogue = epilogue;
              shape.simdWidth = m_simd;
              shape.treeReduced = region.kernel.treeReduced;
              return costDecodeGemv(shape);
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
        std::vector<DecodeLane> out = headLanes;
        if (withKv) {
            std::vector<std::int64_t> sizes(std::size_t(h), 0);
            for (const DecodeLane& lane : headLanes)
                sizes[std::size_t(lane.row)] += lane.size;
            for (const DecodeLane& lane : evenLanes(int(std::min<std::int64_t>(2 * kvWidth, h)), 2 * kvWidth))
                sizes[std::size_t(lane.row)] += lane.size;
            out.clear();
            for (int row = 0; row < h; ++row)
                if (sizes[std::size_t(row)] > 0)
                    out.push_back({ row, sizes[std::size_t(row)] });
        }
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
            return DecodeRegionCost { normGemv(ffn(), gated(config) ? Epilogue::Round : Epilogue::Activation),
                RegionKernelKind::NormGemv, normCycles };
        if (role == OpRole::Gate)
            return DecodeRegionCost { gemv(w, 0, hidden, ffn(), Epilogue::Gated), RegionKernelKind::Gemv };
        if (role == OpRole::Down)
            return DecodeRegionCost { gemv(w, 0, ffn(), hidden, Epilogue::Residual), RegionKernelKind::Gemv };
        if (role == OpRole::Router) // the routing weights on the first row, their softmax and top k at its exit
            return DecodeRegionCost { normGemv({ { 0, config.numExperts } }, Epilogue::Route),
                RegionKernelKind::NormGemv, normCycles };
        if (role == OpRole::Experts && w >= pieces()) {
            // From the router's last step: its routing weights cross the region while the
            // experts' inputs are already in (core/engine/costmodel.h).
            DecodeExpertsShape experts;
            experts.width = w;
            experts.height = h;
            experts.experts = int(std::max<std::int64_t>(1, config.numExperts));
            experts.topK = int(std::max<std::int64_t>(1, config.topK));
            experts.gatedFfn = gated(config);
            experts.hidden = hidden;
            experts.ffn = ffn();
            experts.simdWidth = m_simd;
            experts.treeReduced = region.kernel.treeReduced;
            return DecodeRegionCost { costDecodeExperts(experts), RegionKernelKind::Experts };
        }
        if (role == OpRole::SharedExperts && w >= sharedPieces()) {
            // Every token's experts, after the routed ones: no routing weights to wait for, the
            // input lanes streamed in again, the outputs summed from exit to exit with the residual.
            DecodeExpertsShape shared;
            shared.width = w;
            shared.height = h;
            shared.experts = int(std::max<std::int64_t>(1, config.numSharedExperts));
            shared.topK = shared.experts;
            shared.routed = false;
            shared.gatedFfn = gated(config);
            shared.hidden = hidden;
            shared.ffn = ffn();
            shared.simdWidth = m_simd;
            shared.treeReduced = region.kernel.treeReduced;
            return DecodeRegionCost { costDecodeExperts(shared), RegionKernelKind::Experts };
        }
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
    const Region* head = find(OpRole::LmHead);
    const Region* embedding = find(OpRole::Embedding);
    if (!head || !embedding || head->system != embedding->system || hiddenLanes(head->system) < 1)
        return 0.0;
    return double(
        std::abs(head->rect.y + head->rect.h - 1 - embedding->rect.y) + std::abs(head->rect.x - embedding->rect.x));
}

} // namespace waferscope::core::engine
