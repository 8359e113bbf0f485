#include "core/cyclelevel/waferdecoder.h"

#include "core/compiler/decodelayout.h"

#include "core/common/units.h"
#include "core/cyclelevel/regionkernels.h"
#include "core/cyclelevel/waferdecoderimpl.h"
#include "core/fabric/staticcolorfabric.h"

#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <map>

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

Expected<std::unique_ptr<WaferDecoder>> WaferDecoder::build(
    const ModelGraph& graph, const ExecutionPlan& plan, const SystemSpec& system, const FabricDecodeOptions& options)
{
    Expected<DecoderShape> shape = decoderShape(graph);
    if (!shape)
        return shape.error();
    const std::string file = graph.config.fileName;
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

    // The plan's regions of the decoded stack by block (-1 outside the blocks) and role.
    const DecodeRegionIndex decoded(graph, plan);
    const auto find = [&](OpRole role, int layer = -1) { return decoded.find(role, layer); };
    const Rect usable = plan.usable;
    const auto frameOf = [&](const Region& region, int stripY, int stripH, bool westward) {
        return Frame { region.rect.x - usable.x, stripY - usable.y, region.rect.w, stripH, westward };
    };
    const Region* embedding = find(OpRole::Embedding);
    const Region* head = find(OpRole::LmHead);
    if (!embedding || !head)
        return refuse("--level", "the plan has no embedding or LM head region");

    FabricConfig config;
    config.width = usable.w;
    config.height = usable.h;
    config.colors = std::clamp(system.wafer.routableColors, 1, kMaxColors);
    config.queueDepth = options.queueDepth;
    config.simdWidth = system.wafer.fmacPerPePerCycle;
    impl.fabric = std::make_unique<StaticColorFabric>(config);
    impl.fabric->setThreads(options.threads);
    impl.routes = std::make_unique<RouteBook>(*impl.fabric);
    const KernelContext& context = impl.context;
    const DecoderWeights& weights = impl.weights;
    const DecoderShape& s = impl.shape;
    const bool layerNorm = s.norm == DecoderShape::Norm::LayerNorm;
    const auto absent = WeightTensor::absent(s.storage);

    // Strips: one per block, then the LM head's.
    struct Strip {
        int y = 0;
        int h = 0;
        bool westward = false;
        std::vector<const Region*> regions;
    };
    std::vector<Strip> strips;
    const bool moe = s.experts > 0;
    std::vector<OpRole> parts { OpRole::Query, OpRole::Key, OpRole::Value, OpRole::AttentionCore,
        OpRole::AttentionOut };
    if (moe)
        parts.insert(parts.end(), { OpRole::Router, OpRole::Experts });
    else if (s.gated())
        parts.insert(parts.end(), { OpRole::Up, OpRole::Gate, OpRole::Down });
    else
        parts.insert(parts.end(), { OpRole::Up, OpRole::Down });
    // The columns of an MoE strip's experts region: the experts side by side, each its up, gate
    // and down projections (a third each; halves without a gate), in the strip's flow order.
    const int ffnParts = s.gated() ? 3 : 2;
    const auto subFrame = [](const Frame& frame, int begin, int end) {
        Frame sub = frame;
        sub.w = end - begin;
        sub.x0 = frame.westward ? frame.x0 + frame.w - end : frame.x0 + begin;
        return sub;
    };
    const auto expertFrames = [&](const Frame& frame) {
        std::vector<Frame> frames;
        const int pieces = int(s.experts) * ffnParts;
        for (int i = 0; i < pieces; ++i)
            frames.push_back(
                subFrame(frame, int(blockBegin(frame.w, pieces, i)), int(blockBegin(frame.w, pieces, i + 1))));
        return frames;
    };

    for (int layer = 0; layer < int(s.layers); ++layer) {
        Strip strip;
        for (const OpRole part : parts) {
            const Region* region = find(part, layer);
            if (!region)
                return refuse("--level",
                    "the plan has no " + std::string(toString(part)) + " region in block " + std::to_string(layer));
            strip.regions.push_back(region);
        }
        strip.y = strip.regions.front()->rect.y;
        for (const Region* region : strip.regions) {
            if (region->rect.y != strip.y)
                return refuse("--level", "the regions of block " + std::to_string(layer) + " do not share a strip");
            strip.h = std::max(strip.h, region->rect.h);
        }
        strip.westward = strip.regions.front()->rect.x > strip.regions.back()->rect.x;
        strips.push_back(strip);
    }
    // Lanes of the hidden vector: a row each, in every strip; a column each where a region
    // turns them (after its norm column), and a chain each in the embedding. The compiler decided
    // the layout (core/compiler/decodelayout.h), which the engine times too.
    impl.lanes = decodeLayoutFor(graph, plan).hiddenLanesOn(0);
    if (impl.lanes < 1)
        return refuse("--level", "the plan's regions are too narrow for the decode kernels");
    const int lanes = impl.lanes;
    const auto tooNarrow = [&](const Region& region, int columns, const std::string& why) -> std::optional<Diagnostic> {
        if (region.rect.w >= columns)
            return std::nullopt;
        return refuse("--level",
            "region " + region.opName + " is " + std::to_string(region.rect.w)
                + " columns wide; its cycle-level kernel needs " + std::to_string(columns) + " (" + why + ")");
    };

    // The feed-forward's hidden values: a lane per row, as many as the down projection has columns.
    const auto ffnLanes = [&](const Strip& strip, int y0) {
        const int down = moe ? strip.regions.back()->rect.w / int(s.experts * ffnParts) : strip.regions.back()->rect.w;
        return evenLanes(y0, int(std::min<std::int64_t>({ strip.h, kTurnColors * down, s.ffn })), std::uint32_t(s.ffn));
    };
    try {
        // The embedding, its lanes leaving downwards into block 0.
        {
            const Frame frame = frameOf(*embedding, embedding->rect.y, embedding->rect.h, false);
            EmbeddingSpec spec;
            spec.name = "embedding";
            spec.frame = frame;
            spec.lanes = evenLanes(0, lanes, std::uint32_t(s.hidden));
            spec.token = weights.tensor(Tensor::TokenEmbedding, 0, 0);
            spec.position = s.positions == DecoderShape::Positions::Learned
                ? weights.tensor(Tensor::PositionEmbedding, 0, 0)
                : absent;
            impl.embedding = std::make_unique<EmbeddingKernel>(spec, context);
            impl.measured.push_back({ embedding->opName, RegionKernelKind::Embedding, frame });
        }
        for (int layer = 0; layer < int(s.layers); ++layer) {
            const Strip& strip = strips[std::size_t(layer)];
            const int y0 = strip.y - usable.y;
            const auto frame
                = [&](std::size_t i) { return frameOf(*strip.regions[i], strip.y, strip.h, strip.westward); };
            const std::size_t qi = 0, ki = 1, vi = 2, ci = 3, oi = 4, ui = 5, gi = 6, di = s.gated() ? 7 : 6;
            if (auto error = tooNarrow(*strip.regions[oi], int(s.heads), "a column per head"))
                return *error;
            for (const std::size_t normed : { qi, ui })
                if (auto error = tooNarrow(*strip.regions[normed], 2, "its norm's column and a GEMV column"))
                    return *error;
            if (strip.h < s.heads)
                return refuse("--level",
                    "block " + std::to_string(layer) + " has " + std::to_string(strip.h)
                        + " rows; its attention needs one per head (" + std::to_string(s.heads) + ")");
            Impl::Layer block;
            const Lanes x = impl.hiddenLanes(y0);
            block.norm1 = std::make_unique<NormColumn>("layers." + std::to_string(layer) + ".norm1", frame(qi), x,
                s.norm, s.normEpsilon, weights.tensor(Tensor::Norm1Weight, layer, 0),
                layerNorm && s.normBias ? weights.tensor(Tensor::Norm1Bias, layer, 0) : absent, context);
            Lanes heads;
            Lanes kvHeads;
            const std::int64_t group = s.heads / s.kvHeads;
            for (int h = 0; h < int(s.heads); ++h) {
                heads.push_back({ y0 + h, std::uint32_t(h * s.headDim), std::uint32_t((h + 1) * s.headDim) });
                const auto g = std::uint32_t(h / group);
                kvHeads.push_back({ y0 + h, std::uint32_t(g * s.headDim), std::uint32_t((g + 1) * s.headDim) });
            }
            const bool rotary = s.positions == DecoderShape::Positions::Rotary;
            const auto gemvOn = [&](const std::string& name, const Frame& on, int firstColumn, Lanes input,
                                    Lanes output, Tensor weight, Tensor bias, bool hasBias, Epilogue epilogue,
                                    int expert, bool measure, bool tree) {
                GemvSpec spec;
                spec.name = name;
                spec.frame = on;
                spec.firstColumn = firstColumn;
                spec.input = std::move(input);
                spec.output = std::move(output);
                spec.weight = weights.tensor(weight, layer, std::max(expert, 0));
                spec.bias = hasBias ? weights.tensor(bias, layer, std::max(expert, 0)) : absent;
                spec.treeReduced = tree;
                spec.epilogue = epilogue;
                spec.activation = s.activation;
                spec.ropeTheta = s.ropeTheta;
                spec.experts = int(s.experts);
                spec.topK = int(s.topK);
                spec.expert = expert;
                spec.lastExpert = expert + 1 == int(s.experts);
                if (measure)
                    impl.measured.push_back(
                        { spec.name, firstColumn ? RegionKernelKind::NormGemv : RegionKernelKind::Gemv, spec.frame });
                return std::make_unique<GemvKernel>(std::move(spec), context);
            };
            const auto gemv = [&](std::size_t index, int firstColumn, Lanes input, Lanes output, Tensor weight,
                                  Tensor bias, bool hasBias, Epilogue epilogue) {
                return gemvOn(strip.regions[index]->opName, frame(index), firstColumn, std::move(input),
                    std::move(output), weight, bias, hasBias, epilogue, -1, true,
                    strip.regions[index]->kernel.treeReduced);
            };
            block.q
                = gemv(qi, 1, x, heads, Tensor::Wq, Tensor::Bq, s.qkvBias, rotary ? Epilogue::Rotary : Epilogue::Round);
            block.k = gemv(
                ki, 0, x, kvHeads, Tensor::Wk, Tensor::Bk, s.qkvBias, rotary ? Epilogue::Rotary : Epilogue::Round);
            block.v = gemv(vi, 0, x, kvHeads, Tensor::Wv, Tensor::Bv, s.qkvBias, Epilogue::Round);
            {
                AttentionSpec spec;
                spec.name = strip.regions[ci]->opName;
                spec.frame = frame(ci);
                spec.heads = int(s.heads);
                spec.headDim = int(s.headDim);
                spec.capacity = options.capacity;
                spec.alibi = s.positions == DecoderShape::Positions::Alibi;
                spec.q = heads;
                spec.k = kvHeads;
                spec.v = kvHeads;
                block.attention = std::make_unique<AttentionKernel>(spec, context);
                impl.measured.push_back({ spec.name, RegionKernelKind::Attention, spec.frame });
            }
            block.out
                = gemv(oi, 0, block.attention->outputLanes(), x, Tensor::Wo, Tensor::Bo, s.outBias, Epilogue::Residual);
            block.norm3 = std::make_unique<NormColumn>("layers." + std::to_string(layer) + ".norm3", frame(ui), x,
                s.norm, s.normEpsilon, weights.tensor(Tensor::Norm3Weight, layer, 0),
                layerNorm && s.normBias ? weights.tensor(Tensor::Norm3Bias, layer, 0) : absent, context);
            const Lanes f = ffnLanes(strip, y0);
            const Epilogue upEpilogue = s.gated() ? Epilogue::Round : Epilogue::Activation;
            if (!moe) {
                Impl::Ffn ffn;
                ffn.up = gemv(ui, 1, x, f, Tensor::WUp, Tensor::BUp, s.ffnBias, upEpilogue);
                if (s.gated())
                    ffn.gate = gemv(gi, 0, x, f, Tensor::WGate, Tensor::BGate, s.ffnBias, Epilogue::Gated);
                ffn.down = gemv(di, 0, f, x, Tensor::WDown, Tensor::BDown, s.ffnBias, Epilogue::Residual);
                block.ffn.push_back(std::move(ffn));
            } else {
                // The router (its norm in column 0) leaves the routing weights on its first row;
                // each expert's projections dispatch on them and the downs sum their weighted outputs.
                block.router = gemv(ui, 1, x, Lanes { { y0, 0, std::uint32_t(s.experts) } }, Tensor::Router,
                    Tensor::Router, false, Epilogue::Route);
                const std::vector<Frame> pieces = expertFrames(frame(6));
                const std::string name = strip.regions[6]->opName;
                const bool tree = strip.regions[6]->kernel.treeReduced;
                impl.measured.push_back({ name, RegionKernelKind::Experts, frame(6), block.router.get() });
                for (int e = 0; e < int(s.experts); ++e) {
                    const auto piece = [&](int i) { return pieces[std::size_t(e * ffnParts + i)]; };
                    const std::string expert = name + "." + std::to_string(e);
                    Impl::Ffn ffn;
                    ffn.up = gemvOn(expert + ".up", piece(0), 0, x, f, Tensor::WUp, Tensor::BUp, s.ffnBias, upEpilogue,
                        e, false, tree);
                    if (s.gated())
                        ffn.gate = gemvOn(expert + ".gate", piece(1), 0, x, f, Tensor::WGate, Tensor::BGate, s.ffnBias,
                            Epilogue::Gated, e, false, tree);
                    ffn.down = gemvOn(expert + ".down", piece(ffnParts - 1), 0, f, x, Tensor::WDown, Tensor::BDown,
                        s.ffnBias, Epilogue::Combine, e, false, tree);
                    block.ffn.push_back(std::move(ffn));
                }
            }
            impl.layers.push_back(std::move(block));
        }
        {
            // The LM head's norm column on the side where the last block's lanes come down.
            const Frame frame = frameOf(*head, head->rect.y, head->rect.h, !strips.back().westward);
            const int y0 = head->rect.y - usable.y;
            impl.finalNorm = std::make_unique<NormColumn>("final_norm", frame, impl.hiddenLanes(y0), s.norm,
                s.normEpsilon, weights.tensor(Tensor::FinalNormWeight, 0, 0),
                layerNorm && s.normBias ? weights.tensor(Tensor::FinalNormBias, 0, 0) : absent, context);
            GemvSpec spec;
            spec.name = head->opName;
            spec.frame = frame;
            spec.firstColumn = 1;
            spec.input = impl.hiddenLanes(y0);
            spec.output = evenLanes(y0, head->rect.h, std::uint32_t(s.vocab));
            spec.weight = weights.tensor(Tensor::LmHead, 0, 0);
            spec.bias = s.lmHeadBias ? weights.tensor(Tensor::LmHeadBias, 0, 0) : absent;
            spec.epilogue = Epilogue::Logits;
            spec.treeReduced = head->kernel.treeReduced;
            impl.lmHead = std::make_unique<GemvKernel>(spec, context);
            impl.measured.push_back({ head->opName, RegionKernelKind::LmHead, frame });
        }

        // Colors: every kernel's own streams, then the streams between regions.
        RouteBook& book = *impl.routes;
        impl.embedding->route(book);
        for (Impl::Layer& block : impl.layers) {
            block.norm1->route(book);
            block.q->route(book);
            block.k->route(book);
            block.v->route(book);
            block.attention->route(book);
            block.out->route(book);
            block.norm3->route(book);
            if (block.router)
                block.router->route(book);
            for (Impl::Ffn& ffn : block.ffn) {
                ffn.up->route(book);
                if (ffn.gate)
                    ffn.gate->route(book);
                ffn.down->route(book);
            }
        }
        impl.finalNorm->route(book);
        impl.lmHead->route(book);

        const auto exitsOf = [](const auto& kernel, std::size_t count) {
            std::vector<Pe> pes;
            for (std::size_t i = 0; i < count; ++i)
                pes.push_back(kernel.exit(i));
            return pes;
        };
        const auto concat = [](std::vector<std::vector<Pe>> into, const std::vector<std::vector<Pe>>& more) {
            for (std::size_t i = 0; i < into.size(); ++i)
                into[i].insert(into[i].end(), more[i].begin(), more[i].end());
            return into;
        };
        const auto tapsOf = [](const auto& kernel, std::size_t count) {
            std::vector<std::vector<Pe>> taps;
            for (std::size_t i = 0; i < count; ++i)
                taps.push_back(kernel.taps(i));
            return taps;
        };
        const auto exitTaps = [](const auto& kernel, std::size_t count) {
            std::vector<std::vector<Pe>> taps;
            for (std::size_t i = 0; i < count; ++i)
                taps.push_back({ kernel.exit(i) });
            return taps;
        };
        std::vector<std::uint32_t> laneSizes;
        for (const Lane& lane : impl.hiddenLanes(0))
            laneSizes.push_back(lane.size());
        const auto L = std::size_t(lanes);
        for (std::size_t layer = 0; layer < impl.layers.size(); ++layer) {
            Impl::Layer& block = impl.layers[layer];
            const Strip& strip = strips[layer];
            const int forward = strip.westward ? West : East;
            const std::string name = "layers." + std::to_string(layer);
            std::vector<int> rows;
            for (const Lane& lane : impl.hiddenLanes(strip.y - usable.y))
                rows.push_back(lane.y);
            const std::vector<std::vector<Pe>> xTaps = concat(tapsOf(*block.norm1, L), exitTaps(*block.out, L));
            if (layer == 0)
                block.in
                    = impl.turn(name + " input", exitsOf(*impl.embedding, L), rows, xTaps, laneSizes, true, forward);
            else
                block.in = impl.turn(name + " input", exitsOf(impl.layers[layer - 1].last(), L), rows, xTaps, laneSizes,
                    false, strips[layer - 1].westward ? West : East);
            const auto place = [&](const std::string& what, const std::vector<Pe>& senders,
                                   const std::vector<std::vector<Pe>>& taps) {
                return book.place(rowStreams(name + " " + what, senders, taps, forward));
            };
            const auto normExits = [&](const NormColumn& norm) { return exitsOf(norm, L); };
            block.a = place("norm1", normExits(*block.norm1),
                concat(concat(tapsOf(*block.q, L), tapsOf(*block.k, L)), tapsOf(*block.v, L)));
            const auto H = std::size_t(s.heads);
            block.qs = place("q", exitsOf(*block.q, H), tapsOf(*block.attention, H));
            block.ks = place("k", exitsOf(*block.k, H), tapsOf(*block.attention, H));
            block.vs = place("v", exitsOf(*block.v, H), tapsOf(*block.attention, H));
            block.o = place("attention", exitsOf(*block.attention, H), tapsOf(*block.out, H));
            block.x2
                = place("residual", exitsOf(*block.out, L), concat(tapsOf(*block.norm3, L), exitTaps(block.last(), L)));
            std::vector<std::vector<Pe>> bTaps(L);
            if (block.router)
                bTaps = concat(bTaps, tapsOf(*block.router, L));
            for (const Impl::Ffn& ffn : block.ffn) {
                bTaps = concat(bTaps, tapsOf(*ffn.up, L));
                if (ffn.gate)
                    bTaps = concat(bTaps, tapsOf(*ffn.gate, L));
            }
            block.b = place("norm3", normExits(*block.norm3), bTaps);
            for (std::size_t e = 0; e < block.ffn.size(); ++e) {
                Impl::Ffn& ffn = block.ffn[e];
                const auto F = ffn.up->spec().output.size();
                if (ffn.gate) {
                    ffn.u = place("up", exitsOf(*ffn.up, F), exitTaps(*ffn.gate, F));
                    ffn.h = place("gate", exitsOf(*ffn.gate, F), tapsOf(*ffn.down, F));
                } else {
                    ffn.u = place("up", exitsOf(*ffn.up, F), tapsOf(*ffn.down, F));
                }
                if (e + 1 < block.ffn.size())
                    ffn.combine = place("expert sum", exitsOf(*ffn.down, L), exitTaps(*block.ffn[e + 1].down, L));
            }
            if (block.router) {
                // The routing weights from the router's exit along its row, and down every column
                // of the experts to the PEs with work.
                const Pe from = block.router->exit(0);
                std::map<int, std::vector<int>> rowsAt; // column -> rows of workers
                for (const Impl::Ffn& ffn : block.ffn)
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
                        tree.hop(x, y, North,
                            std::uint8_t((y < lowest ? directionBit(South) : 0) | (worker ? kRampBit : 0)));
                    }
                }
                block.weights = book.place(tree);
            }
        }
        {
            std::vector<int> rows;
            for (const Lane& lane : impl.hiddenLanes(head->rect.y - usable.y))
                rows.push_back(lane.y);
            impl.intoHead = impl.turn("lm_head input", exitsOf(impl.layers.back().last(), L), rows,
                tapsOf(*impl.finalNorm, L), laneSizes, false, strips.back().westward ? West : East);
            const int forward = impl.finalNorm->exit(0).x < impl.lmHead->exit(0).x ? East : West;
            impl.f
                = book.place(rowStreams("final norm", exitsOf(*impl.finalNorm, L), tapsOf(*impl.lmHead, L), forward));
        }
        // Token ids: from the host through the root's north edge, and from the LM head's argmax
        // up its column and along row 0 to the root.
        const Pe root = impl.embedding->root();
        {
            StreamTree host("token ids from the host");
            host.hop(root.x, root.y, North, kRampBit);
            impl.hostColor = book.place(host);
            impl.fabric->addEdgeSource(root.x, root.y, North, {});
            const Pe from = impl.lmHead->argmaxPe();
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
            impl.feedbackColor = book.place(back);
            // A token from the host leaves the feedback unarmed, and the other way round.
            impl.fabric->allowUnboundDelivery(root.x, root.y, impl.hostColor);
            impl.fabric->allowUnboundDelivery(root.x, root.y, impl.feedbackColor);
        }
    } catch (const RouteError& error) {
        return refuse("--level", std::string("the plan's streams do not fit the fabric's colors: ") + error.what());
    } catch (const std::logic_error& error) {
        return refuse("--level", std::string("the plan cannot be built on the fabric: ") + error.what());
    }

    // SRAM: the kernels of different regions touch different PEs, so blocks load in parallel.
    StaticColorFabric& fabric = *impl.fabric;
    impl.embedding->load(fabric);
    tbb::parallel_for(std::size_t(0), impl.layers.size(), [&](std::size_t layer) {
        Impl::Layer& block = impl.layers[layer];
        block.norm1->load(fabric);
        block.q->load(fabric);
        block.k->load(fabric);
        block.v->load(fabric);
        block.attention->load(fabric);
        block.out->load(fabric);
        block.norm3->load(fabric);
        if (block.router)
            block.router->load(fabric);
        for (Impl::Ffn& ffn : block.ffn) {
            ffn.up->load(fabric);
            if (ffn.gate)
                ffn.gate->load(fabric);
            ffn.down->load(fabric);
        }
    });
    impl.finalNorm->load(fabric);
    impl.lmHead->load(fabric);
    if (const auto peak = std::int64_t(decoder->peakSramBytesPerPe()); peak > system.wafer.sramPerPeBytes)
        return refuse("--level",
            "a PE would hold " + std::to_string(peak) + " bytes; the wafer's PEs have "
                + std::to_string(system.wafer.sramPerPeBytes));
    return decoder;
}

} // namespace waferscope::core::cyclelevel
