#include "core/compiler/decodelayout.h"

#include "core/kernels/kernelspec.h"

#include <algorithm>

namespace waferscope::core {

namespace {

// A stacked plan's rows per query head in `layer`: as many as the attention region has for each
// head, no more than the output projection's columns can turn down (kTurnColors lanes a column)
// nor than a head has dimensions.
int rowsPerHeadOf(const ModelConfig& config, const DecodeRegionIndex& index, int layer)
{
    const Region* core = index.find(OpRole::AttentionCore, layer);
    const Region* out = index.find(OpRole::AttentionOut, layer);
    if (!core || !out || config.numHeads < 1 || config.numHeads > core->rect.h)
        return 1;
    const std::int64_t rows = std::min<std::int64_t>(
        core->rect.h / config.numHeads, std::int64_t(kTurnColors) * out->rect.w / config.numHeads);
    return int(std::clamp<std::int64_t>(rows, 1, std::max<std::int64_t>(1, decodeHeadDim(config))));
}

// The feed-forward's inner values in `layer`: a lane per row, as many as the down projection's
// columns can turn (an expert's share of the experts region's columns), at most the inner size.
int ffnLanesOf(const ModelConfig& config, const DecodeRegionIndex& index, int layer)
{
    int columns = 0;
    int rows = 0;
    if (const Region* down = index.find(OpRole::Down, layer)) {
        columns = down->rect.w;
        rows = down->rect.h;
    } else if (const Region* experts = index.find(OpRole::Experts, layer)) {
        columns = experts->rect.w / expertPieces(config);
        rows = experts->rect.h;
    }
    return int(std::max<std::int64_t>(
        0, std::min<std::int64_t>({ rows, kTurnColors * std::int64_t(columns), config.filterSize })));
}

// Lanes of the hidden vector on each wafer.
std::vector<int> hiddenLanesOf(const ModelConfig& config, const DecodeRegionIndex& index, int wafers)
{
    std::vector<int> hidden(std::size_t(std::max(1, wafers)), int(std::max<std::int64_t>(0, config.hiddenSize)));
    if (!index.find(OpRole::Embedding) || !index.find(OpRole::LmHead) || config.numHeads < 1 || config.hiddenSize < 1)
        return std::vector<int>(hidden.size(), 0);
    for (const auto& [at, region] : index.all()) {
        if (region->system < 0 || region->system >= int(hidden.size()))
            continue;
        int& lanes = hidden[std::size_t(region->system)];
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
            lanes = std::min(lanes, kTurnColors * (w / expertPieces(config)));
        else if (role == OpRole::SharedExperts)
            lanes = std::min(lanes, kTurnColors * (w / sharedExpertPieces(config)));
    }
    for (int& lanes : hidden)
        lanes = std::max(0, lanes);
    return hidden;
}

// A stacked plan's q region computes k and v too: each row's outputs are its part of q and its
// share of the keys and values (2 kvWidth, dealt over the rows).
std::vector<DecodeLane> withKeysAndValues(const std::vector<DecodeLane>& queryLanes, std::int64_t kvWidth, int rows)
{
    std::vector<std::int64_t> sizes(std::size_t(rows), 0);
    for (const DecodeLane& lane : queryLanes)
        sizes[std::size_t(lane.row)] += lane.size;
    for (const DecodeLane& lane : decodeLanes(int(std::min<std::int64_t>(2 * kvWidth, rows)), 2 * kvWidth))
        sizes[std::size_t(lane.row)] += lane.size;
    std::vector<DecodeLane> out;
    for (int row = 0; row < rows; ++row)
        if (sizes[std::size_t(row)] > 0)
            out.push_back({ row, sizes[std::size_t(row)] });
    return out;
}

// A row per query head. With more heads than rows (the cycle-level kernel refuses those), each
// row takes its share of the heads one after the other, costed as one head of their combined
// width. A stacked plan's tall regions split each head's dimensions over `rowsPerHead` rows
// (AttentionSpec::rowsPerHead), so that q, attention and the output projection use them.
std::vector<DecodeLane> queryLanes(const ModelConfig& config, int rows, int rowsPerHead)
{
    const std::int64_t heads = config.numHeads;
    const std::int64_t headDim = decodeHeadDim(config);
    if (rowsPerHead <= 1)
        return decodeLanes(int(std::min<std::int64_t>(heads, rows)), heads * headDim);
    std::vector<DecodeLane> lanes;
    for (std::int64_t head = 0; head < heads; ++head)
        for (int r = 0; r < rowsPerHead; ++r)
            lanes.push_back(
                { int(head) * rowsPerHead + r, headDim * (r + 1) / rowsPerHead - headDim * r / rowsPerHead });
    return lanes;
}

} // namespace

bool inDecodedStack(const Op& op)
{
    return op.stack == Op::Stack::None || op.stack == Op::Stack::Decoder;
}

bool hasDecodeLayout(const ModelGraph& graph)
{
    return std::none_of(graph.ops.begin(), graph.ops.end(), [](const Op& op) { return op.role == OpRole::CrossQuery; });
}

DecodeRegionIndex::DecodeRegionIndex(const ModelGraph& graph, const ExecutionPlan& plan)
{
    if (!hasDecodeLayout(graph))
        return;
    for (const Region& region : plan.regions)
        if (region.replica == 0 && region.op >= 0 && region.op < int(graph.ops.size())
            && inDecodedStack(graph.ops[std::size_t(region.op)]))
            m_byRole.emplace(std::pair { region.layer < 0 ? -1 : region.layer, region.role }, &region);
}

const Region* DecodeRegionIndex::find(OpRole role, int layer) const
{
    const auto it = m_byRole.find({ layer, role });
    return it == m_byRole.end() ? nullptr : it->second;
}

std::int64_t decodeHeadDim(const ModelConfig& config)
{
    const std::int64_t heads = std::max<std::int64_t>(1, config.numHeads);
    return config.attentionInnerDim > 0 ? config.attentionInnerDim / heads : config.hiddenSize / heads;
}

bool gatedFfn(const ModelConfig& config)
{
    using enum ModelConfig::Activation;
    return config.activation == SwiGlu || config.activation == GeGlu || config.activation == ReGlu;
}

int expertPieces(const ModelConfig& config)
{
    return int(std::max<std::int64_t>(1, config.numExperts)) * (gatedFfn(config) ? 3 : 2);
}

int sharedExpertPieces(const ModelConfig& config)
{
    return int(std::max<std::int64_t>(1, config.numSharedExperts)) * (gatedFfn(config) ? 3 : 2);
}

DecodeLayout decodeLayoutOf(const ModelGraph& graph, const ExecutionPlan& plan)
{
    DecodeLayout layout;
    if (plan.mode != ExecutionMode::Inference)
        return layout;
    const ModelConfig& config = graph.config;
    const DecodeRegionIndex index(graph, plan);
    const auto blocks = std::size_t(std::max<std::int64_t>(0, config.numLayers));
    layout.rowsPerHead.assign(blocks, 1);
    layout.ffnLanes.assign(blocks, 0);
    for (std::size_t layer = 0; layer < blocks; ++layer) {
        if (plan.stackedLayers)
            layout.rowsPerHead[layer] = rowsPerHeadOf(config, index, int(layer));
        layout.ffnLanes[layer] = ffnLanesOf(config, index, int(layer));
    }
    layout.hiddenLanes = hiddenLanesOf(config, index, plan.numSystems);
    return layout;
}

DecodeLayout decodeLayoutFor(const ModelGraph& graph, const ExecutionPlan& plan)
{
    return plan.decodeLayout.hiddenLanes.empty() ? decodeLayoutOf(graph, plan) : plan.decodeLayout;
}

std::vector<DecodeLane> decodeLanes(int count, std::int64_t total)
{
    std::vector<DecodeLane> lanes;
    for (int i = 0; i < count; ++i)
        lanes.push_back({ i, total * (i + 1) / count - total * i / count });
    return lanes;
}

std::optional<DecodeGemvPlan> decodeGemvPlan(const ModelGraph& graph, const DecodeLayout& layout, const Region& region)
{
    const ModelConfig& config = graph.config;
    const int lanes = layout.hiddenLanesOn(region.system);
    if (lanes < 1 || region.op < 0 || region.op >= int(graph.ops.size()) || region.rect.w < 1 || region.rect.h < 1)
        return std::nullopt;
    const Op& op = graph.ops[std::size_t(region.op)];
    const int h = region.rect.h;
    const std::vector<DecodeLane> hidden = decodeLanes(lanes, config.hiddenSize);
    const std::vector<DecodeLane> queries = queryLanes(config, h, op.layer >= 0 ? layout.rowsPerHeadOf(op.layer) : 1);
    const bool rotary = config.positions == ModelConfig::Positions::Rotary;
    // A GEMV behind its fused norm: the norm in the region's first column, the GEMV in the rest;
    // a region of one column (a strip too full to widen it) runs the norm, then the GEMV, on it.
    const auto normed = [&](RegionKernelKind kernel, std::vector<DecodeLane> out, Epilogue epilogue) {
        return DecodeGemvPlan { kernel, true, region.rect.w >= 2 ? 1 : 0, hidden, std::move(out), epilogue };
    };
    const auto plain = [](std::vector<DecodeLane> in, std::vector<DecodeLane> out, Epilogue epilogue) {
        return DecodeGemvPlan { RegionKernelKind::Gemv, false, 0, std::move(in), std::move(out), epilogue };
    };
    // The kv heads' values (of k or v) dealt over the region's rows, from which the attention rows
    // of their query heads take them. (The cycle-level kernel computes a kv head on each of its
    // query heads' rows, which small models afford; with grouped queries on a large one that
    // would hold the weights many times over.)
    const std::int64_t kvWidth
        = std::clamp<std::int64_t>(config.numKvGroups, 1, config.numHeads) * decodeHeadDim(config);
    const std::vector<DecodeLane> ffn = decodeLanes(layout.ffnLanesOf(op.layer), config.filterSize);
    switch (region.role) {
    case OpRole::LmHead:
        return normed(RegionKernelKind::LmHead, decodeLanes(h, config.vocabSize), Epilogue::Logits);
    case OpRole::Query: {
        // A stacked plan's q region also holds k and v (one GEMV of the three on the same input):
        // each row's outputs are its part of q and its share of the keys and values.
        const bool withKv = std::any_of(region.fused.begin(), region.fused.end(),
            [&](int index) { return graph.ops[std::size_t(index)].role == OpRole::Key; });
        return normed(RegionKernelKind::NormGemv, withKv ? withKeysAndValues(queries, kvWidth, h) : queries,
            rotary ? Epilogue::Rotary : Epilogue::Round);
    }
    case OpRole::Key:
    case OpRole::Value:
        return plain(hidden, decodeLanes(int(std::min<std::int64_t>(kvWidth, h)), kvWidth),
            rotary && region.role == OpRole::Key ? Epilogue::Rotary : Epilogue::Round);
    case OpRole::AttentionOut:
        return plain(queries, hidden, Epilogue::Residual);
    default:
        break;
    }
    if (ffn.empty())
        return std::nullopt;
    switch (region.role) {
    case OpRole::Up:
        return normed(RegionKernelKind::NormGemv, ffn, gatedFfn(config) ? Epilogue::Round : Epilogue::Activation);
    case OpRole::Gate:
        return plain(hidden, ffn, Epilogue::Gated);
    case OpRole::Down:
        return plain(ffn, hidden, Epilogue::Residual);
    case OpRole::Router: // the routing weights on the first row, their softmax and top k at its exit
        return normed(RegionKernelKind::NormGemv, { { 0, config.numExperts } }, Epilogue::Route);
    default:
        return std::nullopt;
    }
}

} // namespace waferscope::core
