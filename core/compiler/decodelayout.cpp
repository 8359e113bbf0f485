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

} // namespace waferscope::core
