#pragma once

#include "core/fabric/traffic.h"
#include "core/fabric/wavelet.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace waferscope::test {

// The cycle semantics of core::fabric::XyFabric stated as plainly as possible, to check the
// fast path against: one router object per PE, a std::deque per input queue, every router and
// port visited one by one. A cycle has three phases:
//
//   1. each PE generates its packets due this cycle and injects its oldest waiting one into
//      its ramp queue if that queue is not full;
//   2. each router, looking only at queue fills as they are after phase 1, serves its non-empty
//      queues in the order (cycle % 5), (cycle % 5) + 1, ...: a head is granted its output port
//      if no queue served before it took that port and, for a link, the receiving queue holds
//      fewer than `depth` wavelets; the ramp always takes;
//   3. granted heads leave their queues and are appended to their receivers' queues one hop
//      nearer, or are ejected (and counted, in the measurement window).
//
// Thread: single-threaded; owned and used by one test.
class XyReferenceFabric {
public:
    XyReferenceFabric(int width, int height, int depth, std::unique_ptr<core::fabric::TrafficGenerator> traffic);

    void step();
    std::uint64_t cycle() const { return m_cycle; }
    const core::fabric::TrafficGenerator& traffic() const { return *m_traffic; }
    // The wavelets in input queue `port` (a Direction or the ramp) of router (x, y), oldest first.
    const std::deque<core::fabric::Wavelet>& queue(int x, int y, int port) const { return router(x, y).queues[port]; }

    // As Fabric's counters: per router, and per router and outgoing direction.
    std::vector<std::uint32_t> routed;
    std::vector<std::uint32_t> routerBusy;
    std::vector<std::uint32_t> routerStall;
    std::vector<std::uint32_t> linkWavelets;
    std::vector<std::uint32_t> linkStall;

private:
    struct Router {
        std::deque<core::fabric::Wavelet> queues[5]; // N, S, E, W, ramp
    };
    struct Move {
        int x;
        int y;
        int queue;
    };
    Router& router(int x, int y) { return m_routers[std::size_t(y * m_width + x)]; }
    const Router& router(int x, int y) const { return m_routers[std::size_t(y * m_width + x)]; }
    void inject(int x, int y);
    void arbitrate(int x, int y, std::vector<Move>& moves);
    void move(const Move& granted);

    int m_width;
    int m_height;
    int m_depth;
    std::uint64_t m_cycle = 0;
    std::vector<Router> m_routers;
    std::unique_ptr<core::fabric::TrafficGenerator> m_traffic;
};

} // namespace waferscope::test
