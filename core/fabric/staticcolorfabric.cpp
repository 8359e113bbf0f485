#include "core/fabric/staticcolorfabric.h"

#include "core/common/memorybudget.h"
#include "core/fabric/statehasher.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace waferscope::core::fabric {

namespace {

std::string at(int x, int y)
{
    return "(" + std::to_string(x) + ", " + std::to_string(y) + ")";
}

} // namespace

StaticColorFabric::StaticColorFabric(const FabricConfig& config)
    : Fabric(config)
    , m_colors(config.colors)
    , m_stride((config.colors + 7) & ~7)
    , m_depth(config.queueDepth)
{
    if (config.colors < 1 || config.colors > kMaxColors)
        throw std::invalid_argument("colors must be 1..24");
    if (config.simdWidth < 1)
        throw std::invalid_argument("SIMD width must be positive");
    const auto pes = std::size_t(peCount());
    const auto slots = pes * std::size_t(m_stride);
    m_queueData.resize(pes * std::size_t(m_colors) * std::size_t(m_depth));
    m_queueHead.assign(slots, 0);
    m_queueCount.assign(slots, 0);
    m_routeTx.assign(slots, 0);
    m_routeRx.assign(slots, 0xff);
    for (int buffer = 0; buffer < 2; ++buffer) {
        m_out[buffer].assign(pes * kDirections, Wavelet {});
        m_occupancy[buffer].assign(slots, 0);
    }
    m_pes.resize(pes);
    for (PeState& state : m_pes)
        state.tasks.resize(std::size_t(m_colors));
    m_rowPrograms.assign(std::size_t(height()), RowPrograms {});
    m_queuedMask.assign(pes, 0);
    m_selfActive.assign(pes, 1);
    for (std::vector<std::uint8_t>& published : m_published)
        published.assign(pes, 0); // the buffers start empty
}

double StaticColorFabric::estimateBytes(const FabricConfig& config, std::int64_t edgeSources)
{
    const double pes = double(config.width) * double(config.height);
    const double stride = double((config.colors + 7) & ~7);
    const double slots = pes * stride; // the per-color byte arrays
    return sharedBytesFor(config) + heapBlockBytes(pes * config.colors * config.queueDepth * sizeof(Wavelet))
        + 4.0 * heapBlockBytes(slots) // queue heads and counts, route tx and rx
        + 2.0 * heapBlockBytes(pes * kDirections * sizeof(Wavelet)) + 2.0 * heapBlockBytes(slots) // m_out, m_occupancy
        + heapBlockBytes(pes * sizeof(PeState)) + pes * heapBlockBytes(config.colors * sizeof(DataTask))
        + heapBlockBytes(double(config.height) * sizeof(RowPrograms) + 64.0)
        + heapBlockBytes(pes * sizeof(std::uint32_t)) + 3.0 * heapBlockBytes(pes) // queued, self active, published
        + (edgeSources > 0 // the sources, appended one by one, and the source of each PE
                ? heapBlockBytes(double(std::bit_ceil(std::uint64_t(edgeSources))) * sizeof(EdgeSource))
                    + heapBlockBytes(pes * sizeof(std::int32_t))
                : 0.0);
}

void StaticColorFabric::startPrograms()
{
    for (int y = 0; y < height(); ++y) {
        std::int64_t count = 0;
        for (int x = 0; x < width(); ++x) {
            PeState& state = m_pes[std::size_t(index(x, y))];
            state.programWaiting = false;
            m_selfActive[std::size_t(index(x, y))] = 1;
            count += state.programDone() ? 0 : 1;
        }
        m_rowPrograms[std::size_t(y)].value = count;
    }
    setAllRowsActive();
}

std::int64_t StaticColorFabric::pendingPrograms() const
{
    std::int64_t pending = 0;
    for (const RowPrograms& row : m_rowPrograms)
        pending += row.value;
    return pending;
}

StaticColorFabric::~StaticColorFabric() = default;

void StaticColorFabric::setRoute(int x, int y, int color, int rx, std::uint8_t txMask)
{
    if (x < 0 || y < 0 || x >= width() || y >= height() || color < 0 || color >= m_colors || rx < 0 || rx > kRampPort
        || txMask == 0 || txMask > 0x1f)
        throw std::invalid_argument("bad route");
    const auto slot = std::size_t(index(x, y) * m_stride + color);
    m_routeRx[slot] = std::uint8_t(rx);
    m_routeTx[slot] = txMask;
}

void StaticColorFabric::addEdgeSource(int x, int y, int from, std::vector<Wavelet> stream)
{
    const bool onEdge = (from == North && y == 0) || (from == South && y == height() - 1) || (from == West && x == 0)
        || (from == East && x == width() - 1);
    if (!onEdge)
        throw std::invalid_argument("an edge source must enter through a mesh boundary link");
    if (m_edgeSourceOf.empty()) {
        m_edgeSourceOf.assign(std::size_t(peCount()), -1);
        m_rowWake.assign(std::size_t(height()), kNever);
        m_rowSources.assign(std::size_t(height()), { width(), 0 });
    }
    std::pair<int, int>& columns = m_rowSources[std::size_t(y)];
    columns = { std::min(columns.first, x), std::max(columns.second, x + 1) };
    m_edgeSourceOf[std::size_t(index(x, y))] = std::int32_t(m_edgeSources.size());
    m_edgeSources.push_back({ index(x, y), from, std::move(stream), 0, EdgeRate {} });
    m_selfActive[std::size_t(index(x, y))] = 1;
    setAllRowsActive();
}

void StaticColorFabric::setEdgeRate(int x, int y, EdgeRate rate)
{
    const std::int32_t source = m_edgeSourceOf.empty() ? -1 : m_edgeSourceOf[std::size_t(index(x, y))];
    if (source < 0)
        throw std::logic_error("no edge source at that PE");
    if (rate.wavelets < 1 || rate.cycles < rate.wavelets)
        throw std::invalid_argument("an edge rate is at most a wavelet a cycle, and more than none");
    m_edgeSources[std::size_t(source)].rate = rate;
    m_selfActive[std::size_t(index(x, y))] = 1; // a source asleep under the old rate
    setAllRowsActive();
}

void StaticColorFabric::feedEdgeSource(int x, int y, const Wavelet& wavelet)
{
    const std::int32_t source = m_edgeSourceOf.empty() ? -1 : m_edgeSourceOf[std::size_t(index(x, y))];
    if (source < 0)
        throw std::logic_error("no edge source at that PE");
    m_edgeSources[std::size_t(source)].stream.push_back(wavelet);
    m_selfActive[std::size_t(index(x, y))] = 1;
    setAllRowsActive();
}

void StaticColorFabric::addEdgeSink(int x, int y, int to, EdgeRate rate)
{
    const bool onEdge = (to == North && y == 0) || (to == South && y == height() - 1) || (to == West && x == 0)
        || (to == East && x == width() - 1);
    if (!onEdge)
        throw std::invalid_argument("an edge sink must leave through a mesh boundary link");
    if (rate.wavelets < 1 || rate.cycles < rate.wavelets)
        throw std::invalid_argument("an edge rate is at most a wavelet a cycle, and more than none");
    if (m_edgeSinkOf.empty())
        m_edgeSinkOf.assign(std::size_t(peCount()), -1);
    std::int32_t& sink = m_edgeSinkOf[std::size_t(index(x, y))];
    if (sink >= 0)
        throw std::logic_error("PE already has an edge sink");
    sink = std::int32_t(m_edgeSinks.size());
    m_edgeSinks.push_back({ to, rate, {} });
}

const std::vector<std::uint32_t>& StaticColorFabric::edgeSinkReceived(int x, int y) const
{
    const std::int32_t sink = m_edgeSinkOf.empty() ? -1 : m_edgeSinkOf[std::size_t(index(x, y))];
    if (sink < 0)
        throw std::logic_error("no edge sink at that PE");
    return m_edgeSinks[std::size_t(sink)].received;
}

void StaticColorFabric::feedEdgeSource(int x, int y, std::span<const Wavelet> wavelets)
{
    const std::int32_t source = m_edgeSourceOf.empty() ? -1 : m_edgeSourceOf[std::size_t(index(x, y))];
    if (source < 0)
        throw std::logic_error("no edge source at that PE");
    std::vector<Wavelet>& stream = m_edgeSources[std::size_t(source)].stream;
    stream.insert(stream.end(), wavelets.begin(), wavelets.end());
    m_selfActive[std::size_t(index(x, y))] = 1;
    setAllRowsActive();
}

bool StaticColorFabric::rowWeights(int current, std::vector<double>& weights) const
{
    constexpr double kRowCost = 16.0; // columns' worth: the row's flags and span, its neighbours'
    for (int y = 0; y < height() && std::size_t(y) < weights.size(); ++y) {
        const auto [lo, hi] = rowSpan(current, y);
        weights[std::size_t(y)] = rowActive(current, y) ? double(hi - lo) + kRowCost : 0.01 * kRowCost;
    }
    return true;
}

void StaticColorFabric::stepRows(const RowRange& rows)
{
    const int current = rows.current;
    const int next = current ^ 1;
    for (int y = rows.begin; y < rows.end; ++y) {
        const bool waking = !m_rowWake.empty() && m_rowWake[std::size_t(y)] <= rows.cycle;
        if (!waking && rowAndNeighboursIdle(y, current)) {
            // Nothing can arrive and nothing is queued: the row's next state is empty. Clear it
            // only if that buffer still holds state from two cycles ago, so an idle row costs
            // one byte read.
            if (rowActive(next, y)) {
                const auto first = std::size_t(index(0, y));
                std::fill_n(
                    m_out[next].begin() + std::ptrdiff_t(first * kDirections), width() * kDirections, Wavelet {});
                std::fill_n(
                    m_occupancy[next].begin() + std::ptrdiff_t(first * std::size_t(m_stride)), width() * m_stride, 0);
                setRowActive(next, y, false);
            }
            continue;
        }
        countRowStep(y);
        // Only the columns that can have anything to do: those active last cycle in this row,
        // one either side (arrivals from them), and those active in the rows next to it.
        const auto [ownLo, ownHi] = rowSpan(current, y);
        int lo = ownLo - 1;
        int hi = ownHi + 1;
        for (const int neighbour : { y - 1, y + 1 }) {
            if (neighbour < 0 || neighbour >= height() || !rowActive(current, neighbour))
                continue;
            const auto [otherLo, otherHi] = rowSpan(current, neighbour);
            lo = std::min(lo, otherLo);
            hi = std::max(hi, otherHi);
        }
        if (waking) { // a sleeping edge source's next wavelet is due
            m_rowWake[std::size_t(y)] = kNever;
            const auto [sourcesLo, sourcesHi] = m_rowSources[std::size_t(y)];
            for (int x = sourcesLo; x < sourcesHi; ++x)
                if (m_edgeSourceOf[std::size_t(index(x, y))] >= 0)
                    m_selfActive[std::size_t(index(x, y))] = 1;
            lo = std::min(lo, sourcesLo);
            hi = std::max(hi, sourcesHi);
        }
        lo = std::max(lo, 0);
        hi = std::min(hi, width());
        int activeLo = width();
        int activeHi = 0;
        for (int x = lo; x < hi; ++x) {
            const std::size_t pe = std::size_t(index(x, y));
            if (stepPe(x, y, current) || m_published[std::size_t(next)][pe] || m_published[std::size_t(current)][pe]) {
                activeLo = std::min(activeLo, x);
                activeHi = x + 1;
            }
        }
        setRowSpan(next, y, activeLo, activeHi);
    }
}

// Per-cycle loop: one PE's cycle, run for every PE of every cycle. It stays one function because
// its phases (idle test, arrivals, injection, switch, program, publish) work on one PE's
// queue counters, slots and arbiter through pointers loaded once here, in an order the cycle fixes;
// split, each phase would take them all as arguments, and the idle test would no longer skip the rest.
bool StaticColorFabric::stepPe(int x, int y, int current)
{
    const std::int64_t pe = index(x, y);
    const int colors = m_colors;
    const std::uint64_t cycle = this->cycle();
    const int depth = m_depth;
    const std::size_t slot = std::size_t(pe * m_stride);
    std::uint8_t* count = &m_queueCount[slot];
    std::uint8_t* head = &m_queueHead[slot];
    std::uint32_t& queued = m_queuedMask[std::size_t(pe)];
    Wavelet* data = &m_queueData[std::size_t(pe * colors) * std::size_t(depth)];
    const auto append = [&](const Wavelet& wavelet) {
        const int color = wavelet.color();
        int position = head[color] + count[color];
        if (position >= depth)
            position -= depth;
        data[color * depth + position] = wavelet;
        ++count[color];
        queued |= 1u << color;
    };

    // 0. A PE with nothing queued, arriving, to send or to run does nothing this cycle: it only
    // publishes an empty state (once) and moves its arbiter on, as the full step would.
    const Wavelet* out = m_out[current].data();
    const Wavelet none {};
    const Wavelet& fromNorth = y > 0 ? out[std::size_t(pe - width()) * kDirections + South] : none;
    const Wavelet& fromSouth = y + 1 < height() ? out[std::size_t(pe + width()) * kDirections + North] : none;
    const Wavelet& fromWest = x > 0 ? out[std::size_t(pe - 1) * kDirections + East] : none;
    const Wavelet& fromEast = x + 1 < width() ? out[std::size_t(pe + 1) * kDirections + West] : none;
    PeState& state = m_pes[std::size_t(pe)];
    const int next = current ^ 1;
    // Round-robin over the colors, from a start that moves every cycle (the same at every router,
    // so that skipping an idle router changes nothing).
    const int start = int(cycle % std::uint64_t(colors));
    if (queued == 0 && !m_selfActive[std::size_t(pe)]
        && !(fromNorth.tag | fromSouth.tag | fromWest.tag | fromEast.tag)) {
        if (m_published[std::size_t(next)][std::size_t(pe)]) {
            std::fill_n(m_out[next].begin() + std::ptrdiff_t(std::size_t(pe) * kDirections), kDirections, Wavelet {});
            std::fill_n(m_occupancy[next].begin() + std::ptrdiff_t(slot), colors, 0);
            m_published[std::size_t(next)][std::size_t(pe)] = 0;
        }
        return false;
    }

    // 1. Arrivals: what the neighbours put on their links towards this PE last cycle. Their
    // senders checked our published occupancy, so there is room.
    if (fromNorth.valid())
        append(fromNorth);
    if (fromSouth.valid())
        append(fromSouth);
    if (fromWest.valid())
        append(fromWest);
    if (fromEast.valid())
        append(fromEast);

    // 2. Injection: an off-wafer edge stream and the PE's asynchronous send, one wavelet each.
    bool pending = false;
    if (!m_edgeSourceOf.empty() && m_edgeSourceOf[std::size_t(pe)] >= 0) {
        EdgeSource& source = m_edgeSources[std::size_t(m_edgeSourceOf[std::size_t(pe)])];
        if (source.next < source.stream.size() && count[source.stream[source.next].color()] < depth
            && source.due(cycle))
            append(source.stream[source.next++]);
        if (source.next < source.stream.size()) {
            // Not due next cycle: it sleeps until its row's step of the cycle it is due wakes it.
            const std::uint64_t due = source.dueCycle();
            pending = due <= cycle + 1;
            if (!pending)
                m_rowWake[std::size_t(y)] = std::min(m_rowWake[std::size_t(y)], due);
        }
    }
    SendStream& send = state.send;
    if (send.active()) {
        if (count[send.color] < depth) {
            append(Wavelet::colored(send.color, std::bit_cast<std::uint32_t>(state.f32[send.offset + send.next])));
            ++send.next;
        }
        pending = pending || send.active();
    }

    // 3. Switch: round-robin over the colors; a head moves when every port it needs (all of them
    // for a multicast) is free this cycle, every receiver has room and, for the ramp, the PE's
    // task for the color can take it now.
    std::uint8_t freePorts = 0x1f;
    Wavelet sent[kDirections] = {};
    EdgeSink* sink = m_edgeSinkOf.empty() || m_edgeSinkOf[std::size_t(pe)] < 0
        ? nullptr
        : &m_edgeSinks[std::size_t(m_edgeSinkOf[std::size_t(pe)])];
    bool stalled = false;
    bool moved = false;
    const std::uint8_t* occupancy = m_occupancy[current].data();
    const std::uint32_t all = colors == 32 ? ~0u : (1u << colors) - 1u;
    for (int i = 0; i < colors; ++i) {
        // The next non-empty queue in round-robin order from `start` (the mask is read live: a
        // task may have appended to a later color in this very loop).
        const std::uint32_t rotated = ((queued >> start) | (start ? queued << (colors - start) : 0u)) & all;
        const std::uint32_t ahead = rotated >> i;
        if (ahead == 0)
            break;
        i += std::countr_zero(ahead);
        const int color = start + i < colors ? start + i : start + i - colors;
        const Wavelet wavelet = data[color * depth + head[color]];
        const std::uint8_t ports = m_routeTx[slot + std::size_t(color)];
        bool ready = ports != 0 && (ports & freePorts) == ports;
        for (int direction = 0; ready && direction < kDirections; ++direction) {
            if (!(ports & directionBit(direction)))
                continue;
            if (sink && sink->to == direction) { // off the wafer, at the I/O's pace
                if (!sink->due(cycle)) {
                    ++m_linkStall[std::size_t(pe) * kDirections + std::size_t(direction)];
                    ready = false;
                }
                continue;
            }
            static constexpr int dx[] = { 0, 0, 1, -1 };
            static constexpr int dy[] = { -1, 1, 0, 0 };
            const std::int64_t neighbour = pe + dy[direction] * width() + dx[direction];
            const Wavelet& onLink = out[std::size_t(pe) * kDirections + std::size_t(direction)];
            const int inFlight = onLink.valid() && onLink.color() == color ? 1 : 0;
            if (occupancy[std::size_t(neighbour * m_stride + color)] + inFlight >= depth) {
                ++m_linkStall[std::size_t(pe) * kDirections + std::size_t(direction)];
                ready = false;
            }
        }
        if (ready && (ports & kRampBit)) {
            const DataTask& task = state.tasks[std::size_t(color)];
            ready = state.busyUntil <= cycle && taskReady(task)
                && (task.outColor == kNoColor || count[task.outColor] < depth);
        }
        if (!ready) {
            stalled = true;
            continue;
        }
        freePorts &= std::uint8_t(~ports);
        head[color] = std::uint8_t(head[color] + 1 == depth ? 0 : head[color] + 1);
        if (--count[color] == 0)
            queued &= ~(1u << color);
        moved = true;
        ++m_routed[std::size_t(pe)];
        for (int direction = 0; direction < kDirections; ++direction) {
            if (ports & directionBit(direction)) {
                ++m_linkWavelets[std::size_t(pe) * kDirections + std::size_t(direction)];
                if (sink && sink->to == direction)
                    sink->take(cycle, wavelet.data);
                else
                    sent[direction] = wavelet;
            }
        }
        if (ports & kRampBit) {
            const Wavelet emitted = executeTask(state, color, wavelet.data, cycle, config().simdWidth);
            if (emitted.valid())
                append(emitted);
        }
    }
    m_routerBusy[std::size_t(pe)] += moved ? 1 : 0;
    m_routerStall[std::size_t(pe)] += stalled ? 1 : 0;

    // 4. The program's next steps, now that the router has fed the PE's tasks.
    bool working = false;
    if (state.pc < state.program.size()) {
        working = advanceProgram(state, cycle);
        state.programWaiting = !working;
        if (state.programDone())
            --m_rowPrograms[std::size_t(y)].value;
    }

    // 5. Publish the next state that neighbours read. A task that completed this cycle may
    // have started a send, which keeps the row active although nothing was pending before.
    // Work of its own next cycle: a send or an edge stream to inject, a program step to run.
    const bool self = pending || working || state.send.active();
    m_selfActive[std::size_t(pe)] = self ? 1 : 0;
    bool active = self || queued != 0;
    Wavelet* nextOut = m_out[next].data();
    for (int direction = 0; direction < kDirections; ++direction) {
        nextOut[std::size_t(pe) * kDirections + std::size_t(direction)] = sent[direction];
        active = active || sent[direction].valid();
    }
    std::copy_n(count, colors, m_occupancy[next].data() + slot);
    bool published = queued != 0;
    for (const Wavelet& wavelet : sent)
        published = published || wavelet.valid();
    m_published[std::size_t(next)][std::size_t(pe)] = published ? 1 : 0;
    return active;
}

std::optional<std::string> StaticColorFabric::validateRoutes() const
{
    for (int y = 0; y < height(); ++y) {
        for (int x = 0; x < width(); ++x) {
            const std::int64_t pe = index(x, y);
            for (int color = 0; color < m_colors; ++color) {
                const auto slot = std::size_t(pe * m_stride + color);
                const int rx = m_routeRx[slot];
                if (rx == 0xff)
                    continue;
                const std::string where = "color " + std::to_string(color) + " at " + at(x, y);
                const std::uint8_t tx = m_routeTx[slot];
                for (int direction = 0; direction < kDirections; ++direction) {
                    if (!(tx & directionBit(direction)))
                        continue;
                    const int nx = x + (direction == East) - (direction == West);
                    const int ny = y + (direction == South) - (direction == North);
                    const bool sunk = !m_edgeSinkOf.empty() && m_edgeSinkOf[std::size_t(pe)] >= 0
                        && m_edgeSinks[std::size_t(m_edgeSinkOf[std::size_t(pe)])].to == direction;
                    if (sunk)
                        continue;
                    if (nx < 0 || ny < 0 || nx >= width() || ny >= height())
                        return where + " is sent " + directionName(direction) + " off the mesh";
                    if (m_routeRx[std::size_t(index(nx, ny) * m_stride + color)] != opposite(direction))
                        return where + " is sent " + directionName(direction) + " but " + at(nx, ny)
                            + " does not receive it from the " + directionName(opposite(direction));
                }
                const PeState& owner = m_pes[std::size_t(pe)];
                const bool armedLater = std::any_of(owner.program.begin(), owner.program.end(),
                    [&](const Step& step) { return step.kind == StepKind::Arm && step.color == color; });
                const bool unbound
                    = std::find(m_unbound.begin(), m_unbound.end(), std::pair { pe, color }) != m_unbound.end();
                if ((tx & kRampBit) && owner.tasks[std::size_t(color)].kind == TaskKind::None && !armedLater
                    && !unbound)
                    return where + " is delivered to the PE but no data task is bound to it";
                if (rx == kRampPort)
                    continue;
                const int nx = x + (rx == East) - (rx == West);
                const int ny = y + (rx == South) - (rx == North);
                const bool fromNeighbour = nx >= 0 && ny >= 0 && nx < width() && ny < height()
                    && (m_routeTx[std::size_t(index(nx, ny) * m_stride + color)] & directionBit(opposite(rx)));
                bool fromEdge = false;
                if (!m_edgeSourceOf.empty() && m_edgeSourceOf[std::size_t(pe)] >= 0)
                    fromEdge = m_edgeSources[std::size_t(m_edgeSourceOf[std::size_t(pe)])].from == rx;
                if (!fromNeighbour && !fromEdge)
                    return where + " is received from the " + directionName(rx) + " but nothing sends it there";
            }
            const PeState& state = m_pes[std::size_t(pe)];
            const auto rampColor = [&](int color) {
                return color >= 0 && color < m_colors && m_routeRx[std::size_t(pe * m_stride + color)] == kRampPort;
            };
            if (state.send.color != kNoColor && !rampColor(state.send.color))
                return "the send of " + at(x, y) + " uses color " + std::to_string(state.send.color)
                    + ", which is not routed from its ramp";
            for (const Step& step : state.program) {
                if (step.kind == StepKind::Send && !rampColor(step.color))
                    return "a program step of " + at(x, y) + " sends on color " + std::to_string(step.color)
                        + ", which is not routed from its ramp";
                if (step.kind == StepKind::Arm && state.armed[step.a].outColor != kNoColor
                    && !rampColor(state.armed[step.a].outColor))
                    return "a task armed by " + at(x, y) + " sends on color "
                        + std::to_string(state.armed[step.a].outColor) + ", which is not routed from its ramp";
            }
            for (const DataTask& task : state.tasks) {
                if (task.outColor != kNoColor && !rampColor(task.outColor))
                    return "a task of " + at(x, y) + " forwards on color " + std::to_string(task.outColor)
                        + ", which is not routed from its ramp";
                if (task.then == ActionKind::StartSend && !rampColor(task.thenColor))
                    return "a task of " + at(x, y) + " starts a send on color " + std::to_string(task.thenColor)
                        + ", which is not routed from its ramp";
            }
        }
    }
    return std::nullopt;
}

std::string StaticColorFabric::describeBacklog(int limit) const
{
    std::string text;
    int shown = 0;
    for (int y = 0; y < height() && shown < limit; ++y) {
        for (int x = 0; x < width() && shown < limit; ++x) {
            const std::int64_t pe = index(x, y);
            std::string here;
            for (int color = 0; color < m_colors; ++color)
                if (const int queued = m_queueCount[std::size_t(pe * m_stride + color)])
                    here += " color " + std::to_string(color) + ": " + std::to_string(queued) + " queued";
            const PeState& state = m_pes[std::size_t(pe)];
            if (state.send.active())
                here += " sending on color " + std::to_string(state.send.color) + " (" + std::to_string(state.send.next)
                    + "/" + std::to_string(state.send.length) + ")";
            if (here.empty())
                continue;
            text += (shown ? ";" : "") + std::string(" ") + at(x, y) + here;
            ++shown;
        }
    }
    return text.empty() ? "nothing queued" : text;
}

int StaticColorFabric::pendingResults() const
{
    int pending = 0;
    for (const PeState& state : m_pes)
        pending += state.pendingResults;
    return pending;
}

bool StaticColorFabric::quiescent() const
{
    if (anyRowActive())
        return false;
    for (const PeState& state : m_pes)
        if (state.send.active() || state.busyUntil > cycle())
            return false;
    for (const EdgeSource& source : m_edgeSources)
        if (source.next < source.stream.size())
            return false;
    return true;
}

std::uint64_t StaticColorFabric::digest() const
{
    StateHasher hash;
    hashClockAndCounters(hash);
    hash.vector(m_queueHead);
    hash.vector(m_queueCount);
    // Queue slots outside the live part of a ring hold stale data; only live entries count.
    for (std::int64_t pe = 0; pe < peCount(); ++pe) {
        for (int queue = 0; queue < m_colors; ++queue) {
            const auto slot = std::size_t(pe * m_stride + queue);
            const auto ring = std::size_t(pe * m_colors + queue) * std::size_t(m_depth);
            for (int i = 0; i < m_queueCount[slot]; ++i)
                hash.scalar(m_queueData[ring + std::size_t((m_queueHead[slot] + i) % m_depth)]);
        }
    }
    hash.vector(m_out[currentBuffer()]);
    hash.vector(m_occupancy[currentBuffer()]);
    for (const PeState& state : m_pes) {
        hash.vector(state.f32);
        hash.scalar(state.busyUntil);
        hash.scalar(state.busyCycles);
        hash.scalar(state.fmacs);
        hash.scalar(state.doneAt);
        hash.scalar(state.send.next);
        hash.scalar(state.pc);
        hash.vector(state.marks);
        for (const DataTask& task : state.tasks) {
            hash.scalar(task.received);
            hash.scalar(task.row);
            hash.scalar(task.blocked);
        }
    }
    return hash.result();
}

std::size_t StaticColorFabric::memoryBytes() const
{
    std::size_t bytes = sharedMemoryBytes() + m_queueData.capacity() * sizeof(Wavelet) + m_queueHead.capacity()
        + m_queueCount.capacity() + m_routeTx.capacity() + m_routeRx.capacity();
    for (int buffer = 0; buffer < 2; ++buffer)
        bytes += m_out[buffer].capacity() * sizeof(Wavelet) + m_occupancy[buffer].capacity();
    for (const PeState& state : m_pes)
        bytes += sizeof(PeState) + state.tasks.capacity() * sizeof(DataTask) + state.f32.capacity() * 4
            + state.f16.capacity() * 2 + state.program.capacity() * sizeof(Step)
            + state.armed.capacity() * sizeof(DataTask) + state.marks.capacity() * sizeof(std::uint64_t);
    return bytes + m_rowPrograms.capacity() * sizeof(RowPrograms) + m_queuedMask.capacity() * 4
        + m_selfActive.capacity() + m_published[0].capacity() + m_published[1].capacity();
}

} // namespace waferscope::core::fabric
