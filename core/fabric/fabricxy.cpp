// The synthetic-traffic hot path: one row of routers with dimension-order (X then Y) routing.
// Same cycle semantics as the static-color path in fabric.cpp (read the current buffer, update
// the own queues in place, publish into the next buffer), specialised for speed: every wavelet
// wants exactly one port, and the queues of a router are found through a bitmask of the
// non-empty ones. All state goes through restrict-qualified local pointers so that byte stores
// do not force the compiler to reload the member vectors.
#include "core/fabric/fabric.h"

#include "core/fabric/traffic.h"

#include <bit>
#include <cstring>

namespace waferscope::core::fabric {

namespace {

// Bit i set where byte i of `word` is non-zero (SWAR: no loop, no branches).
unsigned nonZeroBytes(std::uint64_t word)
{
    word |= word >> 4;
    word |= word >> 2;
    word |= word >> 1;
    word &= 0x0101010101010101ull;
    return unsigned((word * 0x0102040810204080ull) >> 56);
}

} // namespace

void Fabric::stepRowDimensionOrder(int y, const Buffer& current, Buffer& next)
{
    constexpr int kQueues = 5; // N, S, E, W input ports and the ramp
    const int width = m_width;
    const int height = m_height;
    const int depth = m_depth;
    const int stride = m_stride;
    const std::uint64_t cycle = m_cycle;
    const Wavelet* __restrict out = current.out.data();
    const std::uint8_t* __restrict occupancy = current.occupancy.data();
    Wavelet* __restrict nextOut = next.out.data();
    std::uint8_t* __restrict nextOccupancy = next.occupancy.data();
    std::uint8_t* __restrict counts = m_queueCount.data();
    std::uint8_t* __restrict heads = m_queueHead.data();
    Wavelet* __restrict queueData = m_queueData.data();
    std::uint8_t* __restrict arbiter = m_arbiter.data();
    std::uint32_t* __restrict routed = m_routed.data();
    std::uint32_t* __restrict routerBusy = m_routerBusy.data();
    std::uint32_t* __restrict routerStall = m_routerStall.data();
    std::uint32_t* __restrict linkWavelets = m_linkWavelets.data();
    std::uint32_t* __restrict linkStall = m_linkStall.data();
    TrafficGenerator* traffic = m_traffic.get();
    TrafficGenerator::RowTotals rowTotals;
    const bool measuringNow = traffic && traffic->measuring(cycle);
    const std::int64_t offset[kDirections] = { -std::int64_t(width), width, 1, -1 };
    bool rowActive = false;

    for (int x = 0; x < width; ++x) {
        const std::int64_t pe = std::int64_t(y) * width + x;
        // The router's queue fills live in one register word (byte q = queue q) while it is
        // stepped: no byte stores followed by a wide load (a store-forwarding stall).
        std::uint64_t fill = 0;
        std::memcpy(&fill, counts + pe * stride, 8);
        const auto count = [&](int queue) { return int((fill >> (8 * queue)) & 0xffu); };
        std::uint8_t* __restrict head = heads + pe * stride;
        Wavelet* __restrict data = queueData + pe * kQueues * depth;
        const auto append = [&](int queue, Wavelet wavelet) {
            int position = head[queue] + count(queue);
            position -= position >= depth ? depth : 0;
            data[queue * depth + position] = wavelet;
            fill += std::uint64_t(1) << (8 * queue);
        };

        // 1. Arrivals from the four links (room was checked by the senders).
        if (y > 0 && out[(pe - width) * kDirections + South].valid())
            append(North, out[(pe - width) * kDirections + South]);
        if (y + 1 < height && out[(pe + width) * kDirections + North].valid())
            append(South, out[(pe + width) * kDirections + North]);
        if (x > 0 && out[(pe - 1) * kDirections + East].valid())
            append(West, out[(pe - 1) * kDirections + East]);
        if (x + 1 < width && out[(pe + 1) * kDirections + West].valid())
            append(East, out[(pe + 1) * kDirections + West]);

        // 2. Generation (counted for the offered rate) and injection of the oldest packet.
        if (traffic) {
            const auto p = std::size_t(pe);
            while (traffic->generateTime[p] <= cycle) {
                rowTotals.generated += traffic->measuring(traffic->generateTime[p]) ? 1 : 0;
                traffic->generateTime[p] += traffic->gap(pe, ++traffic->generatePacket[p]);
            }
            if (traffic->headTime[p] <= cycle && count(Fabric::kRampPort) < depth) {
                int destX = 0;
                int destY = 0;
                traffic->destination(pe, traffic->headPacket[p], x, y, destX, destY);
                append(Fabric::kRampPort, Wavelet::addressed(destX, destY, std::uint32_t(traffic->headTime[p])));
                if (traffic->measuring(traffic->headTime[p])) {
                    ++rowTotals.injected;
                    rowTotals.hops += std::uint64_t(std::abs(destX - x) + std::abs(destY - y));
                }
                // The generation pass above has usually just computed this packet's time.
                const std::uint32_t packet = ++traffic->headPacket[p];
                traffic->headTime[p] = packet == traffic->generatePacket[p]
                    ? traffic->generateTime[p]
                    : traffic->headTime[p] + traffic->gap(pe, packet);
            }
        }

        // 3. Switch over the non-empty queues in round-robin order.
        const unsigned nonEmpty = nonZeroBytes(fill);
        Wavelet sent[kDirections] = {};
        unsigned freePorts = 0x1f;
        unsigned moved = 0;
        unsigned stalled = 0;
        const int start = arbiter[pe];
        unsigned order = ((nonEmpty >> start) | (nonEmpty << (kQueues - start))) & 0x1fu;
        while (order) {
            int queue = std::countr_zero(order) + start;
            order &= order - 1;
            queue -= queue >= kQueues ? kQueues : 0;
            const Wavelet wavelet = data[queue * depth + head[queue]];
            const int dx = wavelet.destX() - x;
            const int dy = wavelet.destY() - y;
            const int port = dx > 0 ? East : dx < 0 ? West : dy > 0 ? South : dy < 0 ? North : Fabric::kRampPort;
            if (!(freePorts & (1u << port))) {
                stalled = 1;
                continue;
            }
            if (port != Fabric::kRampPort) {
                const std::int64_t neighbour = pe + offset[port];
                const int onLink = out[pe * kDirections + port].valid() ? 1 : 0;
                if (occupancy[neighbour * stride + (port ^ 1)] + onLink >= depth) {
                    ++linkStall[pe * kDirections + port];
                    stalled = 1;
                    continue;
                }
                sent[port] = wavelet;
                ++linkWavelets[pe * kDirections + port];
            } else if (measuringNow) {
                ++rowTotals.ejected;
                if (traffic->measuring(wavelet.data)) {
                    ++rowTotals.latencyPackets;
                    rowTotals.latencySum += cycle - wavelet.data;
                }
            }
            freePorts &= ~(1u << port);
            head[queue] = std::uint8_t(head[queue] + 1 == depth ? 0 : head[queue] + 1);
            fill -= std::uint64_t(1) << (8 * queue);
            ++moved;
        }
        arbiter[pe] = std::uint8_t(start + 1 == kQueues ? 0 : start + 1);
        routed[pe] += moved;
        routerBusy[pe] += moved ? 1 : 0;
        routerStall[pe] += stalled;

        // 4. Publish: output registers and queue fill (one 8-byte word).
        std::memcpy(nextOut + pe * kDirections, sent, sizeof sent);
        std::memcpy(counts + pe * stride, &fill, 8);
        std::memcpy(nextOccupancy + pe * stride, &fill, 8);
        rowActive = rowActive || fill != 0 || moved != 0;
    }
    next.rowActive[std::size_t(y)] = RowFlag { std::uint8_t(rowActive ? 1 : 0) };
    if (traffic)
        traffic->rows[std::size_t(y)] += rowTotals;
}

} // namespace waferscope::core::fabric
