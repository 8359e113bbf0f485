// No header of its own: defines WaferDecoder's prefill (waferdecoderimpl.h) and its builder's
// prefill phase (waferdecoderbuilder.h).
//
// The prompt's positions before the last run at once, as WaferLLM's prefill does: the embedding
// and every block on one g x g block of PEs below the plan's regions (g the heads), each kernel
// taking its inputs where the one before left them (prefilllayer.h). As each block finishes, its
// keys and values move into the block's decode attention region: along each row of the prefill
// block (a head's), a chain gathers the row's token bands in turn into a tree that climbs to the
// head's row of the attention region and runs along it, where the PE of each position's column
// keeps that position's key and value and stores them in its cache slot, as a token would (in
// rounds of a position a column when the prompt is longer than the region is wide).
#include "core/cyclelevel/waferdecoderbuilder.h"

#include "core/cyclelevel/kernels/kernelsupport.h"
#include "core/kernels/prefillcachemove.h"

#include <algorithm>
#include <bit>
#include <chrono>

namespace waferscope::core::cyclelevel {

using namespace fabric;

std::optional<std::string> WaferDecoder::Impl::Builder::buildPrefill(std::int64_t sramPerPeBytes)
{
    const std::int64_t tokens = m_options.prefillTokens;
    if (const std::optional<std::string> why = PrefillLayer::unsupported(m_s))
        return why;
    const int g = int(m_s.heads);
    for (const Layer& block : m_impl.layers) {
        const AttentionSpec& attention = block.attention->spec();
        if (attention.rowsPerHead != 1)
            return "the attention region " + attention.name + " splits a head over rows";
        const int columns = int(std::min<std::int64_t>(tokens, attention.frame.w));
        const int west = std::min(attention.frame.x(0), attention.frame.x(columns - 1));
        if (west <= 2 * g)
            return "the attention region " + attention.name + " starts too far west for the prefill block's trees";
    }
    int bottom = 0;
    for (const Measured& region : m_impl.measured)
        bottom = std::max(bottom, region.frame.y0 + region.frame.h);
    StaticColorFabric& wafer = *m_impl.fabric;
    const int y0 = bottom + 1;
    if (y0 + g > wafer.height() || 2 * g + 1 > wafer.width())
        return "no room below the plan's regions for a " + std::to_string(g) + " x " + std::to_string(g)
            + " prefill block";
    auto built = std::make_unique<Prefill>();
    built->frame = Frame { 0, y0, g, g, false };
    built->tokens = tokens;
    // The block's SRAM as it was, to give back if the prefill does not fit.
    std::vector<std::pair<std::size_t, std::size_t>> before;
    for (int y = 0; y < g; ++y)
        for (int x = 0; x < g; ++x)
            before.push_back({ wafer.pe(x, y0 + y).f32.size(), wafer.pe(x, y0 + y).f16.size() });
    const auto giveBack = [&] {
        for (int i = 0; i < g * g; ++i) {
            PeState& pe = wafer.pe(i % g, y0 + i / g);
            pe.f32.resize(before[std::size_t(i)].first);
            pe.f16.resize(before[std::size_t(i)].second);
        }
    };
    try {
        PrefillEmbeddingSpec lookup;
        lookup.name = "prefill.embedding";
        lookup.frame = built->frame;
        lookup.tokens = tokens;
        lookup.token = m_weights.tensor(Tensor::TokenEmbedding, 0, 0);
        if (m_s.positions == DecoderShape::Positions::Learned)
            lookup.position = m_weights.tensor(Tensor::PositionEmbedding, 0, 0);
        built->embedding = std::make_unique<PrefillEmbeddingKernel>(lookup, m_context);
        built->embedding->load(wafer);
        std::vector<PrefillOutputTile> x = built->embedding->outputTiles();
        int offset = built->embedding->outputOffset();
        // One arena of buffers for every block: the 16-bit weights of each block stay, but each
        // block's f32 buffers start where the first block's did (the same kernels allocate the
        // same buffers, so the input a block takes is where the one before left it, beyond what
        // its own kernels write before they read it). A PE then holds every block's weights and
        // one block's buffers.
        std::vector<std::size_t> arena;
        for (int i = 0; i < g * g; ++i)
            arena.push_back(wafer.pe(i % g, y0 + i / g).f32.size());
        for (int layer = 0; layer < int(m_s.layers); ++layer) {
            for (int i = 0; layer > 0 && i < g * g; ++i)
                wafer.pe(i % g, y0 + i / g).f32.resize(arena[std::size_t(i)]);
            built->layers.push_back(
                std::make_unique<PrefillLayer>(m_s, m_weights, layer, built->frame, tokens, x, offset, m_context));
            built->layers.back()->load(wafer);
            x = built->layers.back()->outputTiles();
            offset = built->layers.back()->outputOffset();
        }
    } catch (const std::logic_error& error) {
        giveBack();
        return std::string(error.what());
    }
    std::int64_t peak = 0;
    for (int i = 0; i < g * g; ++i)
        peak = std::max(peak, wafer.pe(i % g, y0 + i / g).sramBytes());
    if (peak > sramPerPeBytes) {
        giveBack();
        return "the prefill kernels would hold " + std::to_string(peak) + " bytes at a PE of the " + std::to_string(g)
            + " x " + std::to_string(g) + " block; a PE has " + std::to_string(sramPerPeBytes);
    }
    if (std::optional<std::string> why = placePrefillRoutes(*built)) {
        giveBack();
        return why;
    }
    m_impl.prefill = std::move(built);
    return std::nullopt;
}

// The block's rings, the ids' lanes from the host, the chains along its rows and each block's
// tree to its attention region. Routes that could not all be placed stay unused: their colors'
// deliveries are allowed to go unbound.
std::optional<std::string> WaferDecoder::Impl::Builder::placePrefillRoutes(Prefill& built)
{
    RouteBook& book = *m_impl.routes;
    StaticColorFabric& wafer = *m_impl.fabric;
    const Frame& frame = built.frame;
    const int g = frame.w;
    std::vector<std::pair<StreamTree, int>> placed;
    const auto keep = [&](StreamTree tree) {
        const int color = book.place(tree);
        placed.push_back({ std::move(tree), color });
        return color;
    };
    PrefillRings rings("prefill block", frame, g);
    try {
        built.embedding->needRings(rings);
        for (const auto& layer : built.layers)
            layer->needRings(rings);
        rings.place(book);
        built.embedding->useRings(rings);
        for (const auto& layer : built.layers)
            layer->useRings(rings);
        StreamTree ids("prefill ids from the host");
        for (const Lane& lane : built.embedding->lanes())
            ids.run(frame.x(0), lane.y, East, g, West, std::vector<bool>(std::size_t(g), true));
        built.idsColor = keep(std::move(ids));
        for (const Lane& lane : built.embedding->lanes())
            wafer.addEdgeSource(frame.x(0), lane.y, West, {});
        if (g > 1) {
            StreamTree chain[2] { StreamTree("prefill keys and values chain"),
                StreamTree("prefill keys and values chain") };
            // A hop of a row's chain where something passes it in some block: after a PE that
            // holds positions (which PEs do depends on the block's band offset). PE x sends on
            // chain[x % 2].
            for (int y = 0; y < g; ++y) {
                for (int x = 0; x + 1 < g; ++x) {
                    bool carries = false;
                    for (const auto& layer : built.layers)
                        for (const PrefillOutputTile& tile : layer->keyTiles())
                            carries
                                = carries || (tile.pe.x <= frame.x(x) && tile.pe.y == frame.y(y) && tile.tokens > 0);
                    if (!carries)
                        continue;
                    StreamTree& tree = chain[std::size_t(x % 2)];
                    tree.hop(frame.x(x), frame.y(y), Fabric::kRampPort, directionBit(East));
                    tree.hop(frame.x(x + 1), frame.y(y), West, kRampBit);
                }
            }
            if (!chain[0].empty())
                built.chain[0] = keep(std::move(chain[0]));
            if (!chain[1].empty())
                built.chain[1] = keep(std::move(chain[1]));
        }
        for (std::size_t layer = 0; layer < m_impl.layers.size(); ++layer) {
            const AttentionSpec& attention = m_impl.layers[layer].attention->spec();
            StreamTree tree(attention.name + " keys and values from the prefill");
            const int first = frame.x(g - 1);
            const int columns = int(std::min<std::int64_t>(built.tokens, attention.frame.w));
            const int west = std::min(attention.frame.x(0), attention.frame.x(columns - 1));
            const int east = std::max(attention.frame.x(0), attention.frame.x(columns - 1));
            for (int y = 0; y < g; ++y) {
                const int from = frame.y(y);
                const int turn = frame.x(g - 1) + 1 + y;
                const int to = attention.frame.y(y);
                tree.run(first, from, East, turn - first + 1, Fabric::kRampPort,
                    std::vector<bool>(std::size_t(turn - first + 1), false));
                tree.run(turn, from, North, from - to + 1, West, std::vector<bool>(std::size_t(from - to + 1), false));
                std::vector<bool> deliver(std::size_t(east - turn + 1), false);
                for (int x = west; x <= east; ++x)
                    deliver[std::size_t(x - turn)] = true;
                tree.run(turn, to, East, east - turn + 1, South, deliver);
            }
            built.delivery.push_back(keep(std::move(tree)));
        }
    } catch (const RouteError& error) {
        for (int i = 0; i < g * g; ++i)
            for (const std::vector<int>* colors : { &rings.rowColors(), &rings.columnColors() })
                for (const int color : *colors)
                    if (color >= 0)
                        wafer.allowUnboundDelivery(frame.x(i % g), frame.y(i / g), color);
        for (const auto& [tree, color] : placed)
            for (const Hop& hop : tree.hops())
                if (hop.tx & kRampBit)
                    wafer.allowUnboundDelivery(hop.x, hop.y, color);
        return std::string("its streams do not fit the fabric's colors beside the plan's: ") + error.what();
    }
    return std::nullopt;
}

void WaferDecoder::Impl::programPrefill(ProgramWriter& writer) const
{
    prefill->embedding->program(writer, prefill->idsColor);
    for (std::size_t layer = 0; layer < prefill->layers.size(); ++layer) {
        prefill->layers[layer]->program(writer);
        programCacheMove(writer, layer);
    }
}

// Block `layer`'s keys and values to its attention region, in rounds of a position a column of
// the region (round r: positions r w .. r w + w - 1). In each round, along each row of the
// prefill block a chain: PE x relays what the PEs before it sent and then sends its positions'
// keys and values, the last PE into the row's tree; every PE of the head's row of the attention
// region takes the round's stream and keeps its position's.
void WaferDecoder::Impl::programCacheMove(ProgramWriter& writer, std::size_t layer) const
{
    const Frame& frame = prefill->frame;
    const int g = frame.w;
    const auto d = std::uint32_t(shape.headDim);
    const std::vector<PrefillOutputTile>& keys = prefill->layers[layer]->keyTiles();
    const std::vector<PrefillOutputTile>& values = prefill->layers[layer]->valueTiles();
    const auto tileAt = [&](const std::vector<PrefillOutputTile>& tiles, int x, int y) -> const PrefillOutputTile* {
        for (const PrefillOutputTile& tile : tiles)
            if (tile.pe.x == frame.x(x) && tile.pe.y == frame.y(y))
                return &tile;
        return nullptr;
    };
    const int delivery = prefill->delivery[layer];
    const AttentionKernel& attention = *layers[layer].attention;
    const auto w = std::int64_t(attention.spec().frame.w);
    const std::int64_t tokens = prefill->tokens;
    const std::int64_t columns = std::min(tokens, w);
    for (std::int64_t round = 0; round * w < tokens; ++round) {
        const std::int64_t first = round * w;
        const auto inRound = std::uint32_t(std::min(tokens - first, w));
        const std::uint32_t lane = 2 * d * inRound;
        for (int y = 0; y < g; ++y) {
            std::uint32_t sent = 0; // the round's positions the row's PEs before this one sent
            std::vector<std::int64_t> skips(std::size_t(inRound), 0);
            for (int x = 0; x < g; ++x) {
                const int out = x + 1 == g ? delivery : prefill->chain[x % 2];
                const int pex = frame.x(x);
                const int pey = frame.y(y);
                if (x > 0 && sent > 0) {
                    // The relay forwards as the wavelets come: the PE's own sends of the round
                    // before must have left first, or the two would interleave on `out`.
                    writer.awaitSend(pex, pey);
                    writer.armAndAwait(pex, pey, prefill->chain[(x - 1) % 2], relayTask(2 * d * sent, out));
                }
                const PrefillOutputTile* key = tileAt(keys, x, y);
                const PrefillOutputTile* value = tileAt(values, x, y);
                if (!key || !value)
                    continue;
                for (std::uint32_t t = 0; t < key->tokens; ++t) {
                    const std::int64_t position = key->firstToken + t;
                    if (position < first || position >= first + w)
                        continue;
                    writer.send(pex, pey, out, key->offset + t * d, d);
                    writer.send(pex, pey, out, value->offset + t * d, d);
                    skips[std::size_t(position - first)] = 2 * d * sent;
                    ++sent;
                }
            }
            for (std::int64_t u = 0; u < columns; ++u) {
                const std::int64_t position = first + u;
                attention.programCacheFill(writer, y, int(u),
                    position < tokens ? std::optional(position) : std::nullopt, delivery, lane,
                    position < tokens ? std::uint32_t(skips[std::size_t(u)]) : 0);
            }
        }
    }
}

// The prefill's closed form: the embedding, then each block's kernels one after another and its
// cache move (each from the closed forms of core/kernels, built from the kernels' own specs). A
// move's way to the region overlaps the next block's kernels, which go on once the stream has
// left the block: only the last block's counts its hops.
double WaferDecoder::Impl::prefillModelCycles() const
{
    const Frame& frame = prefill->frame;
    const int g = frame.w;
    double cycles = prefill->embedding->closedForm().cycles;
    for (std::size_t layer = 0; layer < prefill->layers.size(); ++layer) {
        cycles += prefill->layers[layer]->closedFormCycles();
        const Frame& region = layers[layer].attention->spec().frame;
        const int columns = int(std::min<std::int64_t>(prefill->tokens, region.w));
        const int east = std::max(region.x(0), region.x(columns - 1));
        int hops = 0;
        for (int y = 0; layer + 1 == prefill->layers.size() && y < g;
             ++y) // up the row's turn, east along the head's row
            hops = std::max(hops, frame.y(y) - region.y(y) + east - frame.x(g - 1));
        cycles += costPrefillCacheMove({ g, int(shape.headDim), prefill->tokens, region.w, hops }).cycles;
    }
    return cycles;
}

std::vector<float> WaferDecoder::cached(int layer, int head, std::int64_t position, bool value) const
{
    return m_impl->layers[std::size_t(layer)].attention->cached(*m_impl->fabric, head, position, value);
}

bool WaferDecoder::hasPrefill() const
{
    return m_impl->prefill != nullptr;
}

const std::string& WaferDecoder::prefillRefusal() const
{
    return m_impl->prefillRefusal;
}

Expected<PrefillOnFabric> WaferDecoder::prefill(std::span<const std::int32_t> prompt)
{
    Impl& impl = *m_impl;
    if (!impl.prefill || std::int64_t(prompt.size()) != impl.prefill->tokens)
        return Diagnostic { "--level", 0, 0,
            "internal error: no prefill kernels for a prompt of " + std::to_string(prompt.size()) + " positions",
            Diagnostic::Kind::Internal };
    const auto start = std::chrono::steady_clock::now();
    StaticColorFabric& fabric = *impl.fabric;
    const Frame& frame = impl.prefill->frame;
    try {
        impl.prefill->embedding->takePrompt(prompt);
    } catch (const std::logic_error& error) {
        return Diagnostic { "--prompt", 0, 0, error.what() };
    }
    const std::vector<float> ids = impl.prefill->embedding->feed();
    for (const Lane& lane : impl.prefill->embedding->lanes())
        for (std::uint32_t i = lane.begin; i < lane.end; ++i)
            fabric.feedEdgeSource(
                frame.x(0), lane.y, Wavelet::colored(impl.prefill->idsColor, std::bit_cast<std::uint32_t>(ids[i])));
    ProgramWriter writer(fabric);
    if (!impl.validated) { // routes against both programs: the prefill's and a token's
        impl.programToken(writer, impl.prefill->tokens, true);
        impl.programPrefill(writer);
        if (const std::optional<std::string> error = fabric.validateRoutes())
            return Diagnostic { "--level", 0, 0, "internal route error: " + *error, Diagnostic::Kind::Internal };
        impl.validated = true;
    }
    writer.clearPrograms();
    impl.programPrefill(writer);
    Expected<std::uint64_t> cycles = impl.runPrograms(impl.prefill->tokens - 1);
    if (!cycles)
        return cycles.error();
    PrefillOnFabric result;
    result.positions = impl.prefill->tokens;
    result.cycles = *cycles;
    result.block = frame.w;
    result.modelCycles = impl.prefillModelCycles();
    result.wallS = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

} // namespace waferscope::core::cyclelevel
