// No header of its own: the stream phases of WaferDecoder::Impl::Builder (waferdecoderbuilder.h)
// and the hand-offs between strips (WaferDecoder::Impl::turn, waferdecoderimpl.h).
#include "core/cyclelevel/waferdecoderbuilder.h"

#include <algorithm>
#include <map>

namespace waferscope::core::cyclelevel {

using namespace fabric;

namespace {

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

int WaferDecoder::Impl::Builder::place(
    const std::string& name, int forward, const std::vector<Pe>& senders, const std::vector<std::vector<Pe>>& taps)
{
    return m_impl.routes->place(rowStreams(name, senders, taps, forward));
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

} // namespace waferscope::core::cyclelevel
