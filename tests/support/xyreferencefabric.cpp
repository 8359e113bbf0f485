#include "xyreferencefabric.h"

#include <cstdlib>

namespace waferscope::test {

using core::fabric::kDirections;
using core::fabric::opposite;
using core::fabric::TrafficGenerator;
using core::fabric::Wavelet;

namespace {

constexpr int kRamp = Wavelet::kRampPort;
constexpr int kStepX[] = { 0, 0, 1, -1 }; // N, S, E, W
constexpr int kStepY[] = { -1, 1, 0, 0 };

} // namespace

XyReferenceFabric::XyReferenceFabric(
    int width, int height, int depth, std::unique_ptr<core::fabric::TrafficGenerator> traffic)
    : m_width(width)
    , m_height(height)
    , m_depth(depth)
    , m_routers(std::size_t(width) * std::size_t(height))
    , m_traffic(std::move(traffic))
{
    const auto pes = std::size_t(width) * std::size_t(height);
    routed.assign(pes, 0);
    routerBusy.assign(pes, 0);
    routerStall.assign(pes, 0);
    linkWavelets.assign(pes * kDirections, 0);
    linkStall.assign(pes * kDirections, 0);
}

void XyReferenceFabric::step()
{
    for (int y = 0; y < m_height; ++y)
        for (int x = 0; x < m_width; ++x)
            inject(x, y);
    std::vector<Move> moves;
    for (int y = 0; y < m_height; ++y)
        for (int x = 0; x < m_width; ++x)
            arbitrate(x, y, moves);
    for (const Move& granted : moves)
        move(granted);
    ++m_cycle;
}

void XyReferenceFabric::inject(int x, int y)
{
    TrafficGenerator& traffic = *m_traffic;
    const auto pe = std::size_t(y * m_width + x);
    TrafficGenerator::RowTotals& totals = traffic.rows[std::size_t(y)];
    while (traffic.generateTime[pe] <= m_cycle) {
        if (traffic.measuring(traffic.generateTime[pe]))
            ++totals.generated;
        ++traffic.generatePacket[pe];
        traffic.generateTime[pe] += traffic.gap(traffic.keys[pe], traffic.generatePacket[pe]);
    }
    std::deque<Wavelet>& ramp = router(x, y).queues[kRamp];
    if (traffic.headTime[pe] > m_cycle || int(ramp.size()) >= m_depth)
        return;
    int destX = 0;
    int destY = 0;
    traffic.destination(traffic.keys[pe], std::int64_t(pe), traffic.headPacket[pe], x, y, destX, destY);
    ramp.push_back(Wavelet::dimensionOrder(x, y, destX, destY, std::uint32_t(traffic.headTime[pe])));
    if (traffic.measuring(traffic.headTime[pe])) {
        ++totals.injected;
        totals.hops += std::uint64_t(std::abs(destX - x) + std::abs(destY - y));
    }
    ++traffic.headPacket[pe];
    traffic.headTime[pe] += traffic.gap(traffic.keys[pe], traffic.headPacket[pe]);
}

void XyReferenceFabric::arbitrate(int x, int y, std::vector<Move>& moves)
{
    const auto pe = std::size_t(y * m_width + x);
    const Router& self = router(x, y);
    unsigned takenPorts = 0;
    bool moved = false;
    bool stalled = false;
    bool linkStalled[kDirections] = {};
    for (int k = 0; k < 5; ++k) {
        const int queue = int((m_cycle + std::uint64_t(k)) % 5);
        if (self.queues[queue].empty())
            continue;
        const int port = self.queues[queue].front().port();
        const unsigned portBit = 1u << port;
        if (takenPorts & portBit) {
            stalled = true;
            continue;
        }
        if (port != kRamp) {
            const Router& receiver = router(x + kStepX[port], y + kStepY[port]);
            if (int(receiver.queues[opposite(port)].size()) >= m_depth) {
                linkStalled[port] = true;
                stalled = true;
                continue;
            }
            ++linkWavelets[pe * kDirections + std::size_t(port)];
        }
        takenPorts |= portBit;
        moved = true;
        ++routed[pe];
        moves.push_back({ x, y, queue });
    }
    routerBusy[pe] += moved ? 1 : 0;
    routerStall[pe] += stalled ? 1 : 0;
    for (int direction = 0; direction < kDirections; ++direction)
        linkStall[pe * kDirections + std::size_t(direction)] += linkStalled[direction] ? 1 : 0;
}

void XyReferenceFabric::move(const Move& granted)
{
    std::deque<Wavelet>& from = router(granted.x, granted.y).queues[granted.queue];
    const Wavelet wavelet = from.front();
    from.pop_front();
    const int port = wavelet.port();
    if (port == kRamp) {
        TrafficGenerator& traffic = *m_traffic;
        if (traffic.measuring(m_cycle)) {
            TrafficGenerator::RowTotals& totals = traffic.rows[std::size_t(granted.y)];
            ++totals.ejected;
            if (traffic.measuring(wavelet.data)) {
                ++totals.latencyPackets;
                totals.latencySum += m_cycle - wavelet.data;
            }
        }
        return;
    }
    router(granted.x + kStepX[port], granted.y + kStepY[port]).queues[opposite(port)].push_back(wavelet.afterHop());
}

} // namespace waferscope::test
