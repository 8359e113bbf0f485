#include "core/compiler/decoderegions.h"

#include <algorithm>
#include <cstdlib>

namespace waferscope::core {

namespace {

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
    const int w = region.rect.w;
    const int h = region.rect.h;
    if (w < 1 || h < 1)
        return std::nullopt;
    const std::vector<DecodeLane> hidden = decodeLanes(lanes, config.hiddenSize);
    std::vector<std::int64_t> hiddenSizes;
    for (const DecodeLane& lane : hidden)
        hiddenSizes.push_back(lane.size);
    if (std::optional<DecodeGemvPlan> plan = decodeGemvPlan(m_graph, m_layout, region)) {
        // The region's GEMV as the cycle-level kernel's spec (its geometry; the weights are the
        // cycle-level run's), lanes on the rows of a frame at the region's top.
        GemvSpec spec;
        spec.name = region.opName;
        spec.frame = Frame { 0, 0, w, h, false };
        spec.firstColumn = plan->firstColumn;
        spec.input = lanesAt(0, plan->input);
        spec.output = lanesAt(0, plan->output);
        spec.epilogue = plan->epilogue;
        spec.treeReduced = region.kernel.treeReduced;
        const KernelCost gemv = costDecodeGemv(spec, m_simd);
        if (!plan->normed)
            return DecodeRegionCost { gemv, plan->kernel };
        const KernelCost norm = costNormColumn({ hiddenSizes, config.norm != ModelConfig::Norm::RmsNorm, m_simd });
        const KernelCost cost = inSequence(norm, double(lanes), gemv, double(w) * double(h));
        return DecodeRegionCost { cost, plan->kernel, plan->kernel == RegionKernelKind::LmHead ? 0.0 : norm.cycles };
    }
    const std::int64_t heads = config.numHeads;
    const std::int64_t headDim = decodeHeadDim(config);
    if (region.role == OpRole::Embedding)
        return DecodeRegionCost { costEmbeddingLookup({ w, h, hiddenSizes, m_simd }), RegionKernelKind::Embedding };
    // A row per query head (queryLanes).
    const int headRows = int(std::min<std::int64_t>(heads, h));
    const std::int64_t headsPerRow = (heads + headRows - 1) / std::max(1, headRows);
    if (region.role == OpRole::AttentionCore)
        return DecodeRegionCost { costDecodeAttention(
                                      { w, h, headRows, int(headDim * headsPerRow), std::max<std::int64_t>(0, position),
                                          m_simd, op.layer >= 0 ? rowsPerHead(op.layer) : 1 }),
            RegionKernelKind::Attention };
    const std::vector<DecodeLane> ffn = decodeLanes(ffnLanes(op.layer), config.filterSize);
    if (ffn.empty())
        return std::nullopt;
    if (region.role == OpRole::Experts && w >= expertPieces(config))
        return DecodeRegionCost { costDecodeExperts(expertsShape(config, region, hidden, ffn, m_simd, false)),
            RegionKernelKind::Experts };
    if (region.role == OpRole::SharedExperts && w >= sharedExpertPieces(config))
        return DecodeRegionCost { costDecodeExperts(expertsShape(config, region, hidden, ffn, m_simd, true)),
            RegionKernelKind::Experts };
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
